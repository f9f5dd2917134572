"""The one-hop SQLite driver (store.sqlite_driver) behaves as the stock aiosqlite adapter does:
rows, rowcounts, errors, transactions, streaming; and a statement is one worker job."""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiosqlite.core
import pytest
from sqlalchemy import exc, text
from sqlalchemy.ext.asyncio import AsyncEngine

from sipedge.store.db import make_engine, make_session_factory
from sipedge.store.sqlite_driver import OneHopCursor


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'driver.db'}")
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)"))
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """The calls aiosqlite runs on its worker thread, by name."""
    seen: collections.Counter[str] = collections.Counter()
    original = aiosqlite.core.Connection._execute

    async def spy(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        seen[getattr(fn, "__name__", repr(fn))] += 1
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.core.Connection, "_execute", spy)
    yield seen


async def test_rows_rowcounts_and_returning(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        many = await connection.execute(
            text("INSERT INTO t (v) VALUES (:v)"), [{"v": "a"}, {"v": "b"}, {"v": "c"}]
        )
        assert many.rowcount == 3
        one = await connection.execute(text("INSERT INTO t (v) VALUES ('d')"))
        assert one.lastrowid == 4
        updated = await connection.execute(text("UPDATE t SET v = v || '!' WHERE id > 2"))
        assert updated.rowcount == 2
        returned = await connection.execute(
            text("UPDATE t SET v = 'z' WHERE id = 1 RETURNING id, v")
        )
        assert returned.all() == [(1, "z")]
    async with engine.connect() as connection:
        result = await connection.execute(text("SELECT id, v FROM t ORDER BY id"))
        assert list(result.keys()) == ["id", "v"]
        assert result.fetchone() == (1, "z")
        assert result.fetchmany(2) == [(2, "b"), (3, "c!")]
        assert result.fetchall() == [(4, "d!")]
        assert (await connection.execute(text("SELECT 1 WHERE 0"))).first() is None


async def test_errors_are_the_dbapi_errors(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
        with pytest.raises(exc.IntegrityError):
            await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
        with pytest.raises(exc.OperationalError):
            await connection.execute(text("SELECT nope FROM t"))


async def test_commit_and_rollback(engine: AsyncEngine) -> None:
    sessions = make_session_factory(engine)
    async with sessions() as session:
        await session.execute(text("INSERT INTO t (v) VALUES ('kept')"))
        await session.commit()
        await session.execute(text("INSERT INTO t (v) VALUES ('undone')"))
        await session.rollback()
    async with sessions() as session:
        await session.execute(text("INSERT INTO t (v) VALUES ('dropped at close')"))
    async with engine.connect() as connection:
        assert (await connection.execute(text("SELECT v FROM t"))).scalars().all() == ["kept"]


async def test_streaming_still_works(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.execute(
            text("INSERT INTO t (v) VALUES (:v)"), [{"v": str(n)} for n in range(50)]
        )
    async with engine.connect() as connection:
        result = await connection.stream(text("SELECT v FROM t ORDER BY id"))
        assert [row[0] async for row in result] == [str(n) for n in range(50)]


async def test_a_statement_is_one_worker_job(
    engine: AsyncEngine, jobs: collections.Counter[str]
) -> None:
    sessions = make_session_factory(engine)
    async with sessions() as session:  # a connection from the pool, warmed
        await session.execute(text("SELECT 1"))
    jobs.clear()
    async with sessions() as session:  # read-only: no COMMIT or ROLLBACK job at all
        await session.execute(text("SELECT count(*) FROM t"))
        await session.execute(text("SELECT 1"))
    assert dict(jobs) == {"_run": 2}
    jobs.clear()
    async with sessions() as session:  # a write: the statement and its COMMIT
        await session.execute(text("INSERT INTO t (v) VALUES ('x')"))
        await session.commit()
    assert dict(jobs) == {"_run": 1, "commit": 1}


def test_the_engine_uses_the_one_hop_cursor(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    assert engine.dialect.name == "sqlite" and engine.url.drivername == "sqlite+aiosqlite"
    assert engine.dialect.dbapi is not None
    assert type(engine.dialect.dbapi).__name__ == "_OneHopDbapi"
    assert OneHopCursor.server_side is False
