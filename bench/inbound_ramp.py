"""Inbound call load bench: sipedge next to SIPp-direct, Kamailio and the sippy B2BUA.

For each target, in one run, with the same SIPp scenarios (bench/scenarios/) and pinning
(target on core 0, SIPp, tcpdump and py-spy on core 1):

1. latency at each of ``--latency-rates`` (100 and 200 calls/s), right after a short warm-up
   (before the ramp: a failed step's transactions time out for 32 s after it): INVITE->100 and
   INVITE->200 from a tcpdump capture of the carrier side on ``lo`` (SIPp's own timer ticks in
   ~4 ms steps);
2. ramp: bounded steps of ``--step-seconds`` at increasing rates until a step fails (>= 0.1 %
   failed calls, retransmissions >= 0.5 % of calls or growing, or a backlog: the calls took
   more than 3 s longer than the rate and hold allow); the highest passing rate is reported with
   the CPU the target used per call in that step (/proc utime+stime);
3. memory: ``--held-calls`` calls held ``--hold-seconds`` at once; PSS delta / calls, and the
   PSS after they end;
4. sipedge only: py-spy profiles at its ramp limit, once the failed steps' transactions are
   gone (flame graph SVG and collapsed stacks).

sipedge runs as the real `sipedge sip` process against a throwaway SQLite database prepared
through the admin API (bench/sipedge_setup.py).

    .venv/bin/python -m bench.inbound_ramp                        # everything (make bench)
    .venv/bin/python -m bench.inbound_ramp --targets sipedge --rates 100,200 --quick
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import (
    HOST,
    LOAD_CORE,
    BenchError,
    cpu_seconds,
    free_udp_port,
    memory_kib,
    parse_capture,
    percentile,
    process_tree,
    run_uac,
    running,
    runqueue_wait_seconds,
    sipp_uas,
    stop,
    udp_rcvbuf_errors,
    wait_udp_bound,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
VENV_BIN = Path(sys.executable).parent
NUMBER = "+14155550100"
TARGETS = ("sipedge", "direct", "kamailio", "sippy", "sipedge-gcfreeze")
DEFAULT_TARGETS = TARGETS
# The what-if variant: the same `sipedge sip`, with the start-up heap (imports of FastAPI,
# SQLAlchemy, pydantic...) moved to the permanent generation before the loop starts, so the
# cyclic GC stops rescanning it. It measures a recommendation; sipedge itself does not do this yet.
DRAIN_SECONDS = 40.0  # after the held calls end: Timer J (32 s) and the wait-record sweep
GC_FREEZE_MAIN = (
    "import gc, sys; import sipedge.runtime.serve; from sipedge.cli import main; "
    "gc.collect(); gc.freeze(); sys.exit(main(sys.argv[1:]))"
)
DEFAULT_RATES = (50, 100, 150, 200, 300, 400, 500, 600, 800, 1000, 1500, 2000, 3000, 4000, 6000)
TARGET_CORE = "0"
RUN = {"stamp": "manual"}  # the UTC stamp of this run, set by main(); names the result files


@dataclass
class Step:
    rate: float
    calls: int
    ok_calls: int
    failed: int
    retransmissions: int
    wall: float
    cpu_s: float | None
    passed: bool
    why: str = ""
    rcvbuf_drops: int = 0  # kernel UDP drops (full receive buffers) during the step, system-wide
    runqueue_wait_s: float | None = None  # target runnable but not running (other load on core 0)

    @property
    def cpu_us_per_call(self) -> float | None:
        if self.cpu_s is None or not self.ok_calls:
            return None
        return self.cpu_s / self.ok_calls * 1e6


@dataclass
class Result:
    target: str
    steps: list[Step] = field(default_factory=list)
    max_rate: float | None = None
    cpu_us_per_call: float | None = None
    latency_rate: float | None = None
    latency: dict[str, float | None] = field(default_factory=dict)
    # Every rate of --latency-rates, the first (= latency_rate / latency) included.
    latency_by_rate: dict[str, dict[str, float | None]] = field(default_factory=dict)
    memory: dict[str, float | None] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class Target:
    name: str
    port: int
    pid: int | None  # None: nothing between the carrier and the agent (SIPp direct)

    def pids(self) -> list[int]:
        return [] if self.pid is None else process_tree(self.pid)


# --- peers ------------------------------------------------------------------------------------


def missing_peers(targets: list[str]) -> list[str]:
    missing = []
    if shutil.which("sipp") is None:
        missing.append("sipp (apt-get install -y sip-tester)")
    if shutil.which("taskset") is None:
        missing.append("taskset (util-linux)")
    if "kamailio" in targets and shutil.which("kamailio") is None:
        missing.append("kamailio (apt-get install -y kamailio)")
    if "sippy" in targets and importlib.util.find_spec("sippy") is None:
        missing.append("sippy (pip install -r bench/requirements.txt)")
    return missing


@contextlib.contextmanager
def start_target(name: str, workdir: Path, agent_port: int) -> Iterator[Target]:
    if name == "direct":
        yield Target(name, agent_port, None)
        return
    port = free_udp_port()
    pin = ["taskset", "-c", TARGET_CORE]
    env = dict(os.environ)
    if name.startswith("sipedge"):
        from bench.sipedge_setup import write_config

        config = write_config(workdir, port=port, agent_port=agent_port)
        main = [str(VENV_BIN / "sipedge")]
        if name == "sipedge-gcfreeze":
            main = [sys.executable, "-c", GC_FREEZE_MAIN]
        argv = [*pin, *main, "--config", str(config), "sip"]
    elif name == "kamailio":
        rundir = workdir / "kamailio-run"
        rundir.mkdir(exist_ok=True)
        argv = [
            *pin, "kamailio", "-DD", "-E", "-f", str(ROOT / "bench" / "kamailio.cfg"),
            "-l", f"udp:{HOST}:{port}", "-Y", str(rundir), "-m", "512", "-M", "8", "-x", "tlsf",
            "-A", f'UAS_URI="sip:{HOST}:{agent_port}"',
        ]  # fmt: skip
    elif name == "sippy":
        argv = [
            *pin, sys.executable, "-c", "from sippy.b2bua_simple import main_func; main_func()",
            "-f", "-l", HOST, "-p", str(port), "-n", f"{HOST}:{agent_port}",
            "-L", str(workdir / "sippy.log"),
        ]  # fmt: skip
    else:
        raise BenchError(f"unknown target {name!r}")
    with running(argv, log=workdir / f"{name}.log", cwd=workdir, env=env) as proc:
        wait_udp_bound(port, proc, 60, name)
        yield Target(name, port, proc.pid)


# --- measurements -----------------------------------------------------------------------------


def load_step(
    target: Target,
    rate: float,
    seconds: float,
    hold_ms: int,
    workdir: Path,
    tag: str,
    every: Callable[[], None] | None = None,
) -> Step:
    calls = max(1, int(rate * seconds))
    pids = target.pids()
    before = cpu_seconds(pids) if pids else None
    drops = udp_rcvbuf_errors()
    waited = runqueue_wait_seconds(pids) if pids else None
    run = run_uac(
        (HOST, target.port),
        rate=rate,
        calls=calls,
        hold_ms=hold_ms,
        number=NUMBER,
        workdir=workdir,
        name=f"{target.name}-{tag}",
        limit=max(2000, int(rate * (hold_ms / 1000 + 6))),
        timeout=seconds + hold_ms / 1000 + 30,
        every=every,
    )
    cpu = cpu_seconds(pids) - before if before is not None else None
    drops = udp_rcvbuf_errors() - drops
    if waited is not None:
        waited = round(runqueue_wait_seconds(pids) - waited, 3)
    ok_calls, failed = run.count("SuccessfulCall(C)"), run.count("FailedCall(C)")
    retrans = run.count("Retransmissions(C)")
    periodic = [int(row.get("Retransmissions(P)", "0") or 0) for row in run.periodic]
    third = max(1, len(periodic) // 3)
    growing = sum(periodic[-third:]) > sum(periodic[:third]) + max(2, calls // 1000)
    expected = calls / rate + hold_ms / 1000 + 3.0
    why = []
    if ok_calls + failed < calls:
        why.append(f"only {ok_calls + failed}/{calls} calls ended")
    if failed > calls * 0.001:
        why.append(f"{failed} failed")
    if retrans > calls * 0.005 or (retrans and growing):
        why.append(f"{retrans} retransmissions{' (growing)' if growing else ''}")
    if run.wall > expected:
        why.append(f"backlog: {run.wall:.1f} s for a {expected:.1f} s step")
    if drops:
        why.append(f"(kernel dropped {drops} datagrams on full UDP buffers)")
    passed = not [w for w in why if not w.startswith("(")]
    return Step(
        rate, calls, ok_calls, failed, retrans, run.wall, cpu, passed, "; ".join(why), drops, waited
    )


def ramp(
    target: Target,
    rates: list[int],
    seconds: float,
    hold_ms: int,
    workdir: Path,
    result: Result,
    retries: int = 1,
) -> None:
    """Step up until a rate fails ``1 + retries`` times in a row (a retry filters out a step
    spoiled by other load on a shared machine; every attempt is kept in the results)."""
    for rate in rates:
        for attempt in range(1 + retries):
            step = load_step(target, rate, seconds, hold_ms, workdir, f"ramp-{rate}-{attempt}")
            result.steps.append(step)
            _print_step(target.name, rate, step)
            if step.passed:
                break
        if not step.passed:
            break
        result.max_rate, result.cpu_us_per_call = rate, step.cpu_us_per_call


def _print_step(name: str, rate: int, step: Step) -> None:
    cpu = step.cpu_us_per_call
    print(
        f"  {name:9} {rate:6} calls/s  ok {step.ok_calls:6}/{step.calls:<6} "
        f"failed {step.failed:4} retrans {step.retransmissions:4} "
        f"cpu/call {'-' if cpu is None else f'{cpu:7.0f} us'} "
        f"runq-wait {'-' if step.runqueue_wait_s is None else f'{step.runqueue_wait_s:5.2f} s'}  "
        f"{'PASS' if step.passed else 'FAIL'} {step.why}",
        flush=True,
    )


def latency(target: Target, rate: float, seconds: float, workdir: Path, result: Result) -> None:
    """Fixed-rate run with a loopback capture of the carrier side. The first rate measured is
    also ``result.latency`` (the summary table's columns)."""
    tcpdump = shutil.which("tcpdump")
    pcap = workdir / f"{target.name}-latency-{rate:g}.pcap"
    capture = None
    if tcpdump:
        argv = [
            "taskset", "-c", LOAD_CORE, tcpdump, "-i", "lo", "-n", "-s", "4096", "-B", "32768",
            "-U", "-w", str(pcap), "udp", "and", "port", str(target.port),
        ]  # fmt: skip
        capture = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        time.sleep(1.0)
    try:
        step = load_step(target, rate, seconds, 200, workdir, f"latency-{rate:g}")
    finally:
        if capture is not None:
            time.sleep(0.5)
            stop(capture)
    stats: dict[str, float | None] = {
        "failed": step.failed,
        "cpu_us_per_call": step.cpu_us_per_call,
        "source": None,
    }
    if capture is not None and pcap.exists():
        lat = parse_capture(pcap, target.port)
        stats.update(
            source=1.0,  # 1.0 = tcpdump capture on lo
            calls=lat.calls,
            invite_100_p50_ms=_ms(percentile(lat.invite_100, 0.5)),
            invite_100_p99_ms=_ms(percentile(lat.invite_100, 0.99)),
            invite_200_p50_ms=_ms(percentile(lat.invite_200, 0.5)),
            invite_200_p99_ms=_ms(percentile(lat.invite_200, 0.99)),
        )
    result.latency_by_rate[f"{rate:g}"] = stats
    if result.latency_rate is None:
        result.latency_rate, result.latency = rate, stats


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def held_memory(
    target: Target,
    calls: int,
    hold_seconds: float,
    rate: float,
    workdir: Path,
    result: Result,
) -> None:
    """Set up ``calls`` calls at ``rate`` and hold them all at once for ``hold_seconds``; the
    memory delta per held call. Then, once the ended calls' transactions are gone, the same hold
    again: memory freed by the first that the allocator kept (its arenas) is reused, so the
    second peak over the first is what calls that come and go would leak."""
    if target.pid is None:
        return
    ramp_s = calls / rate
    baseline = memory_kib(target.pids())
    peak = baseline

    def sample() -> None:
        nonlocal peak
        peak = max(peak, memory_kib(target.pids()))

    def hold(tag: str) -> Step:
        hold_ms = int((ramp_s + hold_seconds) * 1000)
        return load_step(target, rate, ramp_s, hold_ms, workdir, tag, every=sample)

    step = hold("hold")
    first_peak = peak
    time.sleep(3)
    after = memory_kib(target.pids())
    # The ended calls' transactions wait out Timer J (64*T1 = 32 s on UDP) before they go.
    time.sleep(DRAIN_SECONDS)
    drained = memory_kib(target.pids())
    again = hold("hold-again")
    result.memory = {
        "held_calls": calls,
        "setup_rate": rate,
        "ok_calls": step.ok_calls + again.ok_calls,
        "failed": step.failed + again.failed,
        "baseline_kib": baseline,
        "peak_kib": first_peak,
        "after_kib": after,
        "drained_kib": drained,
        "second_peak_kib": peak,
        "kib_per_call": round((first_peak - baseline) / calls, 2),
    }


def profile(target: Target, rate: float, seconds: float, workdir: Path, result: Result) -> None:
    """py-spy at ``rate``: an SVG flame graph, then collapsed stacks for the self-time table."""
    spy = VENV_BIN / "py-spy"
    if not spy.exists() or target.pid is None:
        result.profile = {"error": "py-spy not installed (pip install -r bench/requirements.txt)"}
        return
    outputs = {}
    for fmt, suffix, extra in (("flamegraph", "svg", []), ("raw", "txt", ["--nolineno"])):
        out = RESULTS / f"{RUN['stamp']}-{target.name}-profile-{rate:g}cps.{suffix}"
        argv = [
            "taskset", "-c", LOAD_CORE, str(spy), "record", "--pid", str(target.pid),
            "--rate", "250", "--duration", str(int(seconds)), "--nonblocking",
            "--format", fmt, "--output", str(out), *extra,
        ]  # fmt: skip
        with running(argv, log=workdir / f"py-spy-{fmt}.log") as spy_proc:
            time.sleep(1.0)
            load_step(target, rate, seconds, 500, workdir, f"profile-{fmt}")
            spy_proc.wait(timeout=30)
        outputs[fmt] = str(out)
    raw = Path(outputs["raw"])
    result.profile = {
        "rate": rate,
        **outputs,
        "loop_leaf_pct": loop_share(raw),
        "top_self": top_self(raw),
        "top_total": top_total(raw),
    }


LOOP_FRAME = "Runner.run (asyncio/runners.py)"


def _main_thread_stacks(collapsed: Path) -> list[tuple[list[str], int]]:
    """The event-loop thread's stacks (aiosqlite's worker threads left out)."""
    if not collapsed.exists():
        return []
    stacks = []
    for line in collapsed.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if stack and samples.isdigit() and LOOP_FRAME in stack:
            stacks.append((stack.split(";"), int(samples)))
    return stacks


def loop_share(collapsed: Path) -> float | None:
    """% of the loop thread's samples with ``Runner.run`` as the leaf: uvloop's own C code and,
    as py-spy's idle detection does not work in ``--nonblocking`` mode here, epoll waits."""
    stacks = _main_thread_stacks(collapsed)
    total = sum(n for _, n in stacks)
    loop = sum(n for frames, n in stacks if frames[-1] == LOOP_FRAME)
    return round(100 * loop / total, 1) if total else None


def top_self(collapsed: Path, count: int = 10) -> list[tuple[str, float]]:
    """The frames with the most self time on the loop thread, as % of its Python-work samples
    (those whose leaf is not ``Runner.run``)."""
    selfs: dict[str, int] = {}
    for frames, n in _main_thread_stacks(collapsed):
        if frames[-1] != LOOP_FRAME:
            selfs[frames[-1]] = selfs.get(frames[-1], 0) + n
    total = sum(selfs.values())
    ranked = sorted(selfs.items(), key=lambda item: -item[1])[:count]
    return [(frame, round(100 * n / total, 1)) for frame, n in ranked]


def top_total(collapsed: Path, count: int = 15) -> list[tuple[str, float]]:
    """The sipedge frames with the most inclusive time (self + callees), as % of the loop
    thread's Python-work samples."""
    totals: dict[str, int] = {}
    total = 0
    for frames, n in _main_thread_stacks(collapsed):
        if frames[-1] == LOOP_FRAME:
            continue
        total += n
        for frame in set(frames):
            if "sipedge/" in frame and "sipedge/cli.py" not in frame and "serve.py" not in frame:
                totals[frame] = totals.get(frame, 0) + n
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:count]
    return [(frame, round(100 * n / total, 1)) for frame, n in ranked] if total else []


