"""Trunk and number activity: `last_*_at` and trunk health, written in the background.

The call path calls `call_crossed` / `call_outcome`; both only touch dictionaries and a
bounded queue. `last_inbound_at` / `last_outbound_at` are taken at most once per `throttle` per
row and column (SPEC §4: at most once a minute). Health follows `edge.health.transition`,
applied to the trunk's *stored* state (`health_state`, `health_failures`) in the transaction that
writes the result, the rows locked on PostgreSQL: outcomes of several nodes add up (two failures
here and one there make a degraded trunk) and no node writes over another's newer state from a
stale copy. (SQLite deployments are one process, whose tracker flushes one batch at a time.)
A background task writes what changed every `flush_interval` seconds (bulk UPDATEs by primary
key, one transaction); a failed write is counted, logged once per failure streak and retried
with the next flush.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Update, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge import metrics
from sipedge.edge.health import HealthOutcome, HealthState, transition
from sipedge.runtime.ports import ActivitySink, Direction
from sipedge.store.models import Base, Trunk
from sipedge.store.types import utcnow

__all__ = ["ActivityTracker", "health_outcome"]

log = logging.getLogger(__name__)

_TABLES = {name: Base.metadata.tables[name] for name in ("trunks", "trunk_numbers")}
_COLUMNS = {"inbound": "last_inbound_at", "outbound": "last_outbound_at"}
_SEED_CHUNK = 500
Key = tuple[str, str, str]  # (table, row id, column)


def health_outcome(outcome: str) -> HealthOutcome:
    """An outbound attempt's outcome as the health machine sees it: "answered",
    "carrier_failure", any `HealthOutcome` value, else (busy, no answer, declined, ...) the
    callee's own refusal."""
    try:
        return HealthOutcome(outcome)
    except ValueError:
        return HealthOutcome.CALLEE_REFUSED


