"""Flood under load (issue #8): one source floods the edge while a legitimate carrier places calls.

Each scenario runs a fresh, real `sipedge serve` process (the `sip` role serves no /metrics;
`serve` is the same SIP edge plus the admin API, whose port serves the Prometheus metrics) on
core 0, with the ``[flood]`` section at its production defaults (``config.FloodSettings()``)
and ``security.unknown_source = "drop"``; the database is prepared as for the inbound ramp
(bench/sipedge_setup.py: one trunk, carrier IP 127.0.0.1/32, number +14155550100 -> the agent).
The SIPp agent listens on 127.0.0.3, not 127.0.0.1: the edge never throttles its agent's
address, and the carrier's address must not be that one.

- ``baseline``: the SIPp carrier (127.0.0.1) alone, ``--rate`` calls/s for ``--seconds``.
- ``unknown``: the same, while a flooder bound to 127.0.0.2 (outside every carrier ACL) sends
  INVITEs and OPTIONS (alternating, a new Call-ID and branch each), one run per pace of
  ``--unknown-pps`` (default 5k, 10k, 20k, 40k packets/s and as fast as it can): the highest
  pace at which the carrier's calls all succeed is the answer to issue #8's question.
- ``carrier``: the flood from the carrier's own address (127.0.0.1, another port), INVITEs to a
  number the trunk does not have, and OPTIONS: the per-source carrier budget.
- ``carrier-paced``: a carrier-address INVITE flood paced at ``--paced-pps`` (default 1,500/s,
  under the 2,000/s carrier budget and the 2,000/s INVITE admission cap).
- ``invite-cap`` (not run by default; a what-if, not the production defaults): the paced flood
  with ``flood.invite_rate`` lowered to ``--cap-rate``, to show the 503 + Retry-After cap.

The flooder is this module run with ``--flood-worker``: a plain UDP socket, pinned to core 1
with SIPp, at ``nice 10`` so the SIPp peers keep their wake-up latency; it counts what it sent
and every response it got back. Bounded by ``--seconds`` + 1 and ``--max-packets``.

Measured per scenario: the offered flood rate, what the edge did with it (the
``sipedge_flood_drops_total`` / ``sipedge_flood_bans_total`` / ``sipedge_inbound_drops_total``
deltas from /metrics; kernel drops on full UDP buffers from /proc/net/snmp), the edge's CPU
(utime+stime, % of one core) over the load window, and the carrier's SIPp SuccessfulCall /
FailedCall and INVITE->200 (tcpdump on ``lo`` when run as root, else SIPp's average).

    .venv/bin/python -m bench.flood_load                 # baseline, unknown, carrier, carrier-paced
    .venv/bin/python -m bench.flood_load --quick         # 8 s per run, unknown at 10k and max
    .venv/bin/python -m bench.flood_load --scenarios baseline,unknown,invite-cap --keep
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import (
    HOST,
    LOAD_CORE,
    BenchError,
    cpu_seconds,
    free_udp_port,
    parse_capture,
    percentile,
    process_tree,
    rss_kib,
    run_uac,
    running,
    runqueue_wait_seconds,
    sipp_uas,
    udp_rcvbuf_errors,
    wait_udp_bound,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
VENV_BIN = Path(sys.executable).parent
TARGET_CORE = "0"
AGENT_HOST = "127.0.0.3"  # not the carrier's address: the edge never throttles its agent's IP
UNKNOWN_HOST = "127.0.0.2"  # outside the trunk's ACL (127.0.0.1/32)
NUMBER = "+14155550100"  # the trunk's number (bench/sipedge_setup.py)
UNROUTED = "+19995550100"  # a number no trunk has: the edge answers 404
FLOOD_NICE = "10"
SCENARIOS = ("baseline", "unknown", "carrier", "carrier-paced", "invite-cap")
DEFAULT_SCENARIOS = ("baseline", "unknown", "carrier", "carrier-paced")
DEFAULT_UNKNOWN_PPS = (5_000, 10_000, 20_000, 40_000, 0)
QUICK_UNKNOWN_PPS = (10_000, 0)
WORKER_DRAIN = 256  # responses read (at most) between send batches


@dataclass(frozen=True)
class Scenario:
    name: str
    flood_host: str | None  # None: no flood
    kind: str = "mix"  # "mix": INVITE and OPTIONS alternating; "invite": INVITEs only
    number: str = NUMBER
    pps: int = 0  # the flood's pace in packets/s; 0: as fast as the flooder can
    flood_overrides: tuple[tuple[str, int], ...] = ()


def scenarios(name: str, args: argparse.Namespace) -> list[Scenario]:
    """One named scenario as runs, each in a fresh edge process (a ban outlives a run)."""
    if name == "baseline":
        return [Scenario("baseline", None)]
    if name == "unknown":
        return [
            Scenario(f"unknown-{_pace(pps)}", UNKNOWN_HOST, pps=pps) for pps in args.unknown_pps
        ]
    if name == "carrier":
        return [Scenario("carrier-max", HOST, number=UNROUTED)]
    paced = args.paced_pps
    if name == "carrier-paced":
        return [Scenario(f"carrier-{_pace(paced)}", HOST, "invite", UNROUTED, paced)]
    if name == "invite-cap":
        cap = (("invite_rate", args.cap_rate),)
        return [
            Scenario(f"cap{args.cap_rate}-{_pace(paced)}", HOST, "invite", UNROUTED, paced, cap)
        ]
    raise BenchError(f"unknown scenario {name!r}")


def _pace(pps: int) -> str:
    return "max" if not pps else f"{pps / 1000:g}k" if pps >= 1000 else str(pps)


@dataclass
class Result:
    scenario: str
    flood_config: dict[str, Any] = field(default_factory=dict)
    flood: dict[str, Any] = field(default_factory=dict)  # the flooder's own report
    edge: dict[str, Any] = field(default_factory=dict)  # metrics deltas, CPU, kernel drops
    carrier: dict[str, Any] = field(default_factory=dict)  # the legitimate SIPp carrier
    error: str | None = None


# --- the flooder (a child process: --flood-worker) --------------------------------------------


def flood_templates(
    kind: str, src: tuple[str, int], dst: tuple[str, int], number: str
) -> list[bytes]:
    """Request templates with three ``%d`` slots (branch, From tag, Call-ID): each packet is a
    new transaction and a new call, as a scanner or a runaway dialer sends them."""
    host, port = src
    target = f"{dst[0]}:{dst[1]}"
    common = (
        f"Via: SIP/2.0/UDP {host}:{port};branch=z9hG4bK-fl%d;rport\r\n"
        "Max-Forwards: 70\r\n"
        f'From: "flood" <sip:+15555550123@{host}>;tag=fl%d\r\n'
        "To: <sip:{to}@" + target + ">\r\n"
        f"Call-ID: flood-%d@{host}\r\n"
    )
    invite = (
        f"INVITE sip:{number}@{target} SIP/2.0\r\n"
        + common.replace("{to}", number)
        + f"CSeq: 1 INVITE\r\nContact: <sip:flood@{host}:{port}>\r\nContent-Length: 0\r\n\r\n"
    )
    options = (
        f"OPTIONS sip:{target} SIP/2.0\r\n"
        + common.replace("{to}", "ping")
        + f"CSeq: 1 OPTIONS\r\nContact: <sip:flood@{host}:{port}>\r\nAccept: application/sdp\r\n"
        "Content-Length: 0\r\n\r\n"
    )
    chosen = [invite] if kind == "invite" else [invite, options]
    return [t.encode() for t in chosen]


def flood_worker(args: argparse.Namespace) -> int:
    """Send until ``--seconds`` or ``--max-packets``; write a JSON report to ``--out``."""
    dst = (args.target.rpartition(":")[0], int(args.target.rpartition(":")[2]))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind((args.source, args.source_port))
    sock.setblocking(False)
    templates = flood_templates(args.kind, sock.getsockname(), dst, args.number)
    count = len(templates)
    statuses: Counter[str] = Counter()
    retry_after = 0
    sent = errors = 0
    pps = args.pps
    batch = 16 if pps else 128
    # Start together with the carrier (CLOCK_MONOTONIC is system-wide); bounded wait.
    delay = min(max(0.0, args.start_at - time.monotonic()), 10.0)
    time.sleep(delay)
    start = time.monotonic()
    deadline = start + args.seconds
    series: list[tuple[float, int]] = [(0.0, 0)]
    next_mark = start + 1.0
    sendto, recv = sock.sendto, sock.recv
    now = start
    while sent < args.max_packets and now < deadline:
        for _ in range(min(batch, args.max_packets - sent)):
            try:
                sendto(templates[sent % count] % (sent, sent, sent), dst)
            except OSError:  # ENOBUFS/EAGAIN on a full send queue
                errors += 1
            sent += 1
        for _ in range(WORKER_DRAIN):
            try:
                data = recv(65535)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # an ICMP error reported on the socket
                continue
            code = data[8:11].decode("ascii", "replace") if data.startswith(b"SIP/2.0 ") else "?"
            statuses[code] += 1
            if code == "503" and b"\r\nRetry-After:" in data:
                retry_after += 1
        now = time.monotonic()
        if now >= next_mark:
            series.append((round(now - start, 3), sent))
            next_mark += 1.0
        if pps:
            ahead = start + sent / pps - now
            if ahead > 0:
                time.sleep(min(ahead, 0.05))
                now = time.monotonic()
    end = time.monotonic()
    series.append((round(end - start, 3), sent))
    # Late answers (the edge catching up): read for up to a second more.
    late_deadline = end + 1.0
    while time.monotonic() < late_deadline:
        try:
            data = recv(65535)
        except (BlockingIOError, InterruptedError):
            time.sleep(0.01)
            continue
        except OSError:
            continue
        code = data[8:11].decode("ascii", "replace") if data.startswith(b"SIP/2.0 ") else "?"
        statuses[code] += 1
        if code == "503" and b"\r\nRetry-After:" in data:
            retry_after += 1
    source = "{}:{}".format(*sock.getsockname())
    sock.close()
    report = {
        "source": source,
        "kind": args.kind,
        "number": args.number,
        "paced_pps": pps or None,
        "sent": sent,
        "send_errors": errors,
        "start_mono": start,
        "end_mono": end,
        "seconds": round(end - start, 3),
        "offered_pps": round(sent / (end - start)) if end > start else None,
        "series": series,
        "responses": dict(statuses),
        "retry_after_503": retry_after,
    }
    Path(args.out).write_text(json.dumps(report))
    return 0


# --- the edge ---------------------------------------------------------------------------------


@dataclass
class Edge:
    sip_port: int
    api_port: int
    pid: int
    config: dict[str, Any]

    def pids(self) -> list[int]:
        return process_tree(self.pid)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a TOML basic string


def edge_config(
    workdir: Path, sip_port: int, api_port: int, agent_port: int, sc: Scenario
) -> dict[str, Any]:
    """bench/sipedge_setup.py's config and database, then: flood at the production defaults
    (plus the scenario's what-if overrides), unknown sources dropped, the agent on AGENT_HOST,
    the admin API (and /metrics) on loopback."""
    from bench.sipedge_setup import write_config
    from sipedge.config import FloodSettings

    path = write_config(workdir, port=sip_port, agent_port=agent_port)
    config = tomllib.loads(path.read_text())
    config["flood"] = {**FloodSettings().model_dump(), **dict(sc.flood_overrides)}
    config["security"] = {"unknown_source": "drop"}
    config["agents"] = {"endpoint": f"sip:{AGENT_HOST}:{agent_port}"}
    config["http"] = {"host": HOST, "port": api_port}
    lines = [f"# Written by bench/flood_load.py (scenario {sc.name})."]
    for section, values in config.items():
        lines.append(f"\n[{section}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in values.items())
    path.write_text("\n".join(lines) + "\n")
    return config


def scrape(api_port: int, timeout: float = 10.0) -> dict[str, float]:
    """The edge's /metrics as ``{'name{label="v"}': value}`` (samples of sipedge_* only)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://{HOST}:{api_port}/metrics", timeout=timeout) as resp:
        text = resp.read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("sipedge_") or sample.name.endswith("_created"):
                continue
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return samples


@contextlib.contextmanager
def start_edge(workdir: Path, agent_port: int, sc: Scenario) -> Iterator[Edge]:
    sip_port, api_port = free_udp_port(), free_udp_port()
    config = edge_config(workdir, sip_port, api_port, agent_port, sc)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIPEDGE_")}
    argv = [
        "taskset", "-c", TARGET_CORE, str(VENV_BIN / "sipedge"),
        "--config", str(workdir / "sipedge-bench.toml"), "serve",
    ]  # fmt: skip
    with running(argv, log=workdir / "sipedge.log", cwd=workdir, env=env) as proc:
        wait_udp_bound(sip_port, proc, 60, "sipedge serve")
        deadline = time.monotonic() + 30
        while True:
            try:
                scrape(api_port, timeout=2.0)
                break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise BenchError(
                        f"sipedge /metrics on port {api_port} unreachable: {exc}"
                    ) from exc
                time.sleep(0.2)
        yield Edge(sip_port, api_port, proc.pid, config)


def deltas(
    before: dict[str, float], after: dict[str, float], prefixes: tuple[str, ...]
) -> dict[str, float]:
    return {
        key: after[key] - before.get(key, 0.0)
        for key in sorted(after)
        if key.startswith(prefixes) and after[key] - before.get(key, 0.0)
    }


# --- one scenario -----------------------------------------------------------------------------


def run_scenario(sc: Scenario, args: argparse.Namespace, workdir: Path) -> Result:
    result = Result(sc.name)
    agent_port = free_udp_port()
    uas_argv = sipp_uas(agent_port, workdir, sc.name, host=AGENT_HOST)
    try:
        with running(uas_argv, log=workdir / "uas.out") as uas:
            wait_udp_bound(agent_port, uas, 10, "SIPp agent (uas)", host=AGENT_HOST)
            with start_edge(workdir, agent_port, sc) as edge:
                result.flood_config = edge.config["flood"]
                warm = run_uac(
                    (HOST, edge.sip_port), rate=10, calls=20, hold_ms=200, number=NUMBER,
                    workdir=workdir, name="warmup", limit=100, timeout=20,
                )  # fmt: skip
                if warm.count("SuccessfulCall(C)") == 0:
                    raise BenchError(f"no warm-up call succeeded through the edge (see {workdir})")
                time.sleep(1.0)
                measure(sc, args, workdir, edge, result)
    except BenchError as exc:
        result.error = str(exc)
        print(f"  {sc.name}: {exc}", flush=True)
    return result


def measure(
    sc: Scenario, args: argparse.Namespace, workdir: Path, edge: Edge, result: Result
) -> None:
    pids = edge.pids()
    flood_port = free_udp_port()
    pcap = workdir / "carrier.pcap"
    captured = False
    samples: list[tuple[float, float, float]] = []  # (monotonic, cpu s, run-queue wait s)

    def sample() -> None:
        samples.append((time.monotonic(), cpu_seconds(pids), runqueue_wait_seconds(pids)))

    flood_out = workdir / "flood.json"
    with contextlib.ExitStack() as children:  # stopped (by PID) in reverse order on the way out
        if shutil.which("tcpdump") and os.geteuid() == 0:
            # The carrier's side only: not the agent's leg, not the flood (the BPF filter runs
            # in the kernel: tcpdump itself never wakes up for the flood).
            bpf = (
                f"udp and port {edge.sip_port} and not host {AGENT_HOST} "
                f"and not host {UNKNOWN_HOST} and not port {flood_port}"
            )
            argv = [
                "taskset", "-c", LOAD_CORE, "tcpdump", "-i", "lo", "-n", "-s", "4096",
                "-B", "32768", "-U", "-w", str(pcap), *bpf.split(),
            ]  # fmt: skip
            children.enter_context(running(argv, log=workdir / "tcpdump.out"))
            children.callback(time.sleep, 0.5)  # the last packets reach the file first
            captured = True
            time.sleep(1.0)
        metrics_before = scrape(edge.api_port)
        rss_before = rss_kib(edge.pid)
        kernel_before = udp_rcvbuf_errors()
        start_at = time.monotonic() + 1.5
        flooder = None
        if sc.flood_host is not None:
            argv = [
                "taskset", "-c", LOAD_CORE, "nice", "-n", FLOOD_NICE, sys.executable, "-m",
                "bench.flood_load", "--flood-worker", "--source", sc.flood_host,
                "--source-port", str(flood_port), "--target", f"{HOST}:{edge.sip_port}",
                "--seconds", str(args.seconds + 1), "--max-packets", str(args.max_packets),
                "--kind", sc.kind, "--number", sc.number, "--start-at", repr(start_at),
                "--pps", str(sc.pps), "--out", str(flood_out),
            ]  # fmt: skip
            flooder = children.enter_context(running(argv, log=workdir / "flooder.out", cwd=ROOT))
        time.sleep(max(0.0, start_at - time.monotonic()))
        sample()
        calls = int(args.rate * args.seconds)
        run = run_uac(
            (HOST, edge.sip_port), rate=args.rate, calls=calls, hold_ms=args.hold_ms,
            number=NUMBER, workdir=workdir, name="carrier", limit=max(500, calls),
            timeout=args.seconds + args.hold_ms / 1000 + 40, every=sample,
        )  # fmt: skip
        sample()
        if flooder is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                flooder.wait(timeout=args.seconds + 30)
    kernel_drops = udp_rcvbuf_errors() - kernel_before
    time.sleep(1.0)
    metrics_after = scrape(edge.api_port, timeout=30.0)

    # The load window: the carrier's placing time, which the flood covers.
    window_end = samples[0][0] + args.seconds
    inside = [s for s in samples if s[0] <= window_end + 0.5]
    first, last = samples[0], inside[-1] if len(inside) > 1 else samples[-1]
    wall = last[0] - first[0]
    flood = json.loads(flood_out.read_text()) if flood_out.exists() else {}
    result.flood = {k: v for k, v in flood.items() if k not in ("start_mono", "end_mono")}
    moved = deltas(
        metrics_before,
        metrics_after,
        (
            "sipedge_flood_",
            "sipedge_inbound_drops",
            "sipedge_inbound_invites",
            "sipedge_sip_limit",
            "sipedge_call_records",
        ),
    )
    flood_drops = {
        k.split('"')[1]: int(v) for k, v in moved.items() if k.startswith("sipedge_flood_drops")
    }
    unknown_admitted = int(moved.get('sipedge_inbound_drops_total{reason="unknown_source"}', 0))
    result.edge = {
        "cpu_pct": round(100 * (last[1] - first[1]) / wall, 1) if wall > 0 else None,
        "cpu_window_s": round(wall, 2),
        "runq_wait_s": round(last[2] - first[2], 3),
        "cpu_series_pct": [
            round(100 * (b[1] - a[1]) / (b[0] - a[0]), 1)
            for a, b in itertools.pairwise(samples)
            if b[0] - a[0] > 0.5  # the first interval is short: 10 ms ticks would be noise
        ],
        "kernel_rcvbuf_drops": kernel_drops,
        "flood_drops": flood_drops,
        "bans": int(moved.get("sipedge_flood_bans_total", 0)),
        "unknown_source_drops": unknown_admitted,
        "metrics_delta": moved,
        "rss_kib_before": rss_before,
        "rss_kib_after": rss_kib(edge.pid),
    }
    if flood:
        guarded = sum(flood_drops.get(r, 0) for r in ("rate", "ban", "banned"))
        if sc.flood_host == UNKNOWN_HOST:
            # Everything the edge read from 127.0.0.2 went through the flood guard: refused
            # there (rate/ban/banned) or let through to the screen, which drops unknown sources.
            admitted = unknown_admitted
        else:
            # A carrier-address flood shares its counters with the real carrier: count, from
            # the flooder's side, the requests the edge answered (one 100 Trying per INVITE
            # transaction; a 200 per OPTIONS, as the INVITEs go to an unrouted number).
            answers = flood.get("responses", {})
            admitted = answers.get("100", 0) + (answers.get("200", 0) if sc.kind == "mix" else 0)
            # The guard's drops of that address also hold the real carrier's packets: the
            # flood's share of them is at most what the flooder sent beyond the answers.
            guarded = min(guarded, flood["sent"] - admitted)
        result.edge["flood_read_by_edge"] = guarded + admitted
        result.edge["flood_lost_in_kernel"] = flood["sent"] - guarded - admitted
        result.edge["flood_admitted"] = admitted
    ok, failed = run.count("SuccessfulCall(C)"), run.count("FailedCall(C)")
    result.carrier = {
        "rate": args.rate,
        "planned": calls,
        "placed": run.count("OutgoingCall(C)"),
        "ok": ok,
        "failed": failed,
        "success_pct": round(100 * ok / calls, 2) if calls else None,
        "retransmissions": run.count("Retransmissions(C)"),
        "wall_s": round(run.wall, 1),
        "sipp_invite_200_avg": run.final.get("ResponseTime1(C)"),
    }
    if captured and pcap.exists():
        lat = parse_capture(pcap, edge.sip_port)
        result.carrier.update(
            captured_invites=lat.calls,
            invite_200_p50_ms=_ms(percentile(lat.invite_200, 0.5)),
            invite_200_p99_ms=_ms(percentile(lat.invite_200, 0.99)),
            invite_200_max_ms=_ms(max(lat.invite_200) if lat.invite_200 else None),
        )
    _print_scenario(result)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


def _print_scenario(r: Result) -> None:
    f, e, c = r.flood, r.edge, r.carrier
    offered = f"{f.get('offered_pps', 0):,} pkt/s ({f.get('sent', 0):,} sent)" if f else "no flood"
    print(
        f"  {r.scenario}: flood {offered}; edge CPU {e.get('cpu_pct')} %, drops {e.get('flood_drops')}, "
        f"bans {e.get('bans')}, kernel drops {e.get('kernel_rcvbuf_drops')}; carrier ok "
        f"{c.get('ok')}/{c.get('planned')} failed {c.get('failed')}",
        flush=True,
    )


# --- report -----------------------------------------------------------------------------------


def _fmt(value: object, spec: str = ",") -> str:
    if value is None:
        return "-"
    if isinstance(value, int | float):
        return format(value, spec)
    return str(value)


CONTENDED = 0.1  # run-queue wait above this share of the load window: core 0 was shared


def _runq(edge: dict[str, Any]) -> str:
    """The edge's run-queue wait over the load window, ``*`` when core 0 was busy with other
    work for more than CONTENDED of it (the edge's rates and latencies then understate it)."""
    wait, window = edge.get("runq_wait_s"), edge.get("cpu_window_s")
    if wait is None or not window:
        return "-"
    return f"{wait:.1f} s{'*' if wait > CONTENDED * window else ' '}"


COLUMNS = (
    ("scenario", 14),
    ("flood pkt/s", 11),
    ("edge read", 10),
    ("admitted", 8),
    ("rate drops", 10),
    ("banned", 10),
    ("bans", 4),
    ("cap 503", 7),
    ("lost in kernel", 14),
    ("edge CPU", 8),
    ("runq-wait", 10),
    ("carrier ok", 13),
    ("ok %", 6),
    ("INV->200 p50/p99 ms", 20),
)


def table(results: list[Result]) -> str:
    """One line per run. ``edge read``: flood packets the edge took off its socket; ``lost in
    kernel``: the rest (its UDP receive buffer was full); ``admitted``: flood packets past the
    flood guard; ``banned``: drops of a banned source (+ the one that started the ban). In the
    carrier-address runs the guard's drops (rate, banned) also count the real carrier's packets,
    and ``lost in kernel`` is then a lower bound."""
    lines = [
        " ".join(
            f"{name:>{width}}" if i else f"{name:{width}}"
            for i, (name, width) in enumerate(COLUMNS)
        )
    ]
    for r in results:
        f, e, c = r.flood, r.edge, r.carrier
        d = e.get("flood_drops", {})
        cpu = e.get("cpu_pct")
        cells = [
            r.scenario,
            _fmt(f.get("offered_pps")),
            _fmt(e.get("flood_read_by_edge")),
            _fmt(e.get("flood_admitted")),
            _fmt(d.get("rate", 0) if e else None),
            _fmt(d.get("banned", 0) + d.get("ban", 0) if e else None),
            _fmt(e.get("bans")),
            _fmt(d.get("invite_cap", 0) if e else None),
            _fmt(e.get("flood_lost_in_kernel")),
            "-" if cpu is None else f"{cpu:.0f} %",
            _runq(e),
            f"{_fmt(c.get('ok'))}/{_fmt(c.get('planned'))}",
            _fmt(c.get("success_pct"), ".1f"),
            f"{_fmt(c.get('invite_200_p50_ms'), ',.1f')}/{_fmt(c.get('invite_200_p99_ms'), ',.1f')}",
        ]
        line = " ".join(
            f"{cell:>{width}}" if i else f"{cell:{width}}"
            for i, (cell, (_, width)) in enumerate(zip(cells, COLUMNS, strict=True))
        )
        lines.append(line + (f"  ERROR: {r.error}" if r.error else ""))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenarios", default=",".join(DEFAULT_SCENARIOS), help=", ".join(SCENARIOS)
    )
    parser.add_argument("--rate", type=float, default=30.0, help="carrier calls/s")
    parser.add_argument("--seconds", type=float, default=20.0, help="load per scenario (<= 60)")
    parser.add_argument("--hold-ms", type=int, default=1000, help="carrier call hold")
    parser.add_argument("--max-packets", type=int, default=20_000_000, help="flood bound")
    parser.add_argument(
        "--unknown-pps",
        default=None,
        help="unknown-source flood paces, packets/s, 0 = as fast as the flooder can (default "
        f"{','.join(map(str, DEFAULT_UNKNOWN_PPS))}; --quick: "
        f"{','.join(map(str, QUICK_UNKNOWN_PPS))})",
    )
    parser.add_argument("--paced-pps", type=int, default=1500, help="carrier-paced flood rate")
    parser.add_argument("--cap-rate", type=int, default=100, help="invite-cap: flood.invite_rate")
    parser.add_argument("--quick", action="store_true", help="8 s per scenario")
    parser.add_argument("--keep", action="store_true", help="keep logs, CSVs and captures")
    # The flooder child process.
    parser.add_argument("--flood-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--source", default=UNKNOWN_HOST, help=argparse.SUPPRESS)
    parser.add_argument("--source-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--target", default="", help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="mix", choices=("mix", "invite"), help=argparse.SUPPRESS)
    parser.add_argument("--number", default=NUMBER, help=argparse.SUPPRESS)
    parser.add_argument("--pps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    if args.unknown_pps is None:
        args.unknown_pps = QUICK_UNKNOWN_PPS if args.quick else DEFAULT_UNKNOWN_PPS
    else:
        args.unknown_pps = [int(p) for p in args.unknown_pps.split(",") if p]
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    if args.quick:
        args.seconds = min(args.seconds, 8.0)
    args.seconds = min(args.seconds, 60.0)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.flood_worker:
        return flood_worker(args)
    missing = [
        what
        for tool, what in (
            ("sipp", "sipp (apt-get install -y sip-tester)"),
            ("taskset", "taskset (util-linux)"),
        )
        if shutil.which(tool) is None
    ]
    if missing:
        print("bench: missing peers: " + "; ".join(missing), file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # finally blocks stop children
    os.sched_setaffinity(0, {int(LOAD_CORE)})  # never on the edge's core
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    load = os.getloadavg()
    print(f"flood load {stamp}; load average {load}", flush=True)
    results = []
    tmp = tempfile.mkdtemp(prefix="sipedge-flood-")
    if args.keep:
        print(f"work directory (kept): {tmp}", flush=True)
    try:
        for sc in [sc for name in args.scenarios for sc in scenarios(name, args)]:
            workdir = Path(tmp, sc.name)
            workdir.mkdir()
            print(f"== {sc.name}", flush=True)
            results.append(run_scenario(sc, args, workdir))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(table(results))
    out = RESULTS / f"flood-load-{stamp}.json"
    payload = {
        "stamp": stamp,
        "args": {
            k: v
            for k, v in vars(args).items()
            if k
            in (
                "scenarios",
                "rate",
                "seconds",
                "hold_ms",
                "max_packets",
                "paced_pps",
                "unknown_pps",
                "cap_rate",
                "quick",
            )
        },
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
        "results": [asdict(r) for r in results],
    }
    out.write_text(json.dumps(payload, indent=2))
    print(f"\nresults: {out}")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