# --- the run ----------------------------------------------------------------------------------


def run_target(name: str, args: argparse.Namespace, workdir: Path) -> Result:
    result = Result(name)
    agent_port = free_udp_port()
    try:
        with running(sipp_uas(agent_port, workdir, name), log=workdir / f"{name}-uas.out") as uas:
            wait_udp_bound(agent_port, uas, 10, "SIPp agent (uas)")
            with start_target(name, workdir, agent_port) as target:
                warm = load_step(target, 50, 2, 200, workdir, "warmup")
                if warm.ok_calls == 0:
                    raise BenchError(f"no call succeeded through {name} (see {workdir})")
                # Before the ramp: a failed step leaves thousands of transactions timing out
                # for 32 s, and a latency step after it would measure that clean-up.
                for rate in args.latency_rates:
                    latency(target, rate, args.step_seconds, workdir, result)
                ramp(
                    target,
                    args.rates,
                    args.step_seconds,
                    args.hold_ms,
                    workdir,
                    result,
                    args.retries,
                )
                if name.startswith("sipedge") and args.profile and result.max_rate:
                    # After the ramp's failed steps their transactions' timers fire for 32 s
                    # (64*T1): that clean-up must not fill the profile. The same process (a
                    # fresh one, cold, does not sustain the top rate at once).
                    time.sleep(DRAIN_SECONDS)
                    profile(target, result.max_rate, args.step_seconds, workdir, result)
            if args.held_calls and name != "direct":
                # A fresh process: after the ramp, freed memory stays in the allocator's arenas
                # and would hide what the held calls cost.
                with start_target(name, workdir, agent_port) as target:
                    load_step(target, 20, 1, 200, workdir, "warmup-hold")
                    time.sleep(2)
                    held_memory(
                        target,
                        args.held_calls,
                        args.hold_seconds,
                        args.hold_rate,
                        workdir,
                        result,
                    )
    except BenchError as exc:
        result.error = str(exc)
        print(f"  {name}: {exc}", flush=True)
    return result