class ActivityTracker:
    """Implements `runtime.ports.ActivitySink`. `start()` on the loop, `await stop()` to end.

    `session_factory` makes sessions on the store; `now()` is the throttle's clock (UTC);
    `throttle` is the least time between two writes of one row's `last_*_at` column;
    `flush_interval` seconds between background writes; `max_outcomes` health events held while
    waiting to be applied (the oldest is dropped beyond it).
    """

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        *,
        now: Callable[[], datetime] = utcnow,
        throttle: timedelta = timedelta(minutes=1),
        flush_interval: float = 1.0,
        max_outcomes: int = 100_000,
    ) -> None:
        self._sessions = session_factory
        self._now = now
        self._throttle = throttle
        self._flush_interval = flush_interval
        self._taken: dict[Key, datetime] = {}  # when a key's value was last taken (now())
        self._times: dict[Key, datetime] = {}  # values waiting to be written
        self._outcomes: deque[tuple[str, HealthOutcome]] = deque(maxlen=max_outcomes)
        self._states: dict[str, HealthState] = {}  # health last read or written, per trunk
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()  # set by stop()
        self._failing = False

    # -- the call path: never awaits, never raises ---------------------------------------------

    def call_crossed(
        self, *, trunk_id: str, number_id: str | None, direction: Direction, at: datetime
    ) -> None:
        column = _COLUMNS[direction]
        self._take(("trunks", trunk_id, column), at)
        if number_id is not None:
            self._take(("trunk_numbers", number_id, column), at)
        outcome = (
            HealthOutcome.INBOUND_ACCEPTED
            if direction == "inbound"
            else HealthOutcome.CARRIER_RESPONDED
        )
        self._outcomes.append((trunk_id, outcome))

    def call_outcome(self, *, trunk_id: str, outcome: str, at: datetime) -> None:
        self._outcomes.append((trunk_id, health_outcome(outcome)))

    def _take(self, key: Key, at: datetime) -> None:
        if at.tzinfo is None:  # the store keeps aware UTC stamps only; never fail a whole flush
            at = at.replace(tzinfo=UTC)
        now = self._now()
        taken = self._taken.get(key)
        if taken is not None and now - taken < self._throttle:
            return
        self._taken[key] = now
        self._times[key] = at

    def health(self, trunk_id: str) -> HealthState | None:
        """The in-memory health of a trunk seen since start (None before its first flush)."""
        return self._states.get(trunk_id)

    # -- background ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background writer on the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="activity")

    async def stop(self) -> None:
        """End the background task after writing what is pending."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            await task
        await self.flush()

    async def _run(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):  # the interval passed: write what changed
                await asyncio.wait_for(self._wake.wait(), timeout=self._flush_interval)
            await self.flush()

    async def flush(self) -> bool:
        """Apply queued outcomes and write what changed. False when the write failed (kept)."""
        async with self._lock:
            if not (self._times or self._outcomes):
                self._prune()
                return True
            times, self._times = self._times, {}
            outcomes = list(self._outcomes)
            self._outcomes.clear()
            try:
                async with self._sessions() as session:
                    health = await self._apply_outcomes(session, outcomes)
                    await _write(session, times, health)
                    await session.commit()
            except Exception as exc:  # counted and logged; the pending writes are retried
                metrics.activity_write_failures_total.inc()
                if not self._failing:
                    log.warning("writing trunk activity failed (retried): %s", exc, exc_info=True)
                self._failing = True
                for key, value in times.items():
                    self._times.setdefault(key, value)  # newer values taken meanwhile win
                self._outcomes.extendleft(reversed(outcomes))  # applied on the next flush
                return False
            self._failing = False
            self._states.update(health)
            self._prune()
            return True

    async def _apply_outcomes(
        self, session: AsyncSession, outcomes: list[tuple[str, HealthOutcome]]
    ) -> dict[str, HealthState]:
        """The outcomes applied, in order, to their trunks' stored health (read in this
        transaction, rows locked on PostgreSQL); returns the states that changed."""
        if not outcomes:
            return {}
        stored = await _stored_health(session, sorted({tid for tid, _ in outcomes}))
        states = dict(stored)
        for trunk_id, outcome in outcomes:
            state = states.get(trunk_id)
            if state is not None:  # None: no such trunk in the store
                states[trunk_id] = transition(state, outcome)
        self._states.update(stored)
        return {tid: state for tid, state in states.items() if state != stored[tid]}

    def _prune(self) -> None:
        """Forget throttle entries whose minute is over (they no longer hold anything back)."""
        now = self._now()
        self._taken = {k: t for k, t in self._taken.items() if now - t < self._throttle}


async def _stored_health(session: AsyncSession, trunk_ids: list[str]) -> dict[str, HealthState]:
    found: dict[str, HealthState] = {}
    for start in range(0, len(trunk_ids), _SEED_CHUNK):
        chunk = trunk_ids[start : start + _SEED_CHUNK]
        rows = await session.execute(
            select(Trunk.id, Trunk.health_state, Trunk.health_failures)
            .where(Trunk.id.in_(chunk))
            .order_by(Trunk.id)  # locks taken in one order: two nodes never deadlock
            .with_for_update()
        )
        for trunk_id, name, failures in rows:
            found[trunk_id] = HealthState.from_stored(name, failures)
    return found


_SET_HEALTH = (
    update(_TABLES["trunks"])
    .where(_TABLES["trunks"].c.id == bindparam("row_id"))
    .values(health_state=bindparam("state"), health_failures=bindparam("failures"))
)


def _set_by_id(table: str, column: str) -> Update:
    """`UPDATE table SET column = :value WHERE id = :row_id`, run once per row (executemany).

    Core, not the ORM's bulk update: a row that is gone is simply not matched."""
    target = _TABLES[table]
    return (
        update(target)
        .where(target.c.id == bindparam("row_id"))
        .values({column: bindparam("value")})
    )


async def _write(
    session: AsyncSession, times: dict[Key, datetime], health: dict[str, HealthState]
) -> None:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (table, row_id, column), value in times.items():
        grouped.setdefault((table, column), []).append({"row_id": row_id, "value": value})
    connection = await session.connection()
    if health:
        params = [
            {"row_id": tid, "state": state.health.value, "failures": state.failures}
            for tid, state in sorted(health.items())
        ]
        await connection.execute(_SET_HEALTH, params)
    for (table, column), params in sorted(grouped.items()):
        await connection.execute(_set_by_id(table, column), params)


def _implements_port(instance: ActivityTracker) -> ActivitySink:
    return instance  # mypy checks ActivityTracker against the port's Protocol
