"""Soak: a bounded mix of every way an inbound call ends, then nothing may be left behind.

Never part of the test suite (``tests/sip/test_soak_short.py`` runs a few seconds of the same
mix). Loopback only. One in-process ``SipEdge`` per mix member (the edge has one agent
endpoint, and each member needs its own SIPp agent behaviour), all on this process's event
loop, so the memory and leftover checks cover every call of the mix:

| member      | carrier (SIPp uac)                   | agent (SIPp uas)          | ends with            |
|-------------|--------------------------------------|---------------------------|----------------------|
| answered    | uac-answered-expect-200.xml          | uas-answer-wait-bye.xml   | carrier BYE          |
| agent_bye   | uac-agent-hangs-up-expect-200.xml    | uas-agent-bye.xml         | agent BYE            |
| cancel      | uac-cancel-expect-487.xml            | uas-ring-cancel.xml       | CANCEL, 487          |
| agent_503   | uac-agent-down-expect-503.xml        | uas-answer-503.xml        | agent failure, 503   |
| no_ack      | uac-no-ack-expect-200.xml            | uas-answer-wait-bye.xml   | no ACK: BYE at 64*T1 |
| lossy       | uac-answered-expect-200.xml -lost N  | uas-answer-wait-bye.xml -lost N | retransmissions |

At the end (after the RFC timers ran out): every trunk's channel count is zero, the transaction
layers hold no transaction and no timer, no call is live, each edge wrote one call record per
call its carrier placed, and after ``gc.collect()`` the number of live Python objects and the
RSS are within a tolerance of their values after a warm-up (the object count is the sharp
signal: one object leaked per call shows as thousands; RSS also holds the allocator's arenas
from the soak's peak of live transactions, several MiB that do not grow with the call count).
Exit code 1 on any leftover (failed SIPp calls are reported, and fail
the run only with ``--strict``), 2 when sipp is missing.

    .venv/bin/python -m bench.soak --quick          # ~20 s of load
    .venv/bin/python -m bench.soak                  # 120 s at 50 calls/s
    .venv/bin/python -m bench.soak --rate 60 --duration 300 --agent-transport tcp
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import shutil
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sipedge.config import Settings
from sipedge.edge.channels import ChannelLimiter
from sipedge.edge.snapshot import AgentView, NumberView, RoutingSnapshot, TrunkView, build_snapshot
from sipedge.runtime.edge_app import SipEdge
from sipedge.runtime.ports import CallRecordEvent
from sipedge.sip.memo import clear_memos

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "sipp_scenarios"
RESULTS = ROOT / "bench" / "results"
HOST = "127.0.0.1"
NUMBER = "+14155550100"
SIPP = shutil.which("sipp")

# Small timers so Timers B/F/H/J/L/M (64*T1 = 6.4 s) and I/K (T4) run out soon after the load.
# Timer D stays >= 32 s on UDP (RFC 3261 §17.1.1.2): the drain waits for it unless the agent
# leg runs over TCP (Timer D = 0).
T1, T2, T4 = 0.1, 0.8, 1.0
TIMER_D = 32.0


@dataclass(frozen=True)
class Member:
    name: str
    carrier: str
    agent: str
    lossy: bool = False


MIX = (
    Member("answered", "uac-answered-expect-200.xml", "uas-answer-wait-bye.xml"),
    Member("agent_bye", "uac-agent-hangs-up-expect-200.xml", "uas-agent-bye.xml"),
    Member("cancel", "uac-cancel-expect-487.xml", "uas-ring-cancel.xml"),
    Member("agent_503", "uac-agent-down-expect-503.xml", "uas-answer-503.xml"),
    Member("no_ack", "uac-no-ack-expect-200.xml", "uas-answer-wait-bye.xml"),
    Member("lossy", "uac-answered-expect-200.xml", "uas-answer-wait-bye.xml", lossy=True),
)


@dataclass
class Records:
    """Counts call records by (final code, decided_by); keeps none (no memory of its own)."""

    outcomes: Counter[str] = field(default_factory=Counter)

    def record(self, event: CallRecordEvent) -> None:
        self.outcomes[f"{event.final_sip_code}/{event.decided_by}"] += 1


class _NoActivity:
    def call_crossed(self, **_: object) -> None:
        return None

    def call_outcome(self, **_: object) -> None:
        return None


@dataclass
class _Snapshots:
    current: RoutingSnapshot


@dataclass
class Lane:
    """One mix member: its edge, its limiter and records, its SIPp agent port."""

    member: Member
    edge: SipEdge
    limiter: ChannelLimiter
    records: Records
    agent_port: int


@dataclass
class SippOutcome:
    returncode: int | None
    stats: dict[str, str]

    def count(self, column: str) -> int:
        try:
            return int(self.stats.get(column, "0"))
        except ValueError:
            return 0


def free_port(kind: str = "udp") -> int:
    """A port on 127.0.0.1 free right now (for UDP and TCP both when ``kind`` is "tcp")."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((HOST, 0))
            port = int(udp.getsockname()[1])
            if kind == "udp":
                return port
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((HOST, port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no free port")


def snapshot() -> RoutingSnapshot:
    trunk = TrunkView(
        id="trunk-1",
        channels=100_000,
        transport="udp",
        codecs=("PCMA", "PCMU"),
        default_inbound_agent_id=None,
        cidrs=(f"{HOST}/32",),
    )
    numbers = [NumberView("number-1", "trunk-1", NUMBER, NUMBER[1:], agent_id="agent-1")]
    return build_snapshot([trunk], numbers, [AgentView("agent-1")], version=1)


def settings(agent_port: int, agent_transport: str, t1: float = T1) -> Settings:
    suffix = ";transport=tcp" if agent_transport == "tcp" else ""
    base = Settings.model_validate(
        {
            "sip": {"host": HOST, "port": 5060, "t1": t1, "t2": max(T2, t1), "t4": T4},
            "agents": {"endpoint": f"sip:{HOST}:{agent_port}{suffix}"},
            "security": {"unknown_source": "drop"},
            "flood": {"carrier_rate": 0, "invite_rate": 0},  # 0: off; the soak measures leaks
        }
    )
    # Port 0 (ephemeral) is not a valid setting, but SipEdge binds it (as the tests do).
    return base.model_copy(update={"sip": base.sip.model_copy(update={"port": 0})})


@contextlib.asynccontextmanager
async def lanes(
    members: tuple[Member, ...], agent_transport: str, t1: float = T1
) -> AsyncIterator[list[Lane]]:
    """Start one SipEdge per member; stopped on exit whatever happened."""
    started: list[Lane] = []
    try:
        for member in members:
            agent_port = free_port(agent_transport)
            limiter, records = ChannelLimiter(), Records()
            edge = SipEdge(
                settings(agent_port, agent_transport, t1),
                snapshots=_Snapshots(snapshot()),
                limiter=limiter,
                records=records,
                activity=_NoActivity(),
            )
            await edge.start()
            started.append(Lane(member, edge, limiter, records, agent_port))
        yield started
    finally:
        for lane in started:
            await lane.edge.stop()


# --- SIPp --------------------------------------------------------------------------------------


def read_stat_csv(path: Path) -> dict[str, str]:
    """The last row of a SIPp ``-stf`` CSV as {column: value}."""
    if not path.exists():
        return {}
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    if len(lines) < 2:
        return {}
    return dict(zip(lines[0].split(";"), lines[-1].split(";"), strict=False))


@contextlib.asynccontextmanager
async def sipp(
    args: list[str], workdir: Path, tag: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``sipp <args>`` with its statistics in ``<workdir>/<tag>.csv``; killed on exit."""
    assert SIPP is not None
    with open(workdir / f"{tag}.out", "wb") as out:
        proc = await asyncio.create_subprocess_exec(
            SIPP,
            *args,
            "-nostdin",
            "-trace_stat",
            "-fd",
            "1",
            "-stf",
            str(workdir / f"{tag}.csv"),
            "-trace_err",
            "-error_file",
            str(workdir / f"{tag}-errors.log"),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            cwd=workdir,
        )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def wait_bound(port: int, kind: str, timeout: float = 5.0) -> None:
    """Until something listens on 127.0.0.1:``port`` (from /proc/net: no probe traffic)."""
    table = "/proc/net/tcp" if kind == "tcp" else "/proc/net/udp"
    needle = f"0100007F:{port:04X}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(table, encoding="ascii") as fh:
            for line in fh.readlines()[1:]:
                cols = line.split()
                if cols[1] == needle and (kind != "tcp" or cols[3] == "0A"):
                    return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"nothing bound to {kind} port {port}")


async def run_lane(
    lane: Lane,
    *,
    calls: int,
    rate: float,
    loss: int,
    agent_transport: str,
    workdir: Path,
    tag: str,
    recv_timeout: float = 20.0,
) -> tuple[SippOutcome, SippOutcome]:
    """The lane's SIPp agent, then its carrier placing ``calls`` at ``rate``; both bounded.
    SIPp's ``-lost`` also drops TCP messages, which TCP never loses: over a TCP agent leg only
    the (UDP) carrier loses packets."""
    member = lane.member
    lost = ["-lost", str(loss)] if member.lossy and loss else []
    agent_lost = lost if agent_transport == "udp" else []
    agent_args = [
        "-sf", str(SCENARIOS / member.agent), "-i", HOST, "-p", str(lane.agent_port),
        "-t", "t1" if agent_transport == "tcp" else "u1", "-m", str(calls),
        "-recv_timeout", str(int(recv_timeout * 1000)), *agent_lost,
    ]  # fmt: skip
    carrier_args = [
        "-sf", str(SCENARIOS / member.carrier), f"{HOST}:{lane.edge.address[1]}",
        "-i", HOST, "-p", str(free_port()), "-t", "u1", "-s", NUMBER,
        "-m", str(calls), "-r", f"{rate:g}", "-rp", "1000", "-l", str(max(50, int(rate * 20))),
        "-recv_timeout", str(int(recv_timeout * 1000)), *lost,
    ]  # fmt: skip
    budget = calls / rate + 60.0
    async with sipp(agent_args, workdir, f"{tag}-{member.name}-agent") as agent:
        await wait_bound(lane.agent_port, agent_transport)
        async with sipp(carrier_args, workdir, f"{tag}-{member.name}-carrier") as carrier:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(carrier.wait(), budget)
            carrier_rc = carrier.returncode
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(agent.wait(), recv_timeout + 2.0)  # the last BYEs
        agent_rc = agent.returncode
    return (
        SippOutcome(carrier_rc, read_stat_csv(workdir / f"{tag}-{member.name}-carrier.csv")),
        SippOutcome(agent_rc, read_stat_csv(workdir / f"{tag}-{member.name}-agent.csv")),
    )


# --- leftovers ---------------------------------------------------------------------------------


def leftovers(lanes_: list[Lane]) -> dict[str, dict[str, int]]:
    """What each lane still holds: live calls, channels in use, transactions, timers."""
    out: dict[str, dict[str, int]] = {}
    for lane in lanes_:
        layer = lane.edge._layer  # the transaction layer: read-only introspection
        assert layer is not None
        out[lane.member.name] = {
            "active_calls": lane.edge.active_calls,
            "channels": lane.limiter.active("trunk-1"),
            "server_tx": layer.server_count,
            "client_tx": layer.client_count,
            "timers": layer.timer_count,
        }
    return out


def is_clean(left: dict[str, dict[str, int]]) -> bool:
    return all(v == 0 for counts in left.values() for v in counts.values())


async def drain(lanes_: list[Lane], timeout: float) -> tuple[float, dict[str, dict[str, int]]]:
    """Wait until nothing is left (the RFC timers expire), or ``timeout``; (waited, leftovers)."""
    start = time.monotonic()
    left = leftovers(lanes_)
    while not is_clean(left) and time.monotonic() - start < timeout:
        await asyncio.sleep(0.25)
        left = leftovers(lanes_)
    return time.monotonic() - start, left


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def settle_memory() -> tuple[int, int]:
    """(RSS KiB, live Python objects) after a full collection, the parsers' memo tables emptied
    (bounded, cleared when full: how full they are would swing the count by thousands)."""
    clear_memos()
    gc.collect()
    gc.collect()
    return rss_kib(), len(gc.get_objects())


# --- the run -----------------------------------------------------------------------------------


@dataclass
class Report:
    rate_per_member: float
    duration: float
    agent_transport: str
    loss_percent: int
    members: dict[str, dict[str, object]]
    leftovers: dict[str, dict[str, int]]
    drain_seconds: float
    load_seconds: float
    rss_baseline_kib: int
    rss_after_kib: int
    objects_baseline: int
    objects_after: int
    rss_tolerance_kib: int
    objects_tolerance: int
    problems: list[str]

    @property
    def leaked(self) -> bool:
        return bool(self.problems)


async def phase(
    lanes_: list[Lane],
    *,
    calls: int,
    rate: float,
    loss: int,
    agent_transport: str,
    workdir: Path,
    tag: str,
    recv_timeout: float = 20.0,
) -> dict[str, tuple[SippOutcome, SippOutcome]]:
    results = await asyncio.gather(
        *(
            run_lane(
                lane,
                calls=calls,
                rate=rate,
                loss=loss,
                agent_transport=agent_transport,
                workdir=workdir,
                tag=tag,
                recv_timeout=recv_timeout,
            )
            for lane in lanes_
        )
    )
    return {lane.member.name: r for lane, r in zip(lanes_, results, strict=True)}


async def soak(
    *,
    rate: float,
    duration: float,
    loss: int = 2,
    agent_transport: str = "udp",
    warmup_calls: int = 20,
    rss_tolerance_kib: int = 16 * 1024,
    objects_tolerance: int = 500,
    members: tuple[Member, ...] = MIX,
    t1: float = T1,
    recv_timeout: float = 20.0,
    workdir: Path,
) -> Report:
    """Warm up, measure the baseline, run ``duration`` seconds at ``rate`` calls/s per member,
    drain, and compare. ``rate`` is per member: the total offered rate is rate * len(members)."""
    calls = max(1, round(rate * duration))
    drain_timeout = (0.0 if agent_transport == "tcp" else TIMER_D) + 64 * t1 + 15.0
    problems: list[str] = []
    async with lanes(members, agent_transport, t1) as lanes_:
        await phase(
            lanes_,
            calls=warmup_calls,
            rate=min(rate, 10.0),
            loss=0,
            agent_transport=agent_transport,
            workdir=workdir,
            tag="warmup",
            recv_timeout=recv_timeout,
        )
        _, warm_left = await drain(lanes_, drain_timeout)
        if not is_clean(warm_left):
            problems.append(f"leftovers after the warm-up: {warm_left}")
        before = {lane.member.name: Counter(lane.records.outcomes) for lane in lanes_}
        rss_base, objects_base = settle_memory()

        started = time.monotonic()
        results = await phase(
            lanes_,
            calls=calls,
            rate=rate,
            loss=loss,
            agent_transport=agent_transport,
            workdir=workdir,
            tag="soak",
            recv_timeout=recv_timeout,
        )
        load_seconds = time.monotonic() - started
        drained, left = await drain(lanes_, drain_timeout)
        rss_after, objects_after = settle_memory()

        report_members: dict[str, dict[str, object]] = {}
        for lane in lanes_:
            name = lane.member.name
            carrier, agent = results[name]
            placed = carrier.count("OutgoingCall(C)")
            codes = dict(lane.records.outcomes - before[name])
            records = sum(codes.values())
            report_members[name] = {
                "placed": placed,
                "carrier_ok": carrier.count("SuccessfulCall(C)"),
                "carrier_failed": carrier.count("FailedCall(C)"),
                "carrier_retransmissions": carrier.count("Retransmissions(C)"),
                "agent_ok": agent.count("SuccessfulCall(C)"),
                "agent_failed": agent.count("FailedCall(C)"),
                "carrier_rc": carrier.returncode,
                "agent_rc": agent.returncode,
                "records": records,
                "record_outcomes": codes,
            }
            if placed != calls:
                problems.append(f"{name}: the carrier placed {placed} of {calls} calls")
            if records != placed:
                problems.append(f"{name}: {records} call records for {placed} calls placed")
    if not is_clean(left):
        problems.append(f"leftovers after {drained:.1f} s: {left}")
    if objects_after - objects_base > objects_tolerance:
        problems.append(
            f"{objects_after - objects_base} more live Python objects "
            f"(tolerance {objects_tolerance})"
        )
    if rss_after - rss_base > rss_tolerance_kib:
        problems.append(f"RSS grew {rss_after - rss_base} KiB (tolerance {rss_tolerance_kib} KiB)")
    return Report(
        rate_per_member=rate,
        duration=duration,
        agent_transport=agent_transport,
        loss_percent=loss,
        members=report_members,
        leftovers=left,
        drain_seconds=round(drained, 2),
        load_seconds=round(load_seconds, 2),
        rss_baseline_kib=rss_base,
        rss_after_kib=rss_after,
        objects_baseline=objects_base,
        objects_after=objects_after,
        rss_tolerance_kib=rss_tolerance_kib,
        objects_tolerance=objects_tolerance,
        problems=problems,
    )


def render(report: Report) -> str:
    lines = [
        f"soak: {report.rate_per_member:g} calls/s per member x {len(report.members)} members "
        f"= {report.rate_per_member * len(report.members):g} calls/s, "
        f"{report.duration:g} s planned, load took {report.load_seconds} s; "
        f"agent leg {report.agent_transport}; lossy member -lost {report.loss_percent}%",
        f"{'member':<10} {'placed':>7} {'ok':>7} {'failed':>7} {'retrans':>8} "
        f"{'agent ok':>9} {'agent fail':>10} {'records':>8}  outcomes",
    ]
    for name, m in report.members.items():
        lines.append(
            f"{name:<10} {m['placed']:>7} {m['carrier_ok']:>7} {m['carrier_failed']:>7} "
            f"{m['carrier_retransmissions']:>8} {m['agent_ok']:>9} {m['agent_failed']:>10} "
            f"{m['records']:>8}  {m['record_outcomes']}"
        )
    total = sum(int(m["placed"]) for m in report.members.values())  # type: ignore[call-overload]
    failed = sum(int(m["carrier_failed"]) for m in report.members.values())  # type: ignore[call-overload]
    lines += [
        f"total calls placed {total}, carrier-side failed {failed}",
        f"leftovers after {report.drain_seconds} s drain: {report.leftovers}",
        f"RSS baseline {report.rss_baseline_kib} KiB -> after {report.rss_after_kib} KiB "
        f"({report.rss_after_kib - report.rss_baseline_kib:+d} KiB, tolerance "
        f"{report.rss_tolerance_kib} KiB); Python objects {report.objects_baseline} -> "
        f"{report.objects_after} ({report.objects_after - report.objects_baseline:+d}, "
        f"tolerance {report.objects_tolerance})",
        "LEAK: " + "; ".join(report.problems) if report.problems else "no leftovers: OK",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rate", type=float, default=50.0, help="total calls/s (default 50)")
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--quick", action="store_true", help="20 s of load")
    parser.add_argument("--loss", type=int, default=2, help="SIPp -lost %% for the lossy member")
    parser.add_argument("--agent-transport", choices=("udp", "tcp"), default="udp")
    parser.add_argument("--rss-tolerance-mib", type=float, default=16.0)
    parser.add_argument("--objects-tolerance", type=int, default=500)
    parser.add_argument("--strict", action="store_true", help="failed SIPp calls fail the run")
    parser.add_argument("--keep", action="store_true", help="keep the SIPp work directory")
    args = parser.parse_args(argv)
    if SIPP is None:
        print("sipp not installed (Debian package sip-tester)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    duration = 20.0 if args.quick else args.duration
    workdir = Path(tempfile.mkdtemp(prefix="sipedge-soak-"))
    try:
        report = asyncio.run(
            soak(
                rate=args.rate / len(MIX),
                duration=duration,
                loss=args.loss,
                agent_transport=args.agent_transport,
                rss_tolerance_kib=int(args.rss_tolerance_mib * 1024),
                objects_tolerance=args.objects_tolerance,
                workdir=workdir,
            )
        )
    finally:
        if args.keep:
            print(f"work directory: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(render(report))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"soak-{stamp}.json"
    out.write_text(json.dumps(report.__dict__, indent=2, default=str))
    print(f"results: {out}")
    failed = sum(int(m["carrier_failed"]) for m in report.members.values())  # type: ignore[call-overload]
    if report.leaked:
        return 1
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
