"""Writes call records in batches, off the call path (SPEC §5 Robustness).

`CallRecordWriter.record()` only appends to a bounded in-memory queue: it never blocks, awaits or
raises. A background task writes what is queued every `flush_interval` seconds, or as soon as a
full batch is waiting, one INSERT (executemany) per batch of up to `batch_size` rows. A full queue
drops its oldest record; a batch that still fails after `max_attempts` tries is given up. Both
losses are counted in `sipedge_call_records_lost_total` and logged (rate-limited).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from sqlalchemy import String, Table, insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge import metrics
from sipedge.metrics import RecordLoss
from sipedge.runtime.batch_writer import BatchWriter
from sipedge.runtime.ports import CallRecordEvent, CallRecordSink
from sipedge.store.models import CallRecord
from sipedge.store.types import new_id, utcnow

__all__ = ["CallRecordWriter", "record_row"]

_LOST = {reason: metrics.call_records_lost_total.labels(reason.value) for reason in RecordLoss}


_INSERT = insert(cast(Table, CallRecord.__table__))
CHUNK = 20  # rows per INSERT statement within a batch's transaction (see _persist)


def _width(column: str) -> int | None:
    kind = CallRecord.__table__.c[column].type
    return kind.length if isinstance(kind, String) else None


_TEXT_COLUMNS = {
    name: width
    for name in (
        "run_id",
        "trunk_id",
        "number_id",
        "agent_id",
        "direction",
        "from_number",
        "to_number",
        "carrier_call_id",
        "agent_call_id",
        "decided_by",
        "hangup_side",
    )
    if (width := _width(name)) is not None
}


def _clip(value: str | None, width: int) -> str | None:
    """Carrier-supplied text (Call-IDs, numbers) can exceed a column: keep what fits."""
    if value is None or len(value) <= width:
        return value
    return value[:width]


def record_row(event: CallRecordEvent) -> dict[str, Any]:
    """The `call_records` row for an event (ids and stamps added, long text clipped)."""
    now = utcnow()
    row: dict[str, Any] = {
        "id": new_id(),
        "created_at": now,
        "updated_at": now,
        "is_deleted": False,
        "deleted_at": None,
        "run_id": event.run_id,
        "trunk_id": event.trunk_id,
        "number_id": event.number_id,
        "agent_id": event.agent_id,
        "direction": event.direction,
        "from_number": event.from_number,
        "to_number": event.to_number,
        "carrier_call_id": event.carrier_call_id,
        "agent_call_id": event.agent_call_id,
        "started_at": event.started_at,
        "answered_at": event.answered_at,
        "ended_at": event.ended_at,
        "final_sip_code": event.final_sip_code,
        "decided_by": event.decided_by,
        "hangup_side": event.hangup_side,
        "duration_seconds": event.duration_seconds,
    }
    for name, width in _TEXT_COLUMNS.items():
        row[name] = _clip(row[name], width)
    return row


class CallRecordWriter(BatchWriter[CallRecordEvent]):
    """Implements `runtime.ports.CallRecordSink`: one INSERT (executemany) per batch.

    Parameters as `BatchWriter`'s.
    """

    what = "call records"

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        *,
        batch_size: int = 200,
        flush_interval: float = 0.5,
        max_queue: int = 20_000,
        max_attempts: int = 3,
        retry_delay: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            session_factory,
            lost_counters=_LOST,
            batch_size=batch_size,
            flush_interval=flush_interval,
            max_queue=max_queue,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            clock=clock,
        )

    def record(self, event: CallRecordEvent) -> None:
        """Queue `event`. Never blocks or raises: a full queue drops its oldest record."""
        self._offer(event)

    async def _persist(self, session: AsyncSession, batch: list[CallRecordEvent]) -> int:
        # Core insert on the table, not the ORM bulk path: same executemany, a fraction of the
        # Python work per row (the writer runs on the SIP loop). In statements of CHUNK rows,
        # one transaction: preparing a row's parameters costs ~50 us of the loop, and between
        # two statements the loop serves the datagrams that arrived (200 rows at once held it
        # for ~12 ms: an INVITE->200 p99 of its own).
        for start in range(0, len(batch), CHUNK):
            rows = [record_row(event) for event in batch[start : start + CHUNK]]
            await session.execute(_INSERT, rows)
        return len(batch)

    def _stored(self, count: int) -> None:
        metrics.call_records_written_total.inc(count)


def _implements_port(instance: CallRecordWriter) -> CallRecordSink:
    return instance  # mypy checks CallRecordWriter against the port's Protocol
