"""The process roles: `serve` (SIP edge + admin API), `api` and `sip`, wired from Settings.

One engine, one change notifier and one channel limiter are shared by both halves of `serve`, so
an API write reaches the SIP side's snapshot in-process, and `active_calls` is the live figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from typing import Literal

import redis.asyncio
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest, start_http_server
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import Response

from sipedge.api.app import create_app
from sipedge.config import Settings
from sipedge.edge.channels import ChannelLimiter
from sipedge.metrics import REGISTRY
from sipedge.runtime.active_calls import ActiveCounter, active_calls_from
from sipedge.runtime.activity import ActivityTracker
from sipedge.runtime.call_record_writer import CallRecordWriter
from sipedge.runtime.change_bridge import PgChangeBridge, supports_notify
from sipedge.runtime.cluster_channels import ClusterChannels
from sipedge.runtime.dialer import Dialer
from sipedge.runtime.edge_app import SipEdge
from sipedge.runtime.gateway_dns import GatewayDns
from sipedge.runtime.redis_channels import RedisChannels
from sipedge.runtime.snapshot_loader import SnapshotLoader
from sipedge.runtime.webhook_outbox_writer import WebhookOutboxWriter
from sipedge.runtime.webhook_sender import WebhookSender
from sipedge.stack.loop import install_uvloop
from sipedge.store import tokens
from sipedge.store.changes import ChangeNotifier
from sipedge.store.db import make_engine, make_session_factory
from sipedge.store.migrate import upgrade

log = logging.getLogger("sipedge.serve")

FIRST_USER = "admin"
SIP_ROLE_POLL_SECONDS = 5.0  # the `sip` role re-reads the store this often without LISTEN
SIP_ROLE_SAFETY_POLL_SECONDS = 60.0  # ... and with it (PostgreSQL), in case a NOTIFY was lost
APPLY_TIMEOUT_SECONDS = 2.0
GC_THRESHOLDS = (2_000, 100, 10)  # see _run: short, frequent young collections
Role = Literal["serve", "api", "sip"]


def serve(settings: Settings, *, role: Role) -> int:
    """Run one role until SIGINT/SIGTERM. Returns the process exit code."""
    if settings.database.auto_migrate:
        upgrade(settings.database.url)
    install_uvloop()  # before the loop exists: the policy decides which loop asyncio.run makes
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_run(settings, role=role))
    return 0


async def _metrics(_request: Request) -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


async def _issue_first_token(engine: AsyncEngine) -> str | None:
    """On an empty database, create a token so the user can call the API at once."""
    async with make_session_factory(engine)() as session:
        if await tokens.any_tokens(session):
            return None
        token = await tokens.create_token(session, user_id=FIRST_USER)
        await session.commit()
        return token


@asynccontextmanager
async def _sip_edge(
    settings: Settings, engine: AsyncEngine, notifier: ChangeNotifier, limiter: ChannelLimiter
) -> AsyncIterator[tuple[SnapshotLoader, ActiveCounter]]:
    """The SIP edge and the storage-side workers that feed it, stopped in reverse order. Yields
    the snapshot loader and what counts the trunks' active calls (the cluster's with Redis)."""
    sessions = make_session_factory(engine)
    loader = SnapshotLoader(sessions)
    cluster = _cluster_channels(settings, limiter, lambda: loader.current.trunks.keys())
    counter: ActiveCounter = cluster if cluster is not None else limiter
    writer = CallRecordWriter(sessions)
    tracker = ActivityTracker(sessions)
    # Call status webhooks: sent from wherever the SIP edge runs (serve, sip), never by `api`.
    sender = WebhookSender(
        sessions, settings.webhooks, allow_private=settings.security.allow_private_webhooks
    )
    statuses = WebhookOutboxWriter(sessions, on_written=sender.wake)
    if not await loader.load():
        raise RuntimeError("could not load the routing snapshot from the database")
    unsubscribe = loader.subscribe(notifier)
    writer.start()
    tracker.start()
    statuses.start()
    sender.start()
    edge = SipEdge(
        settings,
        snapshots=loader,
        limiter=limiter,
        records=writer,
        activity=tracker,
        statuses=statuses,
        cluster=cluster,
    )
    gateway_dns = GatewayDns(allow_private=settings.security.allow_private_gateways)
    dialer = Dialer(
        sessions,
        edge,
        loader,
        resolve=gateway_dns.resolve,
        refresh=loader.load,
        poll_interval=settings.outbound.poll_interval_seconds,
        heartbeat_interval=settings.outbound.heartbeat_seconds,
    )
    stop_waking = notifier.subscribe(dialer.wake)
    try:
        await edge.start()
        dialer.start()
        if cluster is not None:
            cluster.start()
        host, port = edge.address
        log.info("SIP edge on %s:%d (udp, tcp); agents at %s", host, port, settings.agents.endpoint)
        yield loader, counter
    finally:
        stop_waking()
        await dialer.stop()
        await edge.stop()
        if cluster is not None:
            await cluster.stop()  # after the edge: the releases of the calls stop() ended
        await dialer.flush()  # the statuses of the calls stop() ended
        unsubscribe()
        await loader.stop()
        await writer.stop()
        await tracker.stop()
        await statuses.stop()  # the final statuses of the calls stop() ended reach the outbox
        await sender.stop()


def _cluster_channels(
    settings: Settings,
    limiter: ChannelLimiter,
    trunks: Callable[[], Collection[str]] | None,
) -> ClusterChannels | None:
    """Cluster-wide channel counts when ``redis.url`` is set (SPEC §7), else None. ``trunks``:
    the live trunks to count; None (the `api` role: no snapshot, no calls) counts every trunk
    Redis has leases for."""
    config = settings.redis
    if not config.url:
        return None
    client = redis.asyncio.Redis.from_url(
        config.url,
        socket_timeout=config.timeout_seconds,
        socket_connect_timeout=config.timeout_seconds,
    )
    store = RedisChannels(client, lease_seconds=config.lease_seconds)
    return ClusterChannels(
        store,
        limiter,
        lease_seconds=config.lease_seconds,
        timeout=config.timeout_seconds,
        trunks=trunks or tuple,
        closing=client.aclose,
        discover=trunks is None,
    )


async def _poll_store(notifier: ChangeNotifier, interval: float) -> None:
    """The `sip` role has no API in its process to signal changes: re-read the store every
    ``interval`` (on PostgreSQL the change bridge signals them, and this is a safety net)."""
    while True:
        await asyncio.sleep(interval)
        notifier.notify("poll", None)


def _api_server(
    settings: Settings,
    engine: AsyncEngine,
    notifier: ChangeNotifier,
    edge: tuple[ActiveCounter, SnapshotLoader] | None,
    counter: ActiveCounter | None = None,
) -> uvicorn.Server:
    applied = None
    shown = edge[0] if edge is not None else counter  # what counts the trunks' active calls
    if edge is not None:
        loader = edge[1]

        async def applied() -> None:
            # A write answers only once the SIP edge routes on it (bounded: a failing reload
            # must not hang the API; the loader keeps retrying and counts the failures).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(loader.settle(), timeout=APPLY_TIMEOUT_SECONDS)

    app = create_app(
        settings,
        engine=engine,
        notifier=notifier,
        active_calls=active_calls_from(shown) if shown is not None else None,
        applied=applied,
    )
    app.add_route("/metrics", _metrics, include_in_schema=False)
    config = uvicorn.Config(
        app,
        host=settings.http.host,
        port=settings.http.port,
        log_level=settings.logging.level.lower(),
        access_log=settings.logging.level == "DEBUG",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    # Our own signal handlers stop every part in order; uvicorn's would stop only the API.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign, assignment]
    return server


async def _run(settings: Settings, *, role: Role) -> None:
    engine = make_engine(settings.database.url, echo=settings.database.echo)
    notifier = ChangeNotifier()
    limiter = ChannelLimiter()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    try:
        if role != "sip":
            first_token = await _issue_first_token(engine)
            if first_token is not None:
                # Printed once, to the terminal only: the database keeps nothing but its hash.
                print(
                    f"\nFirst admin token (user {FIRST_USER!r}); it is shown only now:\n\n"
                    f"    export SIPEDGE_TOKEN={first_token}\n",
                    flush=True,
                )
        async with contextlib.AsyncExitStack() as running:
            running.callback(gc.unfreeze)
            running.callback(gc.set_threshold, *gc.get_threshold())
            bridge: PgChangeBridge | None = None
            if supports_notify(engine):
                # Other processes' writes reach this one at once (LISTEN), and ours reach them.
                bridge = PgChangeBridge(
                    engine, notifier, publish=role != "sip", listen=role != "api"
                )
                await bridge.start()
                running.push_async_callback(bridge.stop)
            loader: SnapshotLoader | None = None
            counter: ActiveCounter = limiter
            if role in ("serve", "sip"):
                loader, counter = await running.enter_async_context(
                    _sip_edge(settings, engine, notifier, limiter)
                )
            worker: asyncio.Task[None]
            server: uvicorn.Server | None = None
            if role == "sip":
                interval = SIP_ROLE_POLL_SECONDS if bridge is None else SIP_ROLE_SAFETY_POLL_SECONDS
                worker = asyncio.create_task(_poll_store(notifier, interval))
                # No admin API in this role, but its metrics must be scrapable: http.host:port
                # serves GET /metrics only (a small server thread, off the SIP loop).
                metrics_server, _thread = start_http_server(
                    settings.http.port, addr=settings.http.host, registry=REGISTRY
                )
                running.callback(metrics_server.shutdown)
                log.info("metrics on http://%s:%d/metrics", settings.http.host, settings.http.port)
            else:
                edge = (counter, loader) if loader is not None else None
                counts = None
                if loader is None and (counts := _cluster_channels(settings, limiter, None)):
                    # The `api` role holds no calls: it shows the cluster's, read from Redis.
                    counts.start()
                    running.push_async_callback(counts.stop)
                server = _api_server(settings, engine, notifier, edge, counts)
                worker = asyncio.create_task(server.serve())
                log.info("admin API on http://%s:%d", settings.http.host, settings.http.port)
            # Start-up objects (modules, settings, the first snapshot) live for the whole process:
            # out of the collector's reach, full collections stop stalling the SIP loop
            # (measured: INVITE->200 p99 from ~500 ms to ~8 ms at 100 calls/s, bench/README.md).
            gc.collect()
            gc.freeze()
            # The collector's total cost is what survives a young collection, whatever the
            # threshold; its pause is proportional to the threshold. Finished transactions are
            # records the collector does not track (stack.wait_records), so few objects survive:
            # at 2,000 a young collection takes about 1 ms (at 50,000: 35 ms, every few seconds,
            # which was the INVITE->200 p99), and the middle generation is collected 100 times
            # less often (about 15 ms). bench.call_path --gc-threshold compares them.
            gc.set_threshold(*GC_THRESHOLDS)
            stop_wait = asyncio.create_task(stopping.wait())
            await asyncio.wait([stop_wait, worker], return_when=asyncio.FIRST_COMPLETED)
            stop_wait.cancel()
            if server is not None:
                server.should_exit = True  # graceful: in-flight API requests finish
            else:
                worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
    finally:
        await engine.dispose()
