"""A throwaway sipedge for the load bench: a SQLite database prepared through the admin API and
a config file, for the real `sipedge sip` process (the production code path, database included).

The database gets one agent (store, as `tests/api/conftest.py` does), one token, and one trunk
created with `POST /trunk/trunks` through the real app (in-process, over httpx's ASGI transport):
carrier IP 127.0.0.1/32, UDP, PCMU/PCMA, number NUMBER -> the agent. The API caps `channels` at
1000, which the 2,000-call hold test would hit, so the channel limit is then raised in the
database (`UPDATE trunks SET channels = ...`): the bench measures the call path, not the limiter's
refusal (SQLite's `ignore_check_constraints` pragma steps over the schema's CHECK).
"""

from __future__ import annotations

import asyncio
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


def write_config(workdir: Path, *, port: int, agent_port: int) -> Path:
    """Write the TOML config and prepare its database; returns the config path."""
    db = workdir / "sipedge-bench.db"
    path = workdir / "sipedge-bench.toml"
    fresh = not db.exists()
    path.write_text(CONFIG.format(db=db, port=port, agent_port=agent_port))
    if fresh:  # a second process in the same work directory reuses the database
        url = f"sqlite:///{db}"
        upgrade(url)
        asyncio.run(_populate(url))
    return path


async def _populate(url: str) -> None:
    engine = make_engine(url)
    try:
        async with make_session_factory(engine)() as session:
            agent = await create_agent(session, owner=Principal(USER), agent_name="bench agent")
            token = await create_token(session, user_id=USER)
            await session.commit()
            agent_id = agent.id
        app = create_app(Settings(database={"url": url}), engine=engine)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://bench",
            headers={"Authorization": f"Bearer {token}"},
        ) as client:
            response = await client.post(
                "/trunk/trunks",
                json={
                    "name": "bench carrier",
                    "channels": 1000,
                    "transport": "udp",
                    "codecs": "PCMU,PCMA",
                    "ip_acls": [{"cidr": "127.0.0.1/32"}],
                    "numbers": [{"e164": NUMBER, "agent_id": agent_id}],
                },
            )
            if response.status_code != 201:
                raise RuntimeError(f"creating the bench trunk failed: {response.text}")
        async with engine.begin() as connection:
            # The schema's CHECK (1..1000) mirrors the API; SQLite lets one connection skip it.
            await connection.execute(text("PRAGMA ignore_check_constraints = ON"))
            await connection.execute(text("UPDATE trunks SET channels = :n"), {"n": CHANNELS})
    finally:
        await engine.dispose()
