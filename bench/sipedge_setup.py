"""A throwaway sipedge for the load benches: a SQLite database prepared through the admin API and
a config file, for the real `sipedge sip` (inbound ramp) or `sipedge serve` (outbound ramp) process
(the production code path, database included).

The database gets one agent (store, as `tests/api/conftest.py` does), one token, and one trunk
created with `POST /trunk/trunks` through the real app (in-process, over httpx's ASGI transport):
carrier IP 127.0.0.1/32, UDP, PCMU/PCMA, number NUMBER -> the agent. The API caps `channels` at
1000, which the 2,000-call hold test would hit, so the channel limit is then raised in the
database (`UPDATE trunks SET channels = ...`): the bench measures the call path, not the limiter's
refusal (SQLite's `ignore_check_constraints` pragma steps over the schema's CHECK).

With ``gateway_port`` (the outbound bench) the agent uses `telephony_provider = "sip-trunk"`, the
trunk gets one gateway at 127.0.0.1:``gateway_port``, and the config adds the admin API on
127.0.0.1:``http_port`` without its per-token rate limit, and allows private (loopback) gateways.
The token and the agent id are written to ``sipedge-bench.json`` (``read_identity``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from sqlalchemy import text

from sipedge.api.app import create_app
from sipedge.config import Settings
from sipedge.store.agents import create_agent
from sipedge.store.db import make_engine, make_session_factory
from sipedge.store.migrate import upgrade
from sipedge.store.ownership import Principal
from sipedge.store.tokens import create_token

NUMBER = "+14155550100"
CHANNELS = 100_000
USER = "bench"

CONFIG = """\
# Written by bench/sipedge_setup.py for one benchmark run.
[database]
url = "sqlite:///{db}"
auto_migrate = false

[sip]
host = "127.0.0.1"
port = {port}
# Far above any rate the bench offers: flood protection stays on the path but never refuses.
[flood]
carrier_rate = 10000000
invite_rate = 10000000

[agents]
endpoint = "sip:127.0.0.1:{agent_port}"

[logging]
level = "WARNING"
"""

OUTBOUND_CONFIG = """
[http]
host = "127.0.0.1"
port = {http_port}
rate_limit_per_minute = 0

[security]
allow_private_gateways = true
"""
IDENTITY = "sipedge-bench.json"


def write_config(
    workdir: Path,
    *,
    port: int,
    agent_port: int,
    gateway_port: int | None = None,
    http_port: int | None = None,
) -> Path:
    """Write the TOML config and prepare its database; returns the config path."""
    db = workdir / "sipedge-bench.db"
    path = workdir / "sipedge-bench.toml"
    fresh = not db.exists()
    config = CONFIG.format(db=db, port=port, agent_port=agent_port)
    if gateway_port is not None:
        config += OUTBOUND_CONFIG.format(http_port=http_port or 8080)
    path.write_text(config)
    if fresh:  # a second process in the same work directory reuses the database
        url = f"sqlite:///{db}"
        upgrade(url)
        identity = asyncio.run(_populate(url, gateway_port))
        (workdir / IDENTITY).write_text(json.dumps(identity))
    return path


def read_identity(workdir: Path) -> dict[str, str]:
    """``{"token": ..., "agent_id": ..., "trunk_id": ...}`` of the database ``write_config`` made."""
    identity: dict[str, str] = json.loads((workdir / IDENTITY).read_text())
    return identity


async def _populate(url: str, gateway_port: int | None = None) -> dict[str, str]:
    engine = make_engine(url)
    outbound = gateway_port is not None
    try:
        async with make_session_factory(engine)() as session:
            agent = await create_agent(
                session,
                owner=Principal(USER),
                agent_name="bench agent",
                telephony_provider="sip-trunk" if outbound else None,
            )
            token = await create_token(session, user_id=USER)
            await session.commit()
            agent_id = agent.id
        settings = Settings(
            database={"url": url},  # type: ignore[arg-type]
            security={"allow_private_gateways": outbound},  # type: ignore[arg-type]
        )
        app = create_app(settings, engine=engine)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://bench",
            headers={"Authorization": f"Bearer {token}"},
        ) as client:
            body: dict[str, object] = {
                "name": "bench carrier",
                "channels": 1000,
                "transport": "udp",
                "codecs": "PCMU,PCMA",
                "ip_acls": [{"cidr": "127.0.0.1/32"}],
                "numbers": [{"e164": NUMBER, "agent_id": agent_id}],
            }
            if outbound:
                body["gateways"] = [{"host": "127.0.0.1", "port": gateway_port, "priority": 0}]
            response = await client.post("/trunk/trunks", json=body)
            if response.status_code != 201:
                raise RuntimeError(f"creating the bench trunk failed: {response.text}")
            trunk_id = response.json()["id"]
        async with engine.begin() as connection:
            # The schema's CHECK (1..1000) mirrors the API; SQLite lets one connection skip it.
            await connection.execute(text("PRAGMA ignore_check_constraints = ON"))
            await connection.execute(text("UPDATE trunks SET channels = :n"), {"n": CHANNELS})
    finally:
        await engine.dispose()
    return {"token": token, "agent_id": agent_id, "trunk_id": trunk_id}
