"""CPU and SQL statements per outbound call on the API and store side, in-process (issue #7).

The quick, repeatable gauge for the outbound path's non-SIP work, next to ``bench/call_path.py``
(the SIP side). A throwaway SQLite database is prepared as for the outbound ramp
(``bench/sipedge_setup.py``: a sip-trunk agent, a token, a trunk with one gateway and a number),
then the real admin app (``api.app.create_app``) is driven through its ASGI interface directly:
no socket, no HTTP client, no uvicorn, so the figures are the app's own work (routing,
dependencies, auth, validation, SQLAlchemy, serialisation). Measured per request:

- ``POST /call`` and ``GET /call/{run_id}``: the event-loop thread's CPU (``time.thread_time``:
  other load on the core does not count) and the process's CPU (``time.process_time``: aiosqlite's
  worker thread included), best-of-rounds mean per request, and the SQL statements executed
  (counted with a ``before_cursor_execute`` listener);
- **store side of one call** (``--lifecycle``): what the dialer and the background writers do for
  one answered call once the API queued it: the claim, the status changes a bridged call reports
  (started, ringing, in-progress, the agent leg, completed) written by ``Dialer.flush``, and its
  call record: statements and loop CPU per call, for batches of ``--batch`` calls.

```
taskset -c 0 .venv/bin/python -m bench.api_path                     # 500 requests x 3 rounds
taskset -c 0 .venv/bin/python -m bench.api_path --requests 200 --rounds 5 --profile post
```
``--profile get|post`` prints cProfile's top entries for one more round of that request.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.sipedge_setup import read_identity, write_config
from sipedge.api.app import create_app
from sipedge.config import Settings
from sipedge.store.db import make_engine, make_session_factory

ASGIApp = Callable[..., Awaitable[None]]


class StatementCounter:
    """Counts the SQL statements an engine executes (executemany counts once)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.count = 0
        event.listen(engine.sync_engine, "before_cursor_execute", self._seen)

    def _seen(self, *_args: Any) -> None:
        self.count += 1


@dataclass
class Request:
    method: str
    path: str
    body: bytes = b""


async def call_app(app: ASGIApp, request: Request, token: str) -> tuple[int, bytes]:
    """One request through the ASGI app: (status, body)."""
    headers = [
        (b"host", b"bench"),
        (b"authorization", f"Bearer {token}".encode()),
    ]
    if request.body:
        headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(request.body)).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)  # never: the app reads the body once
        sent = True
        return {"type": "http.request", "body": request.body, "more_body": False}

    status = 0
    chunks: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


@dataclass
class Figures:
    thread_us: float
    process_us: float
    statements: float


async def measure(
    run: Callable[[int], Awaitable[None]], count: int, counter: StatementCounter
) -> Figures:
    """Mean CPU and statements per item of ``run(i)`` for i in range(count)."""
    before = counter.count
    t0, p0 = time.thread_time(), time.process_time()
    for i in range(count):
        await run(i)
    t1, p1 = time.thread_time(), time.process_time()
    return Figures(
        thread_us=(t1 - t0) / count * 1e6,
        process_us=(p1 - p0) / count * 1e6,
        statements=(counter.count - before) / count,
    )


def best(rounds: list[Figures]) -> Figures:
    return min(rounds, key=lambda f: f.thread_us)


async def _lifecycle(
    engine: AsyncEngine, counter: StatementCounter, batch: int, run_ids: list[str]
) -> Figures:
    """The store side of ``batch`` answered calls after ``POST /call`` (see the module doc)."""
    # Imported here: the runtime's modules are not needed for the API figures.
    from sipedge.runtime.call_record_writer import CallRecordWriter
    from sipedge.runtime.dialer import Dialer
    from sipedge.runtime.ports import CallRecordEvent
    from sipedge.store import outbound_calls as repo

    sessions = make_session_factory(engine)
    dialer = Dialer(sessions, edge=None, snapshots=None, resolve=None)  # type: ignore[arg-type]
    records = CallRecordWriter(sessions, batch_size=batch)
    before = counter.count
    t0, p0 = time.thread_time(), time.process_time()
    async with sessions() as session:
        rows = await repo.claim_due_calls(session, now=datetime.now(UTC), limit=batch)
        await session.commit()
    now = datetime.now(UTC)
    # The reports of a bridged call (outbound_call / outbound_bridge), in their order.
    steps: list[dict[str, Any]] = [
        {"started_at": now},
        {"status": "ringing"},
        {"status": "in-progress", "answered_at": now, "final_sip_code": 200},
        {"agent_call_id": "agent@bench"},
        {"status": "completed", "ended_at": now, "final_sip_code": 200, "reason": "answered"},
    ]
    for values in steps:
        for row in rows:
            dialer.report(row.id, {**values, "updated_at": now})
        await dialer.flush()
    for row in rows:
        records.record(
            CallRecordEvent(
                run_id=row.id,
                trunk_id=row.trunk_id,
                direction="outbound",
                started_at=now,
                ended_at=now,
                final_sip_code=200,
                decided_by="answered",
                number_id=row.number_id,
                agent_id=row.agent_id,
            )
        )
    await records.flush()
    t1, p1 = time.thread_time(), time.process_time()
    claimed = len(rows)
    if claimed == 0:
        raise RuntimeError("no queued call to claim")
    return Figures(
        thread_us=(t1 - t0) / claimed * 1e6,
        process_us=(p1 - p0) / claimed * 1e6,
        statements=(counter.count - before) / claimed,
    )


