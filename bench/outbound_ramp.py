"""Outbound call load bench (issue #7 item 3): `POST /call` -> dialer -> INVITE to a SIPp carrier
gateway -> answered and bridged to a SIPp agent; the call rate sipedge sustains, and the API's
request latency meanwhile.

The real `sipedge serve` process (admin API and SIP edge in one loop, SQLite) runs on core 0,
against a throwaway database prepared by bench/sipedge_setup.py: one trunk whose gateway is the
SIPp carrier (UDP), one `sip-trunk` agent, `agents.endpoint` = the SIPp agent. The HTTP driver
(this process: bench/light_http.py for the load, httpx for /metrics and the reads) and both
SIPps run on core 1. Each step POSTs /call at a fixed rate for
``--step-seconds`` (open loop: request i is due at t0 + i/rate; its latency counts from then),
waits until the calls ended (sipedge's /metrics), then reads every call with GET /call/{run_id}.
The carrier answers (100, 180, 200 with SDP), takes the edge's media re-INVITE, holds
``--hold-ms`` and hangs up; the edge BYEs the agent.

    .venv/bin/python -m bench.outbound_ramp                       # 10 .. 500 calls/s, 8 s steps
    .venv/bin/python -m bench.outbound_ramp --quick               # 10, 25, 50 calls/s, 3 s steps
    .venv/bin/python -m bench.outbound_ramp --rates 20,40 --step-seconds 5 --keep
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.harness import (
    HOST,
    LOAD_CORE,
    SCENARIOS,
    BenchError,
    cpu_seconds,
    free_udp_port,
    percentile,
    running,
    runqueue_wait_seconds,
    wait_udp_bound,
)
from bench.light_http import HttpPool, build_request
from bench.sipedge_setup import read_identity, write_config

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
VENV_BIN = Path(sys.executable).parent
CARRIER = SCENARIOS / "uas-carrier-bench.xml"  # a template: HOLD_MS
AGENT = SCENARIOS / "uas-agent-outbound-bench.xml"
TARGET_CORE = "0"
RECIPIENT = "+12125550123"
DEFAULT_RATES = (10, 25, 50, 100, 200, 300, 500)
QUICK_RATES = (10, 25, 50)
REQUEST_TIMEOUT = 10.0  # one HTTP request, pool wait included
LAUNCH_GRACE = 5.0  # the driver stops launching this long after the step's last due time
FAST_P99_MS = 1000.0  # the summary also names the highest passing rate with a POST p99 below
BACKLOG_S = 3.0  # allowed beyond the hold for the last calls to end, and for the last POST
FINAL = {"completed", "busy", "no-answer", "failed", "canceled"}


@dataclass
class Step:
    rate: float
    requested: int
    accepted: int = 0  # 201 from POST /call
    api_errors: dict[str, int] = field(default_factory=dict)  # non-201 status or exception
    latency_p50_ms: float | None = None  # from each request's due time to its response
    latency_p99_ms: float | None = None
    latency_max_ms: float | None = None
    launch_lag_ms: float = 0.0  # how late the driver launched its latest request (core 1 busy)
    offered_rate: float = 0.0  # the rate the driver launched its requests at, on average
    post_overrun_s: float = 0.0  # last POST answered this long after the last one was due
    drain_s: float | None = None  # last POST answered -> every call ended (None: not in time)
    statuses: dict[str, int] = field(default_factory=dict)  # GET /call/{run_id}, after the drain
    not_bridged: dict[str, int] = field(default_factory=dict)  # status/reason/final SIP code
    answered: int = 0  # answered_at set
    bridged: int = 0  # completed with an agent leg (agent_call_id) and answered_at
    dial_p50_ms: float | None = None  # created_at -> started_at (the dialer's queue)
    dial_p99_ms: float | None = None
    answer_p50_ms: float | None = None  # created_at -> answered_at
    answer_p99_ms: float | None = None
    carrier: dict[str, int] = field(default_factory=dict)  # SIPp carrier counters, this step
    agent: dict[str, int] = field(default_factory=dict)  # SIPp agent counters, this step
    snapshot_reloads: int = 0  # routing snapshot reloads during the step (sipedge /metrics)
    cpu_s: float | None = None  # sipedge utime+stime, first POST -> drained
    runqueue_wait_s: float | None = None  # sipedge runnable but not running (load on core 0)
    driver_cpu_s: float | None = None  # this process (the HTTP driver), same window
    passed: bool = False
    why: str = ""

    @property
    def failed(self) -> int:
        return self.requested - self.bridged

    @property
    def cpu_us_per_call(self) -> float | None:
        if self.cpu_s is None or not self.bridged:
            return None
        return self.cpu_s / self.bridged * 1e6


@dataclass
class Sipedge:
    pid: int
    client: httpx.AsyncClient  # /metrics and GET /call (not the load)
    agent_id: str
    carrier_stats: Path
    agent_stats: Path
    connections: int  # for the load: a fresh pool of at most this many per step
    http_port: int

    def load_pool(self) -> HttpPool:
        # Not httpx for the load: it costs ~2.5 ms of the driver's CPU per request, which capped
        # the offered rate near 300/s on the core the SIPps share (bench/light_http.py).
        return HttpPool(HOST, self.http_port, self.connections)

    def post_request(self, body: dict[str, Any]) -> bytes:
        payload = json.dumps(body).encode()
        headers = {
            "Authorization": self.client.headers["Authorization"],
            "Content-Type": "application/json",
        }
        return build_request("POST", "/call", f"{HOST}:{self.http_port}", headers, payload)


# --- processes --------------------------------------------------------------------------------


def missing_peers() -> list[str]:
    missing = []
    if shutil.which("sipp") is None:
        missing.append("sipp (apt-get install -y sip-tester)")
    if shutil.which("taskset") is None:
        missing.append("taskset (util-linux)")
    return missing


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def sipp_uas(scenario: Path, port: int, workdir: Path, name: str) -> list[str]:
    """A long-running SIPp UAS on core 1 writing its cumulative counters every second."""
    return [
        "taskset", "-c", LOAD_CORE, "sipp", "-sf", str(scenario), "-i", HOST, "-p", str(port),
        "-nostdin", "-recv_timeout", "20000", "-trace_stat", "-stf", str(workdir / f"{name}.csv"),
        "-fd", "1", "-trace_err", "-error_file", str(workdir / f"{name}-errors.log"),
    ]  # fmt: skip


def sipp_totals(stats: Path) -> dict[str, int]:
    """The cumulative counters of SIPp's last statistics row."""
    if not stats.exists():
        return {}
    with open(stats, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter=";"))
    if not rows:
        return {}
    names = ("SuccessfulCall(C)", "FailedCall(C)", "Retransmissions(C)")
    return {n.removesuffix("(C)"): int(rows[-1].get(n) or 0) for n in names}


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items()}


