"""The admin API: `create_app(settings)` builds the FastAPI application."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from sipedge import __version__
from sipedge.api.body_limit import BodySizeLimit
from sipedge.api.deps import Services
from sipedge.api.errors import install_error_handlers
from sipedge.api.gateway_resolver import DnsGatewayResolver, GatewayResolver
from sipedge.api.rate_limit import SlidingWindowLimiter
from sipedge.api.routers import (
    agents,
    calls,
    carrier_ips,
    gateways,
    health,
    numbers,
    outbound,
    trunks,
)
from sipedge.config import Settings
from sipedge.store.changes import ChangeNotifier
from sipedge.store.db import make_engine, make_session_factory
from sipedge.store.token_cache import TokenCache


def _no_calls(_trunk_id: str) -> int:
    return 0


def create_app(
    settings: Settings,
    *,
    resolver: GatewayResolver | None = None,
    notifier: ChangeNotifier | None = None,
    active_calls: Callable[[str], int] | None = None,
    engine: AsyncEngine | None = None,
    applied: Callable[[], Awaitable[None]] | None = None,
) -> FastAPI:
    """Build the API.

    `resolver` resolves gateway hosts (default: DNS through dnspython); `notifier` receives a
    change after every committed write (default: a private one, `app.state.services.notifier`);
    `active_calls(trunk_id)` gives the live channel count (default 0); `engine` shares an existing
    engine (default: one made from `settings.database.url`, disposed when the app shuts down);
    `applied()` is awaited after each committed write, before the response (in `serve`: until the
    SIP edge's routing snapshot includes the change, so the next INVITE already sees it).
    """
    owns_engine = engine is None
    db_engine = (
        engine
        if engine is not None
        else make_engine(settings.database.url, echo=settings.database.echo)
    )
    services = Services(
        settings=settings,
        engine=db_engine,
        sessions=make_session_factory(db_engine),
        resolver=resolver if resolver is not None else DnsGatewayResolver(),
        notifier=notifier if notifier is not None else ChangeNotifier(),
        active_calls=active_calls if active_calls is not None else _no_calls,
        rate_limiter=SlidingWindowLimiter(settings.http.rate_limit_per_minute, window=60.0),
        tokens=TokenCache(settings.http.token_cache_seconds),
        applied=applied,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owns_engine:
                await db_engine.dispose()

    app = FastAPI(
        title="sipedge admin API",
        version=__version__,
        description="SIP trunks, gateways, carrier IPs and numbers (interface 1.0.0); agents (/v2).",
        lifespan=lifespan,
        docs_url="/docs",
    )
    app.state.services = services
    install_error_handlers(app)
    # Routes are matched in order: the hot outbound-call paths go first (no path overlaps).
    for module in (health, outbound, trunks, gateways, carrier_ips, numbers, calls, agents):
        app.include_router(module.router)
    app.add_middleware(BodySizeLimit, max_body_bytes=settings.http.max_body_bytes)
    return app
