"""`sipedge serve` / `sipedge api`: migrations, a first token, the admin API and /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response

from sipedge.config import Settings
from sipedge.metrics import REGISTRY

log = logging.getLogger("sipedge.serve")

FIRST_USER = "admin"


def serve(settings: Settings, *, with_sip: bool) -> int:
    """Run until interrupted. Returns the process exit code.

    `with_sip` is accepted for the `serve` role; the SIP listener joins here with the inbound
    call path (issue 4). Until then both roles serve the admin API.
    """
    from sipedge.store.migrate import upgrade

    if settings.database.auto_migrate:
        upgrade(settings.database.url)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_run(settings, with_sip=with_sip))
    return 0


async def _issue_first_token(settings: Settings) -> str | None:
    """On an empty database, create a token so the user can call the API at once."""
    from sipedge.store import tokens
    from sipedge.store.db import make_engine, make_session_factory

    engine = make_engine(settings.database.url)
    try:
        async with make_session_factory(engine)() as session:
            if await tokens.any_tokens(session):
                return None
            token = await tokens.create_token(session, user_id=FIRST_USER)
            await session.commit()
            return token
    finally:
        await engine.dispose()


async def _metrics(_request: Request) -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


async def _run(settings: Settings, *, with_sip: bool) -> None:
    from sipedge.api.app import create_app
    from sipedge.stack.loop import install_uvloop

    install_uvloop()
    first_token = await _issue_first_token(settings)
    if first_token is not None:
        # Printed once, to the terminal only: the database keeps nothing but its hash.
        print(
            f"\nFirst admin token (user {FIRST_USER!r}); it is shown only now:\n\n"
            f"    export SIPEDGE_TOKEN={first_token}\n",
            flush=True,
        )
    app = create_app(settings)
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
    log.info("admin API on http://%s:%d", settings.http.host, settings.http.port)
    await server.serve()
