"""API tests run through the real app on SQLite and PostgreSQL.

One database per backend and test session, created by the Alembic migrations only; tables are
emptied before each test. PostgreSQL: a uniquely named database on SIPEDGE_TEST_PG_URL (default
postgresql://postgres@127.0.0.1:5432/test), dropped at the end; unreachable -> the PG tests fail,
unless SIPEDGE_TEST_SKIP_PG=1.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from sipedge.api.app import create_app
from sipedge.api.gateway_resolver import GatewayHostError
from sipedge.config import Settings
from sipedge.store.agents import create_agent
from sipedge.store.changes import Change, ChangeNotifier
from sipedge.store.db import make_engine, make_session_factory
from sipedge.store.migrate import upgrade
from sipedge.store.ownership import Principal
from sipedge.store.tokens import create_token

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
TABLES = (
    "webhook_outbox",
    "webhook_secrets",
    "outbound_calls",
    "call_records",
    "trunk_numbers",
    "carrier_ips",
    "gateways",
    "trunks",
    "agents",
    "api_tokens",
)

# Hosts the fake resolver knows; anything else "does not resolve".
DNS: dict[str, list[str]] = {
    "sip.carrier.example": ["8.8.8.8", "8.8.4.4"],
    "sip2.carrier.example": ["9.9.9.9"],
    "shared-ip.carrier.example": ["8.8.4.4"],
    "private.carrier.example": ["10.0.0.5", "192.168.1.1"],
    "mixed.carrier.example": ["10.0.0.5", "1.1.1.1"],
    "loop.carrier.example": ["127.0.0.1"],
}


class FakeResolver:
    def __init__(self) -> None:
        self.records = dict(DNS)
        self.lookups: list[str] = []

    async def resolve(self, host: str) -> list[str]:
        self.lookups.append(host)
        if host not in self.records:
            raise GatewayHostError("gateway host does not resolve")
        return list(self.records[host])


def _pg_admin_dsn() -> str:
    return os.environ.get("SIPEDGE_TEST_PG_URL", DEFAULT_PG_URL)


async def _pg_execute(dsn: str, statement: str) -> None:
    connection = await asyncpg.connect(dsn, timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def create_pg_database() -> str:
    admin = _pg_admin_dsn()
    name = f"sipedge_t_{secrets.token_hex(6)}"
    try:
        asyncio.run(_pg_execute(admin, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        message = f"PostgreSQL unreachable at {admin}: {type(exc).__name__}"
        if os.environ.get("SIPEDGE_TEST_SKIP_PG") == "1":
            pytest.skip(message)
        pytest.fail(message + " (set SIPEDGE_TEST_SKIP_PG=1 to skip the PostgreSQL tests)")
    return make_url(admin).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(url: str) -> None:
    name = make_url(url).database
    asyncio.run(_pg_execute(_pg_admin_dsn(), f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(
    scope="session",
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated database per backend for the whole test session."""
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("db") / "sipedge.db"
        url = f"sqlite:///{path}"
        upgrade(url)
        yield url
        return
    url = create_pg_database()
    try:
        upgrade(url)
        yield url
    finally:
        drop_pg_database(url)


async def _empty_tables(engine: AsyncEngine) -> None:
    # DELETE, not TRUNCATE: on these tiny tables it is several times faster on PostgreSQL.
    async with engine.begin() as connection:
        for table in TABLES:
            await connection.execute(text(f"DELETE FROM {table}"))


@dataclass
class Api:
    """The app under test plus helpers to make principals, agents and clients."""

    engine: AsyncEngine
    url: str
    resolver: FakeResolver
    notifier: ChangeNotifier
    calls: dict[str, int]
    changes: list[Change] = field(default_factory=list)
    _clients: list[httpx.AsyncClient] = field(default_factory=list)
    _apps: dict[bool, Any] = field(default_factory=dict)

    def app(self, *, allow_private: bool = False) -> Any:
        if allow_private not in self._apps:
            settings = Settings(
                database={"url": self.url},  # type: ignore[arg-type]
                security={  # type: ignore[arg-type]
                    "allow_private_gateways": allow_private,
                    "allow_private_webhooks": allow_private,
                },
                http={"max_body_bytes": 65_536, "rate_limit_per_minute": 0},  # type: ignore[arg-type]
            )
            self._apps[allow_private] = create_app(
                settings,
                resolver=self.resolver,
                notifier=self.notifier,
                active_calls=lambda trunk_id: self.calls.get(trunk_id, 0),
                engine=self.engine,
            )
        return self._apps[allow_private]

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    async def token(
        self, user: str = "alice", org: str | None = None, sub: str | None = None
    ) -> str:
        async with make_session_factory(self.engine)() as session:
            token = await create_token(
                session, user_id=user, organization_id=org, sub_account_id=sub
            )
            await session.commit()
        return token

    def raw_client(
        self, headers: dict[str, str] | None = None, *, allow_private: bool = False
    ) -> httpx.AsyncClient:
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app(allow_private=allow_private)),
            base_url="http://sipedge.test",
            headers=headers or {},
        )
        self._clients.append(client)
        return client

    async def client(
        self,
        user: str = "alice",
        org: str | None = None,
        sub: str | None = None,
        *,
        allow_private: bool = False,
    ) -> httpx.AsyncClient:
        token = await self.token(user, org, sub)
        return self.raw_client({"Authorization": f"Bearer {token}"}, allow_private=allow_private)

    async def agent(
        self, user: str = "alice", org: str | None = None, sub: str | None = None
    ) -> str:
        async with make_session_factory(self.engine)() as session:
            agent = await create_agent(
                session, owner=Principal(user, org, sub), agent_name=f"agent of {user}"
            )
            await session.commit()
        return agent.id

    async def scalar(self, sql: str, **params: Any) -> Any:
        async with self.engine.connect() as connection:
            return (await connection.execute(text(sql), params)).scalar()

    async def execute(self, sql: str, **params: Any) -> None:
        async with self.engine.begin() as connection:
            await connection.execute(text(sql), params)

    async def close(self) -> None:
        for client in self._clients:
            await client.aclose()


@pytest.fixture
async def api(database_url: str) -> AsyncIterator[Api]:
    engine = make_engine(database_url)
    await _empty_tables(engine)
    notifier = ChangeNotifier()
    harness = Api(
        engine=engine, url=database_url, resolver=FakeResolver(), notifier=notifier, calls={}
    )
    notifier.subscribe(harness.changes.append)
    try:
        yield harness
    finally:
        await harness.close()
        await engine.dispose()


@pytest.fixture
async def alice(api: Api) -> httpx.AsyncClient:
    return await api.client("alice")
