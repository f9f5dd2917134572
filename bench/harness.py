"""Process, SIPp, /proc and pcap helpers for bench/inbound_ramp.py (loopback only).

Every process started here is stopped by its own PID in a ``finally`` (never by name), and every
wait is bounded.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
UAC = SCENARIOS / "uac-bench.xml"
UAS = SCENARIOS / "uas-bench.xml"
CLK_TCK = os.sysconf("SC_CLK_TCK")
LOAD_CORE = "1"  # SIPp, tcpdump and py-spy; the system under test gets core 0


class BenchError(RuntimeError):
    """A benchmark could not run (a peer is missing, a process did not start...)."""


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def udp_bound(port: int, host: str = HOST) -> bool:
    # /proc/net/udp: the IPv4 address as the host-order hex of its network-order bytes.
    want = f"{socket.inet_aton(host)[::-1].hex().upper()}:{port:04X}"
    with open("/proc/net/udp") as table:
        return any(line.split()[1] == want for line in table.readlines()[1:])


def wait_udp_bound(
    port: int, proc: subprocess.Popen[bytes], timeout: float, what: str, host: str = HOST
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if udp_bound(port, host):
            return
        if proc.poll() is not None:
            raise BenchError(f"{what} exited with code {proc.returncode} before binding {port}")
        time.sleep(0.05)
    raise BenchError(f"{what} did not bind {host}:{port} within {timeout:.0f} s")


def stop(proc: subprocess.Popen[bytes] | None, grace: float = 5.0) -> None:
    """SIGTERM the process by PID, then SIGKILL if it has not exited within ``grace``."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)


@contextlib.contextmanager
def running(
    argv: Sequence[str], *, log: Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
        )
        try:
            yield proc
        finally:
            stop(proc)


# --- /proc ------------------------------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Kamailio forks its workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, ()))
    return tree


def cpu_seconds(pids: Sequence[int]) -> float:
    """utime + stime of the processes, seconds."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def runqueue_wait_seconds(pids: Sequence[int]) -> float:
    """Time the processes' threads were runnable but waiting for a CPU (other load on the
    pinned core): the second field of /proc/<pid>/task/<tid>/schedstat."""
    total = 0
    for pid in pids:
        tids: list[str] = []
        with contextlib.suppress(OSError):
            tids = os.listdir(f"/proc/{pid}/task")
        for tid in tids:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/schedstat") as stat:
                total += int(stat.read().split()[1])
    return total / 1e9


def memory_kib(pids: Sequence[int]) -> float:
    """Sum of PSS over the processes (= RSS minus shared pages' other users; a multi-process
    server such as Kamailio is not counted once per worker for its shared memory)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
    return float(total)