def _fmt(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def latency_table(results: list[Result]) -> str:
    lines = [
        f"\n{'target':10} {'calls/s':>7} {'INV->100 p50/p99 ms':>20} {'INV->200 p50/p99 ms':>20} "
        f"{'CPU us/call':>11}"
    ]
    for r in results:
        for rate, lat in r.latency_by_rate.items():
            lines.append(
                f"{r.target:10} {rate:>7} "
                f"{_fmt(lat.get('invite_100_p50_ms'), '.2f'):>9}/{_fmt(lat.get('invite_100_p99_ms'), '.2f'):<10} "
                f"{_fmt(lat.get('invite_200_p50_ms'), '.2f'):>9}/{_fmt(lat.get('invite_200_p99_ms'), '.2f'):<10} "
                f"{_fmt(lat.get('cpu_us_per_call')):>11}"
            )
    return "\n".join(lines)


def table(results: list[Result]) -> str:
    ref = next((r for r in results if r.target == "sipedge"), None)
    lines = [
        f"{'target':10} {'max calls/s':>11} {'x sipedge':>9} {'CPU us/call':>11} "
        f"{'INV->100 p50/p99 ms':>20} {'INV->200 p50/p99 ms':>20} {'KiB/held call':>13} "
        f"{'drained +KiB':>12} {'2nd hold +KiB':>13}"
    ]
    for r in results:
        ratio = (
            r.max_rate / ref.max_rate
            if ref is not None and ref.max_rate and r.max_rate is not None
            else None
        )
        lat = r.latency
        memory = r.memory
        drained = again = None
        if memory.get("drained_kib") is not None:
            drained = memory["drained_kib"] - memory["baseline_kib"]  # type: ignore[operator]
        if memory.get("second_peak_kib") is not None:
            again = memory["second_peak_kib"] - memory["peak_kib"]  # type: ignore[operator]
        lines.append(
            f"{r.target:10} {_fmt(r.max_rate):>11} {_fmt(ratio, '.2f'):>9} "
            f"{_fmt(r.cpu_us_per_call):>11} "
            f"{_fmt(lat.get('invite_100_p50_ms'), '.2f'):>9}/{_fmt(lat.get('invite_100_p99_ms'), '.2f'):<10} "
            f"{_fmt(lat.get('invite_200_p50_ms'), '.2f'):>9}/{_fmt(lat.get('invite_200_p99_ms'), '.2f'):<10} "
            f"{_fmt(memory.get('kib_per_call'), '.1f'):>13} {_fmt(drained):>12} {_fmt(again):>13}"
            + (f"  ERROR: {r.error}" if r.error else "")
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--targets", default=",".join(DEFAULT_TARGETS), help=f"any of {', '.join(TARGETS)}"
    )
    parser.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)))
    parser.add_argument("--step-seconds", type=float, default=8.0, help="per ramp step (<= 20)")
    parser.add_argument("--hold-ms", type=int, default=500, help="call hold in the ramp")
    parser.add_argument("--retries", type=int, default=1, help="re-runs of a failed step")
    parser.add_argument(
        "--latency-rates",
        default="100,200",
        help="calls/s of the latency steps; the table shows the first",
    )
    parser.add_argument("--held-calls", type=int, default=2000, help="0 skips the memory test")
    parser.add_argument("--hold-seconds", type=float, default=30.0)
    parser.add_argument(
        "--hold-rate", type=float, default=100.0, help="set-up rate of the held calls"
    )
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    parser.add_argument("--quick", action="store_true", help="no memory test, no profile")
    parser.add_argument("--keep", action="store_true", help="keep logs, CSVs and captures")
    args = parser.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    args.rates = [int(r) for r in args.rates.split(",") if r]
    args.latency_rates = [float(r) for r in args.latency_rates.split(",") if r]
    args.step_seconds = min(args.step_seconds, 20.0)
    if args.quick:
        args.held_calls, args.profile = 0, False
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = missing_peers(args.targets)
    if missing:
        print("bench: missing peers: " + "; ".join(missing), file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # finally blocks stop children
    # This orchestrator mostly sleeps, but never on the target's core.
    os.sched_setaffinity(0, {int(LOAD_CORE)})
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = RUN["stamp"] = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    print(f"inbound ramp {stamp}; load average {os.getloadavg()}", flush=True)
    results = []
    tmp = tempfile.mkdtemp(prefix="sipedge-bench-")
    if args.keep:
        print(f"work directory (kept): {tmp}", flush=True)
    try:
        for name in args.targets:
            workdir = Path(tmp, name)
            workdir.mkdir()
            print(f"== {name}", flush=True)
            results.append(run_target(name, args, workdir))
            if results[-1].error:
                keep = RESULTS / f"{stamp}-{name}-logs"
                shutil.copytree(workdir, keep, ignore=shutil.ignore_patterns("*.pcap", "*.db*"))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(table(results))
    print(latency_table(results))
    for r in results:
        if r.profile.get("top_self"):
            print(
                f"\n{r.target} at {r.profile['rate']:g} calls/s: {r.profile['loop_leaf_pct']} % "
                "of the loop thread's samples in uvloop/epoll (Runner.run); of the rest, the "
                "top frames by self time:"
            )
            for frame, share in r.profile["top_self"]:
                print(f"  {share:5.1f} %  {frame}")
            print(f"{r.target}, sipedge frames by inclusive time:")
            for frame, share in r.profile.get("top_total", []):
                print(f"  {share:5.1f} %  {frame}")
    out = RESULTS / f"inbound-ramp-{stamp}.json"
    payload = {
        "stamp": stamp,
        "args": {k: v for k, v in vars(args).items()},
        "loadavg": os.getloadavg(),
        "results": [
            {**asdict(r), "steps": [{**asdict(s), "cpu_us": s.cpu_us_per_call} for s in r.steps]}
            for r in results
        ],
    }
    out.write_text(json.dumps(payload, indent=2))
    print(f"\nresults: {out}")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