def prepare() -> Path:
    """A throwaway work directory with the outbound bench's database (ports are never bound)."""
    workdir = Path(tempfile.mkdtemp(prefix="sipedge-api-path-"))
    write_config(workdir, port=5999, agent_port=5998, gateway_port=5997, http_port=8099)
    return workdir


async def main_async(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    identity = read_identity(workdir)
    token, agent_id = identity["token"], identity["agent_id"]
    url = f"sqlite:///{workdir / 'sipedge-bench.db'}"
    engine = make_engine(url)
    counter = StatementCounter(engine)
    settings = Settings(
        database={"url": url},  # type: ignore[arg-type]
        http={"rate_limit_per_minute": 0},  # type: ignore[arg-type]
        security={"allow_private_gateways": True},  # type: ignore[arg-type]
    )
    app = create_app(settings, engine=engine)
    post = Request(
        "POST",
        "/call",
        json.dumps({"agent_id": agent_id, "recipient_phone_number": "+12125550123"}).encode(),
    )
    run_ids: list[str] = []

    async def place(_i: int) -> None:
        status, body = await call_app(app, post, token)
        if status != 201:
            raise RuntimeError(f"POST /call answered {status}: {body[:200]!r}")
        run_ids.append(json.loads(body)["run_id"])

    async def read(i: int) -> None:
        run_id = run_ids[i % len(run_ids)]
        status, body = await call_app(app, Request("GET", f"/call/{run_id}"), token)
        if status != 200:
            raise RuntimeError(f"GET /call answered {status}: {body[:200]!r}")

    try:
        for _ in range(args.warmup):  # imports, statement caches, pydantic validators
            await place(0)
            await read(0)
        results: dict[str, Any] = {"requests": args.requests, "rounds": args.rounds}
        posts = [await measure(place, args.requests, counter) for _ in range(args.rounds)]
        gets = [await measure(read, args.requests, counter) for _ in range(args.rounds)]
        results["post_call"] = best(posts).__dict__
        results["get_call"] = best(gets).__dict__
        results["post_call_rounds_us"] = [round(f.thread_us) for f in posts]
        results["get_call_rounds_us"] = [round(f.thread_us) for f in gets]
        if args.profile:
            profiler = cProfile.Profile(time.thread_time)  # CPU, not waits
            profiler.enable()
            await measure(read if args.profile == "get" else place, args.requests, counter)
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(45)
        if args.lifecycle:
            # Only calls placed here are queued: the claim takes `batch` of them at a time.
            lifecycle = [
                await _lifecycle(engine, counter, args.batch, run_ids) for _ in range(args.rounds)
            ]
            results["call_store_side"] = best(lifecycle).__dict__
            results["batch"] = args.batch
    finally:
        await engine.dispose()
    return results


def _print(results: dict[str, Any]) -> None:
    print(f"{results['requests']} requests x {results['rounds']} rounds (best round)")
    print(f"{'':28} {'loop CPU µs':>12} {'process CPU µs':>15} {'SQL statements':>15}")
    rows = [("POST /call", "post_call"), ("GET /call/{run_id}", "get_call")]
    if "call_store_side" in results:
        rows.append((f"store side per call (x{results['batch']})", "call_store_side"))
    for label, key in rows:
        f = results[key]
        print(
            f"{label:28} {f['thread_us']:>12,.0f} {f['process_us']:>15,.0f} {f['statements']:>15.2f}"
        )
    print(
        f"rounds (loop µs): POST {results['post_call_rounds_us']}, GET {results['get_call_rounds_us']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500, help="requests per round (each kind)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--batch", type=int, default=50, help="calls per store-side batch")
    parser.add_argument("--no-lifecycle", dest="lifecycle", action="store_false")
    parser.add_argument(
        "--profile", choices=("get", "post"), help="cProfile one round of this request"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.rounds < 1 or args.batch < 1:
        parser.error("--requests, --rounds and --batch must be at least 1")
    workdir = prepare()
    try:
        results = asyncio.run(main_async(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _print(results)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
