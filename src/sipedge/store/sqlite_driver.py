"""SQLite through aiosqlite with one thread hop per statement instead of four to six.

aiosqlite runs each sqlite3 call on its connection's own thread; SQLAlchemy's adapter makes one
such call per DB-API step: create a cursor, execute, fetch the rows, close the cursor, and a
ROLLBACK when a session ends and another when the pool takes the connection back. Each call is a
hop between the event loop's thread and the worker's (a queue put, a GIL hand-over, a wake-up of
the loop through its self-pipe): about half of a simple `GET /call/{run_id}`'s CPU
(`bench/api_path.py`), and every hop of a write transaction keeps SQLite's write lock held
while the busy loop gets round to the next step.

Here a statement is one job on the worker thread (cursor, execute, fetch everything, close), and
COMMIT / ROLLBACK are skipped when the connection has no transaction open (sqlite3 reports that
without a hop; the pool's ROLLBACK after a read-only session is then free). Results are fetched
whole, as SQLAlchemy's adapter already does for client-side cursors; server-side (streaming)
cursors keep the stock implementation.

Wired by `db.make_engine` through `create_async_engine(module=...)`: the URL stays
`sqlite+aiosqlite://`, only the DB-API module object differs.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Sequence
from typing import Any

from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util.concurrency import await_

__all__ = ["OneHopCursor", "one_hop_dbapi"]

_Result = tuple[Any, list[Any], int, int | None]  # description, rows, rowcount, lastrowid


def _run(connection: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> _Result:
    """On the worker thread: the whole statement, from cursor to close."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


class OneHopCursor:
    """The DB-API cursor SQLAlchemy's SQLite dialect uses, each `execute` one worker job."""

    server_side = False

    def __init__(self, adapt_connection: OneHopConnection) -> None:
        self._adapt_connection = adapt_connection
        self._rows: deque[Any] = deque()
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self.arraysize = 1

    def _execute(self, operation: str, parameters: Any, many: bool) -> None:
        adapt = self._adapt_connection
        try:
            driver = adapt._connection  # the aiosqlite Connection
            result: _Result = await_(adapt._one_job(driver, operation, parameters, many))
        except Exception as error:  # noqa: BLE001 - re-raised by the adapter (DB-API mapping)
            adapt._handle_exception(error)
        self.description, rows, self.rowcount, self.lastrowid = result
        self._rows = deque(rows)

    def execute(self, operation: str, parameters: Any = None) -> None:
        self._execute(operation, parameters, False)

    def executemany(self, operation: str, seq_of_parameters: Sequence[Any]) -> None:
        self._execute(operation, seq_of_parameters, True)

    async def _async_soft_close(self) -> None:
        """SQLAlchemy's async layer closes the driver cursor early; here it is closed already."""

    def close(self) -> None:
        self._rows.clear()

    def fetchone(self) -> Any:
        return self._rows.popleft() if self._rows else None

    def fetchmany(self, size: int | None = None) -> list[Any]:
        rows = self._rows
        count = min(self.arraysize if size is None else size, len(rows))
        return [rows.popleft() for _ in range(count)]

    def fetchall(self) -> list[Any]:
        rows = list(self._rows)
        self._rows.clear()
        return rows

    def setinputsizes(self, *_sizes: Any) -> None:
        return None

    def setoutputsize(self, *_args: Any) -> None:
        return None

    def __iter__(self) -> Any:
        while self._rows:
            yield self._rows.popleft()


class OneHopConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()

    def cursor(self, server_side: bool = False) -> Any:
        if server_side:
            return super().cursor(server_side=True)
        return OneHopCursor(self)

    async def _one_job(self, driver: Any, operation: str, parameters: Any, many: bool) -> _Result:
        # The adapter's mutex keeps concurrent users of one connection in order, as the stock
        # cursor does.
        async with self._execute_mutex:
            result: _Result = await driver._execute(_run, driver._conn, operation, parameters, many)
            return result

    def _in_transaction(self) -> bool:
        # `in_transaction` reads sqlite3_get_autocommit(): no thread check, no hop. The connection
        # is used by one task at a time, so no statement of it runs meanwhile.
        driver = self._connection
        raw = driver._connection
        return raw is not None and bool(raw.in_transaction)

    def rollback(self) -> None:
        if self._in_transaction():
            super().rollback()

    def commit(self) -> None:
        if self._in_transaction():
            super().commit()


class _OneHopDbapi(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> OneHopConnection:
        stock = super().connect(*arg, **kw)
        return OneHopConnection(self, stock._connection)


def one_hop_dbapi() -> Any:
    """The DB-API module object for `create_async_engine(..., module=one_hop_dbapi())`."""
    return _OneHopDbapi(__import__("aiosqlite"), __import__("sqlite3"))
