"""Engines and sessions: plain `sqlite:///…` / `postgresql://…` URLs get their async driver here."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from sipedge.store.sqlite_driver import one_hop_dbapi

# aiosqlite logs every statement with its parameters at DEBUG, which would put trunk passwords in
# the log whenever logging.level is DEBUG: its logger never goes below INFO.
logging.getLogger("aiosqlite").setLevel(logging.INFO)

_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}


def async_url(url: str) -> URL:
    """`sqlite:///x.db` -> `sqlite+aiosqlite:///x.db`, `postgres(ql)://…` -> `postgresql+asyncpg://…`.

    URLs that already name an async driver are kept; anything else is a `ValueError`.
    """
    parsed = make_url(url)
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "postgres":
        backend = "postgresql"
    if backend not in _ASYNC_DRIVERS:
        raise ValueError("database URL must be sqlite:// or postgresql://")
    wanted = _ASYNC_DRIVERS[backend]
    if driver in {"aiosqlite", "asyncpg"}:
        return parsed.set(drivername=f"{backend}+{driver}")
    return parsed.set(drivername=wanted)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=5000")
    finally:
        cursor.close()


def make_engine(url: str, *, echo: bool = False) -> AsyncEngine:
    """An async engine for a plain or async database URL (SQLite: foreign keys on, WAL, and one
    thread hop per statement through `sqlite_driver`)."""
    target = async_url(url)
    sqlite = target.get_backend_name() == "sqlite"
    options: dict[str, Any] = {"module": one_hop_dbapi()} if sqlite else {}
    engine = create_async_engine(
        target,
        echo=echo,
        hide_parameters=True,  # a failed statement must never carry a trunk password into a log
        pool_pre_ping=not sqlite,
        **options,
    )
    if sqlite:
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


# What the hot paths' store functions execute on: an ORM session, or a plain connection where
# the ORM's per-statement bookkeeping is not needed (`POST /call`, `GET /call/{run_id}`).
Executor = AsyncSession | AsyncConnection


def make_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