async def wait_api(client: httpx.AsyncClient, proc_alive: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc_alive():
            raise BenchError("sipedge serve exited during start-up")
        try:
            if (await client.get("/healthz", timeout=1.0)).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.1)
    raise BenchError(f"the admin API did not answer /healthz within {timeout:.0f} s")


# --- one step ---------------------------------------------------------------------------------


async def post_calls(target: Sipedge, rate: float, seconds: float, step: Step) -> list[str]:
    """POST /call at ``rate`` (open loop); fills the API half of ``step``; returns the run ids."""
    loop = asyncio.get_running_loop()
    body = {"agent_id": target.agent_id, "recipient_phone_number": RECIPIENT}
    latencies: list[float] = []
    run_ids: list[str] = []
    errors: Counter[str] = Counter()
    last_answer = 0.0

    async def one(due: float) -> None:
        nonlocal last_answer
        try:
            response = await pool.request(request, REQUEST_TIMEOUT)
        except (OSError, TimeoutError) as exc:  # ConnectionError is an OSError
            errors[type(exc).__name__] += 1
            return
        now = loop.time()
        last_answer = max(last_answer, now)
        latencies.append(now - due)
        if response.status == 201:
            run_ids.append(json.loads(response.body)["run_id"])
        else:
            errors[f"HTTP {response.status}"] += 1

    pool = target.load_pool()
    request = target.post_request(body)
    t0 = loop.time() + 0.05
    last_due = t0 + (step.requested - 1) / rate
    tasks: list[asyncio.Task[None]] = []
    try:
        for i in range(step.requested):
            due = t0 + i / rate
            if (delay := due - loop.time()) > 0:
                await asyncio.sleep(delay)
            now = loop.time()
            if now > last_due + LAUNCH_GRACE:
                errors["not sent (driver late)"] += step.requested - i
                break
            step.launch_lag_ms = max(step.launch_lag_ms, (now - due) * 1000)
            tasks.append(asyncio.create_task(one(due)))
        launched = loop.time() - t0  # ideally (requests - 1) / rate
        step.offered_rate = round((len(tasks) - 1) / launched if len(tasks) > 1 else rate, 1)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=REQUEST_TIMEOUT + 5)
            for task in pending:
                task.cancel()
            errors["unfinished"] += len(pending)
    finally:
        pool.close()
    step.accepted = len(run_ids)
    step.api_errors = {k: v for k, v in errors.items() if v}
    step.latency_p50_ms = _ms(percentile(latencies, 0.5))
    step.latency_p99_ms = _ms(percentile(latencies, 0.99))
    step.latency_max_ms = _ms(max(latencies, default=None))
    step.launch_lag_ms = round(step.launch_lag_ms, 1)
    step.post_overrun_s = round(max(0.0, last_answer - last_due), 2)
    return run_ids


