"""Alembic migrations from code: `upgrade(database_url)` for the CLI, `upgrade_async` for async
callers, and `schema_diff` for the test that keeps migrations and models in agreement."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from sipedge.store.db import make_engine
from sipedge.store.models import Base

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic Config pointing at the packaged migrations (no alembic.ini on disk)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _upgrade_sync(connection: Connection, revision: str) -> None:
    command.upgrade(alembic_config(connection), revision)


def _downgrade_sync(connection: Connection, revision: str) -> None:
    command.downgrade(alembic_config(connection), revision)


# pg_advisory_xact_lock key of the migrations (any constant the application uses for nothing else).
MIGRATION_LOCK = 0x5_1BED_6E


async def upgrade_engine(engine: AsyncEngine, revision: str = "head") -> None:
    """Apply migrations up to `revision` on an async engine's database.

    On PostgreSQL one transaction-scoped advisory lock serialises processes that start together
    (every role migrates at start): the first applies the DDL, the others then find the schema
    at head. SQLite's own write lock does the same there."""
    async with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK}
            )
        await connection.run_sync(_upgrade_sync, revision)


async def upgrade_async(database_url: str, revision: str = "head") -> None:
    engine = make_engine(database_url)
    try:
        await upgrade_engine(engine, revision)
    finally:
        await engine.dispose()


async def _downgrade_async(database_url: str, revision: str) -> None:
    engine = make_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_downgrade_sync, revision)
    finally:
        await engine.dispose()


def _run(work: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine to completion from sync code, even while this thread runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(work)
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, work).result()


def upgrade(database_url: str, revision: str = "head") -> None:
    """Apply migrations up to `revision` (sync entry point for the CLI and `serve`)."""
    _run(upgrade_async(database_url, revision))


def downgrade(database_url: str, revision: str) -> None:
    """Revert migrations down to `revision` (`"base"`: an empty database)."""
    _run(_downgrade_async(database_url, revision))


def _diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def schema_diff(engine: AsyncEngine) -> list[Any]:
    """Differences between the database's schema and the models (empty when they agree)."""
    async with engine.connect() as connection:
        return await connection.run_sync(_diff)
