"""The Alembic migrations create exactly the models' schema, on both databases."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from api.conftest import Api, create_pg_database, drop_pg_database
from sipedge.store.db import async_url, make_engine
from sipedge.store.migrate import (
    downgrade,
    schema_diff,
    upgrade,
    upgrade_async,
    upgrade_engine,
)
from sipedge.store.models import Base


async def test_migrations_match_the_models(api: Api) -> None:
    # the session database was created by the migrations only
    assert await schema_diff(api.engine) == []
    async with api.engine.connect() as connection:
        tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
        version = await connection.exec_driver_sql("SELECT version_num FROM alembic_version")
        assert version.scalar() == "0006"
    assert set(Base.metadata.tables) | {"alembic_version"} == tables


async def test_upgrade_is_idempotent(api: Api) -> None:
    await upgrade_engine(api.engine)
    assert await schema_diff(api.engine) == []


@pytest.mark.parametrize(
    ("plain", "driver"),
    [
        ("sqlite:///./x.db", "sqlite+aiosqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite"),
        ("postgresql://u@h:5432/db", "postgresql+asyncpg"),
        ("postgres://u@h/db", "postgresql+asyncpg"),
        ("postgresql+psycopg2://u@h/db", "postgresql+asyncpg"),
    ],
)
def test_plain_urls_get_async_drivers(plain: str, driver: str) -> None:
    assert async_url(plain).drivername == driver


def test_other_databases_are_refused() -> None:
    with pytest.raises(ValueError):
        async_url("mysql://u@h/db")


async def test_sync_upgrade_works_inside_a_running_loop(api: Api) -> None:
    """`upgrade(url)` is what the CLI calls; from async code it runs in a worker thread."""
    upgrade(api.url)
    assert await schema_diff(api.engine) == []


def test_downgrade_and_upgrade_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'roundtrip.db'}"
    upgrade(url)
    downgrade(url, "base")

    async def tables() -> set[str]:
        engine = make_engine(url)
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
        finally:
            await engine.dispose()

    assert asyncio.run(tables()) == {"alembic_version"}
    upgrade(url)
    assert set(Base.metadata.tables) <= asyncio.run(tables())


@pytest.fixture
def empty_pg_database() -> Iterator[str]:
    url = create_pg_database()
    try:
        yield url
    finally:
        drop_pg_database(url)


@pytest.mark.postgres
async def test_nodes_starting_together_migrate_one_after_another(empty_pg_database: str) -> None:
    # Every role migrates at start (database.auto_migrate): several nodes starting at once on an
    # empty PostgreSQL must not run the same DDL side by side (an advisory lock serialises them;
    # the later ones find the schema at head).
    await asyncio.gather(*(upgrade_async(empty_pg_database) for _ in range(4)))
    engine = make_engine(empty_pg_database)
    try:
        assert await schema_diff(engine) == []
    finally:
        await engine.dispose()
