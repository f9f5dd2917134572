"""Helpers for the tests of the runtime's storage side (loader, call records, activity)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from sipedge.metrics import REGISTRY
from sipedge.runtime.ports import CallRecordEvent

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def metric(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def call_event(trunk_id: str, n: int = 0, **fields: Any) -> CallRecordEvent:
    """A finished inbound call `n` seconds after T0, answered, 30 s long."""
    started = T0 + timedelta(seconds=n)
    values: dict[str, Any] = {
        "run_id": f"run-{n}",
        "trunk_id": trunk_id,
        "direction": "inbound",
        "started_at": started,
        "answered_at": started + timedelta(seconds=2),
        "ended_at": started + timedelta(seconds=32),
        "final_sip_code": 200,
        "decided_by": "answered",
        "from_number": "+14155550100",
        "to_number": "+14155550123",
        "carrier_call_id": f"carrier-{n}@203.0.113.5",
        "agent_call_id": f"agent-{n}@127.0.0.1",
        "hangup_side": "carrier",
        **fields,
    }
    return CallRecordEvent(**values)


@dataclass
class Statements:
    """SQL statements the engine ran (by executemany or not), while counting."""

    seen: list[tuple[str, bool]] = field(default_factory=list)

    def count(self, prefix: str) -> int:
        return sum(1 for sql, _many in self.seen if sql.lstrip().upper().startswith(prefix))


@contextmanager
def statements(engine: AsyncEngine) -> Iterator[Statements]:
    """Count the cursor executions of `engine` (one per INSERT/UPDATE, executemany included)."""
    found = Statements()

    def before(_conn: Any, _cursor: Any, sql: str, _params: Any, _context: Any, many: bool) -> None:
        found.seen.append((sql, many))

    event.listen(engine.sync_engine, "before_cursor_execute", before)
    try:
        yield found
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", before)


class FailingSessions:
    """A session factory whose sessions cannot be opened (the database is down)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        raise ConnectionRefusedError("database down")


class FlakySessions:
    """Delegates to `sessions` after failing the first `failures` attempts, and while `down`."""

    def __init__(self, sessions: Any, failures: int = 0) -> None:
        self._sessions = sessions
        self.failures = failures
        self.down = False
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        if self.down or self.calls <= self.failures:
            raise ConnectionRefusedError("database down")
        return self._sessions()


class GatedSessions:
    """Sessions that open only once `gate` is set; `entered` is set when one is waiting."""

    def __init__(self, sessions: Any) -> None:
        self._sessions = sessions
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()

    def __call__(self) -> Any:
        return _Gated(self)


class _Gated:
    def __init__(self, owner: GatedSessions) -> None:
        self._owner = owner
        self._session: Any = None

    async def __aenter__(self) -> Any:
        self._owner.entered.set()
        await self._owner.gate.wait()
        self._session = self._owner._sessions()
        return await self._session.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._session.__aexit__(*exc)