METRICS = {  # /metrics sample prefix -> our name (values summed over labels)
    "sipedge_outbound_attempts_total{": "attempts",  # outbound INVITEs ended, any result
    "sipedge_active_calls ": "active",  # calls holding a channel now
    "sipedge_snapshot_reloads_total ": "snapshot_reloads",
}


async def outbound_metrics(client: httpx.AsyncClient) -> dict[str, float]:
    values = dict.fromkeys(METRICS.values(), 0.0)
    for line in (await client.get("/metrics")).text.splitlines():
        for prefix, name in METRICS.items():
            if line.startswith(prefix):
                values[name] += float(line.rsplit(" ", 1)[1])
    return values


async def drain(target: Sipedge, attempts_before: float, accepted: int, limit: float) -> float:
    """Wait (at most ``limit`` s) until every accepted call was dialled and none holds a channel;
    returns the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        now = await outbound_metrics(target.client)
        if now["attempts"] - attempts_before >= accepted and now["active"] == 0:
            break
        await asyncio.sleep(0.25)  # a /metrics read costs sipedge ~5 ms of CPU
    return time.monotonic() - started


async def read_calls(client: httpx.AsyncClient, run_ids: list[str], step: Step) -> None:
    """GET /call/{run_id} for every accepted call (32 at a time, bounded in rounds and time)."""
    found: dict[str, dict[str, Any]] = {}
    gate = asyncio.Semaphore(32)

    async def get(run_id: str) -> None:
        async with gate:
            try:
                response = await client.get(f"/call/{run_id}")
            except httpx.HTTPError:
                return
            if response.status_code == 200:
                found[run_id] = response.json()

    deadline = time.monotonic() + 90
    todo = list(run_ids)
    for _ in range(5):  # a status the dialer has not flushed yet is read again
        try:
            await asyncio.wait_for(
                asyncio.gather(*(get(r) for r in todo)), max(1.0, deadline - time.monotonic())
            )
        except TimeoutError:
            break
        todo = [r for r in run_ids if found.get(r, {}).get("status") not in FINAL]
        if not todo or time.monotonic() > deadline:
            break
        await asyncio.sleep(1.0)
    calls = list(found.values())
    step.statuses = dict(Counter(c["status"] for c in calls))
    step.not_bridged = dict(
        Counter(
            f"{c['status']}/{c['reason']}/{c['final_sip_code']}"
            for c in calls
            if not (c["status"] == "completed" and c["answered_at"] and c["agent_call_id"])
        )
    )
    if unread := len(set(run_ids) - found.keys()):
        step.statuses["unread"] = unread
    step.answered = sum(1 for c in calls if c["answered_at"])
    step.bridged = sum(
        1 for c in calls if c["status"] == "completed" and c["answered_at"] and c["agent_call_id"]
    )
    dial = [_since(c, "started_at") for c in calls if c["started_at"]]
    answer = [_since(c, "answered_at") for c in calls if c["answered_at"]]
    step.dial_p50_ms, step.dial_p99_ms = _ms(percentile(dial, 0.5)), _ms(percentile(dial, 0.99))
    step.answer_p50_ms = _ms(percentile(answer, 0.5))
    step.answer_p99_ms = _ms(percentile(answer, 0.99))


def _since(call: dict[str, Any], key: str) -> float:
    return (
        datetime.fromisoformat(call[key]) - datetime.fromisoformat(call["created_at"])
    ).total_seconds()


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


async def load_step(target: Sipedge, rate: float, seconds: float, hold_ms: int) -> Step:
    step = Step(rate, max(1, round(rate * seconds)))
    pids = [target.pid]
    carrier0, agent0 = sipp_totals(target.carrier_stats), sipp_totals(target.agent_stats)
    metrics0 = await outbound_metrics(target.client)
    cpu0, wait0, own0 = cpu_seconds(pids), runqueue_wait_seconds(pids), time.process_time()
    run_ids = await post_calls(target, rate, seconds, step)
    waited = await drain(target, metrics0["attempts"], step.accepted, hold_ms / 1000 + 30)
    reloads = (await outbound_metrics(target.client))["snapshot_reloads"]
    step.snapshot_reloads = int(reloads - metrics0["snapshot_reloads"])
    step.cpu_s = round(cpu_seconds(pids) - cpu0, 3)
    step.runqueue_wait_s = round(runqueue_wait_seconds(pids) - wait0, 3)
    step.driver_cpu_s = round(time.process_time() - own0, 3)
    if waited <= hold_ms / 1000 + 29:
        step.drain_s = round(waited, 2)
    await read_calls(target.client, run_ids, step)
    await asyncio.sleep(1.2)  # SIPp writes its counters once a second
    step.carrier = _delta(sipp_totals(target.carrier_stats), carrier0)
    step.agent = _delta(sipp_totals(target.agent_stats), agent0)
    judge(step, hold_ms)
    return step


def judge(step: Step, hold_ms: int) -> None:
    """Pass: < 0.1 % of the requested calls not answered, bridged and completed (API errors
    included), and no backlog (the last POST answered, and then every call ended, in time)."""
    why = []
    errors = sum(step.api_errors.values())
    if errors:
        why.append(f"{errors} API errors {step.api_errors}")
    if step.failed > step.requested * 0.001:
        why.append(f"{step.failed}/{step.requested} not bridged+completed {step.not_bridged}")
    if step.post_overrun_s > BACKLOG_S:
        why.append(f"backlog: last POST answered {step.post_overrun_s:.1f} s after it was due")
    if step.drain_s is None:
        why.append("backlog: calls still up or undialled 30 s after the step")
    elif step.drain_s > hold_ms / 1000 + BACKLOG_S:
        why.append(f"backlog: calls ended {step.drain_s:.1f} s after the last POST")
    if step.offered_rate < step.rate * 0.95:
        why.append(f"the driver offered only {step.offered_rate:g} calls/s (core 1 saturated)")
    if step.carrier.get("Retransmissions"):
        why.append(f"({step.carrier['Retransmissions']} carrier retransmissions)")
    step.passed = not [w for w in why if not w.startswith("(")]
    step.why = "; ".join(why)


def print_step(step: Step) -> None:
    cpu = step.cpu_us_per_call
    print(
        f"  {step.rate:5g} calls/s  POST 201 {step.accepted:5}/{step.requested:<5} "
        f"p50/p99 {_fmt(step.latency_p50_ms)}/{_fmt(step.latency_p99_ms)} ms  "
        f"bridged {step.bridged:5}  dial p99 {_fmt(step.dial_p99_ms)} ms  "
        f"drain {_fmt(step.drain_s, '.1f')} s  reloads {step.snapshot_reloads}  "
        f"cpu/call {_fmt(cpu)} us  "
        f"runq-wait {_fmt(step.runqueue_wait_s, '.2f')} s  driver cpu "
        f"{_fmt(step.driver_cpu_s, '.1f')} s  offered {step.offered_rate:g}/s  "
        f"{'PASS' if step.passed else 'FAIL'} {step.why}",
        flush=True,
    )


def _fmt(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


# --- the run ----------------------------------------------------------------------------------


async def profile(target: Sipedge, rate: float, seconds: float, hold_ms: int, workdir: Path,
                  stamp: str) -> dict[str, Any]:  # fmt: skip
    """py-spy (collapsed stacks per thread, --nonblocking) of sipedge while the step at ``rate``
    runs again."""
    spy = VENV_BIN / "py-spy"
    if not spy.exists():
        return {"error": "py-spy not installed (pip install -r bench/requirements.txt)"}
    out = RESULTS / f"{stamp}-outbound-profile-{rate:g}cps.txt"
    argv = [
        "taskset", "-c", LOAD_CORE, str(spy), "record", "--pid", str(target.pid), "--rate", "250",
        "--duration", str(int(seconds)), "--nonblocking", "--threads", "--format", "raw",
        "--nolineno", "--output", str(out),
    ]  # fmt: skip
    with running(argv, log=workdir / "py-spy.log") as spy_proc:
        await asyncio.sleep(1.0)
        step = await load_step(target, rate, seconds, hold_ms)
        spy_proc.wait(timeout=30)
    return {"rate": rate, "raw": str(out), "step": asdict(step), **breakdown(out)}


# Where the event-loop thread's samples go: the first part (in this order) with a frame in the
# stack. SQLAlchemy's ORM/Core work runs in greenlets (AsyncSession -> greenlet_spawn): py-spy
# shows those stacks without their asyncio callers, so they are a part of their own.
PARTS = (
    ("SIP messages (datagram_received)", ("datagram_received (",)),
    ("dialer (claim, place, status writes)", ("Dialer.",)),
    ("snapshot reloads", ("SnapshotLoader.",)),
    ("HTTP API (uvicorn, starlette, routes)", ("uvicorn/", "starlette/", "fastapi/", "sipedge/api/")),
    ("call records, activity, webhooks", ("CallRecordWriter.", "ActivityTracker.", "Webhook")),
    ("SQLAlchemy in greenlets (any caller)", ("sqlalchemy/",)),
)  # fmt: skip
LOOP_LEAF = "Runner.run (asyncio/runners.py)"


def breakdown(collapsed: Path, count: int = 12) -> dict[str, Any]:
    """Shares of the loop thread's samples by part (``PARTS``), its top frames by self time, and
    how busy the other threads (aiosqlite's workers) were. py-spy leaves out the samples it finds
    idle (no ``--idle``), so these are shares of the busy ones."""
    if not collapsed.exists():
        return {"error": f"no profile written ({collapsed})"}
    stacks: list[tuple[str, list[str], int]] = []
    for line in collapsed.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if stack and samples.isdigit():
            frames = stack.split(";")
            stacks.append((frames[0], frames[1:], int(samples)))
    parts: Counter[str] = Counter()
    selfs: Counter[str] = Counter()
    others: Counter[str] = Counter()
    for thread, frames, n in stacks:
        if not thread.endswith(": MainThread"):  # `thread (<tid>): <name>`
            idle = not frames or frames[-1].startswith("_connection_worker_thread")  # queue.get
            others["idle (waiting for work)" if idle else "busy (SQLite)"] += n
            continue
        if not frames or frames[-1] == LOOP_LEAF:
            parts["uvloop's C code (no Python frame below Runner.run)"] += n
            continue
        selfs[frames[-1]] += n
        part = next((name for name, keys in PARTS if any(k in f for f in frames for k in keys)), "")
        parts[part or "other Python"] += n
    total, busy = sum(parts.values()), sum(selfs.values())
    return {
        "loop_samples": total,
        "loop_parts_pct": {k: round(100 * v / total, 1) for k, v in parts.most_common()},
        "top_self_pct": [(f, round(100 * n / busy, 1)) for f, n in selfs.most_common(count)],
        "other_threads": dict(others),
    }


def prepare(workdir: Path) -> dict[str, Any]:
    """Ports, the config file and the database (its own event loop: call it outside ``run``)."""
    ports = {"carrier": free_udp_port(), "agent": free_udp_port(), "sip": free_udp_port()}
    ports["http"] = free_tcp_port()
    config = write_config(
        workdir, port=ports["sip"], agent_port=ports["agent"], gateway_port=ports["carrier"],
        http_port=ports["http"],
    )  # fmt: skip
    return {**ports, "config": config, **read_identity(workdir)}


async def run(
    args: argparse.Namespace, workdir: Path, stamp: str, setup: dict[str, Any]
) -> dict[str, Any]:
    carrier_port, agent_port = setup["carrier"], setup["agent"]
    sip_port, http_port, config = setup["sip"], setup["http"], setup["config"]
    carrier_xml = workdir / "uas-carrier-bench.xml"
    carrier_xml.write_text(CARRIER.read_text().replace("HOLD_MS", str(args.hold_ms)))
    steps: list[Step] = []
    result: dict[str, Any] = {"steps": steps, "max_rate": None}
    serve_argv = [
        "taskset", "-c", TARGET_CORE, str(VENV_BIN / "sipedge"), "--config", str(config), "serve",
    ]  # fmt: skip
    with (
        running(sipp_uas(carrier_xml, carrier_port, workdir, "carrier"),
                log=workdir / "carrier.out") as carrier,
        running(sipp_uas(AGENT, agent_port, workdir, "agent"), log=workdir / "agent.out") as agent,
        running(serve_argv, log=workdir / "sipedge.log", cwd=workdir) as serve,
    ):  # fmt: skip
        wait_udp_bound(carrier_port, carrier, 10, "SIPp carrier (uas)")
        wait_udp_bound(agent_port, agent, 10, "SIPp agent (uas)")
        wait_udp_bound(sip_port, serve, 60, "sipedge serve")
        async with httpx.AsyncClient(
            base_url=f"http://{HOST}:{http_port}",
            headers={"Authorization": f"Bearer {setup['token']}"},
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
            timeout=REQUEST_TIMEOUT,
        ) as client:
            await wait_api(client, lambda: serve.poll() is None, 60)
            target = Sipedge(
                serve.pid, client, setup["agent_id"], workdir / "carrier.csv",
                workdir / "agent.csv", args.connections, http_port,
            )  # fmt: skip
            warm = await load_step(target, 5, 2, args.hold_ms)
            result["warmup"] = asdict(warm)
            if not warm.bridged:
                raise BenchError(f"no outbound call was bridged in the warm-up: {warm.why}")
            failing = None
            for rate in args.rates:
                for _attempt in range(1 + args.retries):
                    step = await load_step(target, rate, args.step_seconds, args.hold_ms)
                    steps.append(step)
                    print_step(step)
                    if step.passed:
                        break
                if not step.passed:
                    failing = rate
                    break
                result["max_rate"] = rate
            if args.profile:
                rate = failing or result["max_rate"]
                if rate:
                    print(f"  profiling sipedge at {rate:g} calls/s", flush=True)
                    try:  # the ramp's results are kept whatever happens to the profile
                        result["profile"] = await profile(
                            target, rate, args.step_seconds, args.hold_ms, workdir, stamp
                        )
                    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as exc:
                        result["profile"] = {"error": f"{type(exc).__name__}: {exc}"}
    return result


def summary(result: dict[str, Any]) -> str:
    steps: list[Step] = result["steps"]
    head = (
        f"{'calls/s':>7} {'POSTs':>6} {'201':>6} {'API err':>7} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'answered':>8} {'bridged':>7} {'failed':>6} {'dial p99':>8} {'drain s':>7} "
        f"{'CPU us/call':>11} {'runq s':>6}  result"
    )
    lines = [head]
    for s in steps:
        lines.append(
            f"{s.rate:7g} {s.requested:6} {s.accepted:6} {sum(s.api_errors.values()):7} "
            f"{_fmt(s.latency_p50_ms):>7} {_fmt(s.latency_p99_ms):>7} {s.answered:8} "
            f"{s.bridged:7} {s.failed:6} {_fmt(s.dial_p99_ms):>8} {_fmt(s.drain_s, '.1f'):>7} "
            f"{_fmt(s.cpu_us_per_call):>11} {_fmt(s.runqueue_wait_s, '.2f'):>6}  "
            f"{'PASS' if s.passed else 'FAIL'}"
        )
    best = result.get("max_rate")
    ok = [s for s in steps if s.passed and s.rate == best]
    if best and ok:
        s = ok[-1]
        lines.append(
            f"\nhighest rate sustained (< 0.1 % failed, no backlog): {best:g} calls/s; "
            f"{_fmt(s.cpu_us_per_call)} us CPU per call; POST /call p50/p99 "
            f"{_fmt(s.latency_p50_ms)}/{_fmt(s.latency_p99_ms)} ms"
        )
        fast = [s for s in steps if s.passed and (s.latency_p99_ms or 0) < FAST_P99_MS]
        if fast:
            s = max(fast, key=lambda s: s.rate)
            lines.append(
                f"highest of those with POST /call p99 < {FAST_P99_MS / 1000:g} s: {s.rate:g} "
                f"calls/s (p50/p99 {_fmt(s.latency_p50_ms)}/{_fmt(s.latency_p99_ms)} ms)"
            )
    else:
        lines.append("\nno step passed")
    prof = result.get("profile") or {}
    if prof.get("loop_parts_pct"):
        lines.append(
            f"\nprofile at {prof['rate']:g} calls/s ({prof['raw']}): the event-loop thread's "
            f"{prof['loop_samples']} samples by part:"
        )
        lines += [f"  {share:5.1f} %  {part}" for part, share in prof["loop_parts_pct"].items()]
        lines.append("its top frames by self time (% of its Python samples):")
        lines += [f"  {share:5.1f} %  {frame}" for frame, share in prof["top_self_pct"]]
        lines.append(f"other threads (aiosqlite), samples: {prof['other_threads']}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)))
    parser.add_argument("--step-seconds", type=float, default=8.0, help="per step (<= 20)")
    parser.add_argument("--hold-ms", type=int, default=500, help="the carrier hangs up after")
    parser.add_argument("--retries", type=int, default=1, help="re-runs of a failed step")
    parser.add_argument(
        "--connections", type=int, default=500, help="HTTP connections for the load, at most"
    )
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    parser.add_argument("--quick", action="store_true", help="10, 25, 50 calls/s, 3 s steps")
    parser.add_argument("--keep", action="store_true", help="keep logs, CSVs and the database")
    args = parser.parse_args(argv)
    args.rates = [float(r) for r in args.rates.split(",") if r]
    args.step_seconds = min(args.step_seconds, 20.0)
    if args.quick:
        args.rates, args.step_seconds, args.profile = list(QUICK_RATES), 3.0, False
        args.retries = 0
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = missing_peers()
    if missing:
        print("bench: missing peers: " + "; ".join(missing), file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # finally blocks stop children
    os.sched_setaffinity(0, {int(LOAD_CORE)})  # the driver shares core 1 with the SIPps
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    loadavg = os.getloadavg()
    print(f"outbound ramp {stamp}; load average {loadavg}", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="sipedge-outbound-"))
    if args.keep:
        print(f"work directory (kept): {workdir}", flush=True)
    error = None
    result: dict[str, Any] = {"steps": []}
    try:
        result = asyncio.run(run(args, workdir, stamp, prepare(workdir)))
    except BenchError as exc:
        error = str(exc)
        print(f"bench: {exc}", file=sys.stderr)
        shutil.copytree(
            workdir, RESULTS / f"{stamp}-outbound-logs", ignore=shutil.ignore_patterns("*.db*")
        )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(summary(result))
    out = RESULTS / f"outbound-ramp-{stamp}.json"
    payload = {
        "stamp": stamp,
        "args": vars(args),
        "loadavg_before": loadavg,
        "loadavg_after": os.getloadavg(),
        "error": error,
        **result,
        "steps": [{**asdict(s), "cpu_us": s.cpu_us_per_call} for s in result["steps"]],
    }
    out.write_text(json.dumps(payload, indent=2))
    print(f"\nresults: {out}")
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main())