def udp_rcvbuf_errors() -> int:
    """The kernel's count of datagrams dropped on full UDP receive buffers (all sockets)."""
    with open("/proc/net/snmp") as snmp:
        rows = [line.split() for line in snmp if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def rss_kib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return float(line.split()[1])
    return 0.0


# --- SIPp -------------------------------------------------------------------------------------


@dataclass
class SippRun:
    returncode: int
    wall: float
    final: dict[str, str]
    periodic: list[dict[str, str]] = field(default_factory=list)

    def count(self, name: str) -> int:
        return int(self.final.get(name, "0") or 0)


def sipp_uas(port: int, workdir: Path, name: str, host: str = HOST) -> list[str]:
    return [
        "taskset", "-c", LOAD_CORE, "sipp", "-sf", str(UAS), "-i", host, "-p", str(port),
        "-nostdin", "-trace_err", "-error_file", str(workdir / f"{name}-uas-errors.log"),
    ]  # fmt: skip


def run_uac(
    target: tuple[str, int],
    *,
    rate: float,
    calls: int,
    hold_ms: int,
    number: str,
    workdir: Path,
    name: str,
    limit: int,
    timeout: float,
    every: Callable[[], None] | None = None,
) -> SippRun:
    """Run the SIPp carrier to completion (bounded by ``timeout``) and read its statistics;
    ``every`` is called about once a second meanwhile."""
    scenario = workdir / f"uac-bench-{hold_ms}.xml"
    if not scenario.exists():
        scenario.write_text(UAC.read_text().replace("HOLD_MS", str(hold_ms)))
    stats = workdir / f"{name}.csv"
    stats.unlink(missing_ok=True)
    argv = [
        "taskset", "-c", LOAD_CORE, "sipp", "-sf", str(scenario), f"{target[0]}:{target[1]}",
        "-i", HOST, "-p", str(free_udp_port()), "-s", number,
        "-r", f"{rate:g}", "-m", str(calls), "-l", str(limit),
        "-recv_timeout", "5000", "-timeout", f"{int(timeout)}s", "-nostdin",
        "-trace_stat", "-stf", str(stats), "-fd", "1",
        "-trace_err", "-error_file", str(workdir / f"{name}-errors.log"),
    ]  # fmt: skip
    started = time.monotonic()
    with open(workdir / f"{name}.out", "wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            deadline = started + timeout + 10
            while proc.poll() is None and time.monotonic() < deadline:
                if every is not None:
                    every()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)
        finally:
            stop(proc)
    wall = time.monotonic() - started
    rows: list[dict[str, str]] = []
    if stats.exists():
        with open(stats, newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter=";"))
    if not rows:
        raise BenchError(f"SIPp wrote no statistics for {name} (see {workdir / (name + '.out')})")
    return SippRun(proc.returncode if proc.returncode is not None else -9, wall, rows[-1], rows)


# --- loopback capture -------------------------------------------------------------------------

_CALL_ID = re.compile(rb"\r\n(?:Call-ID|i)\s*:\s*([^\r\n]+)", re.IGNORECASE)
_CSEQ = re.compile(rb"\r\nCSeq\s*:\s*\d+\s+([A-Za-z]+)", re.IGNORECASE)


@dataclass
class Latencies:
    invite_100: list[float]
    invite_200: list[float]
    calls: int


def parse_capture(path: Path, port: int) -> Latencies:
    """INVITE -> first 100 and INVITE -> first 200 (per Call-ID), from a pcap of ``lo`` holding
    the carrier side of ``port``: requests *to* ``port``, responses *from* it."""
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == 0xA1B2C3D4:
        endian, scale = "<", 1e-6
    elif magic == 0xA1B23C4D:
        endian, scale = "<", 1e-9
    else:
        raise BenchError(f"{path}: not a little-endian pcap file")
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    link_len = {1: 14, 0: 4, 113: 16, 276: 20}.get(linktype)
    if link_len is None:
        raise BenchError(f"{path}: unsupported link type {linktype}")
    invites: dict[bytes, float] = {}
    trying: dict[bytes, float] = {}
    answered: dict[bytes, float] = {}
    offset = 24
    while offset + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack_from(endian + "IIII", data, offset)
        packet = data[offset + 16 : offset + 16 + caplen]
        offset += 16 + caplen
        when = sec + frac * scale
        ip = packet[link_len:]
        if len(ip) < 28 or ip[0] >> 4 != 4 or ip[9] != 17:
            continue
        udp = ip[(ip[0] & 0x0F) * 4 :]
        sport, dport = struct.unpack_from("!HH", udp, 0)
        payload = udp[8:]
        call_id = _CALL_ID.search(payload)
        cseq = _CSEQ.search(payload)
        if call_id is None or cseq is None or cseq.group(1).upper() != b"INVITE":
            continue
        key = call_id.group(1).strip()
        if dport == port and payload.startswith(b"INVITE "):
            invites.setdefault(key, when)
        elif sport == port and payload.startswith(b"SIP/2.0 100"):
            trying.setdefault(key, when)
        elif sport == port and payload.startswith(b"SIP/2.0 200"):
            answered.setdefault(key, when)
    return Latencies(
        invite_100=[trying[k] - t for k, t in invites.items() if k in trying],
        invite_200=[answered[k] - t for k, t in invites.items() if k in answered],
        calls=len(invites),
    )


def percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]
