"""Writes call records in batches, off the call path (SPEC §5 Robustness).

`CallRecordWriter.record()` only appends to a bounded in-memory queue: it never blocks, awaits or
raises. A background task writes what is queued every `flush_interval` seconds, or as soon as a
full batch is waiting, one INSERT (executemany) per batch of up to `batch_size` rows. A full queue
drops its oldest record; a batch that still fails after `max_attempts` tries is given up. Both
losses are counted in `sipedge_call_records_lost_total` and logged (rate-limited).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from sqlalchemy import String, insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge import metrics
from sipedge.metrics import RecordLoss
from sipedge.runtime.ports import CallRecordEvent, CallRecordSink
from sipedge.store.models import CallRecord
from sipedge.store.types import new_id, utcnow

__all__ = ["CallRecordWriter", "record_row"]

log = logging.getLogger(__name__)

WARN_EVERY = 60.0  # seconds between two warnings about lost records
_LOST = {reason: metrics.call_records_lost_total.labels(reason.value) for reason in RecordLoss}


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


class CallRecordWriter:
    """Implements `runtime.ports.CallRecordSink`. `start()` on the loop, `await stop()` to end.

    `session_factory` makes sessions on the store; `batch_size` rows per INSERT; `flush_interval`
    seconds between writes of a partial batch; `max_queue` records held at most (the oldest is
    dropped beyond it); `max_attempts` tries per batch, `retry_delay` seconds apart.
    """

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
        if batch_size < 1 or max_queue < 1 or max_attempts < 1:
            raise ValueError("batch_size, max_queue and max_attempts must be at least 1")
        self._sessions = session_factory
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._max_queue = max_queue
        self._max_attempts = max_attempts
        self._retry_delay = retry_delay
        self._clock = clock
        self._queue: deque[CallRecordEvent] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._flush_lock = asyncio.Lock()
        self._last_warning = -WARN_EVERY
        self._unwarned = 0  # losses since the last warning
        self.written = 0
        self.lost = 0

    @property
    def pending(self) -> int:
        return len(self._queue)

    def record(self, event: CallRecordEvent) -> None:
        """Queue `event`. Never blocks or raises: a full queue drops its oldest record."""
        if len(self._queue) >= self._max_queue:
            self._queue.popleft()
            self._lose(1, RecordLoss.QUEUE_FULL)
        self._queue.append(event)
        if len(self._queue) >= self._batch_size:
            self._wake.set()

    def start(self) -> None:
        """Start the background writer on the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="call-record-writer"
            )

    async def stop(self) -> None:
        """Write everything queued, then end the background task."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            await task
        await self.flush()

    async def flush(self) -> None:
        """Write every queued record now (in batches)."""
        async with self._flush_lock:
            while self._queue:
                count = min(self._batch_size, len(self._queue))
                batch = [self._queue.popleft() for _ in range(count)]
                await self._write(batch)

    async def _run(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):  # the interval passed: write a partial batch
                await asyncio.wait_for(self._wake.wait(), timeout=self._flush_interval)
            self._wake.clear()
            await self.flush()

    async def _write(self, batch: list[CallRecordEvent]) -> None:
        for attempt in range(1, self._max_attempts + 1):
            try:
                rows = [record_row(event) for event in batch]
                async with self._sessions() as session:
                    await session.execute(insert(CallRecord), rows)
                    await session.commit()
            except Exception as exc:  # counted and logged below; the writer must keep running
                if attempt < self._max_attempts:
                    log.debug("call record batch failed (attempt %d): %r", attempt, exc)
                    await asyncio.sleep(self._retry_delay * attempt)
                    continue
                log.error(
                    "gave up writing %d call records after %d attempts",
                    len(batch),
                    attempt,
                    exc_info=True,
                )
                self._lose(len(batch), RecordLoss.WRITE_FAILED)
                return
            self.written += len(batch)
            metrics.call_records_written_total.inc(len(batch))
            return

    def _lose(self, count: int, reason: RecordLoss) -> None:
        self.lost += count
        _LOST[reason].inc(count)
        self._unwarned += count
        now = self._clock()
        if now - self._last_warning >= WARN_EVERY:
            log.warning(
                "%d call records lost (%s); %d lost in all", self._unwarned, reason, self.lost
            )
            self._last_warning = now
            self._unwarned = 0


def _implements_port(instance: CallRecordWriter) -> CallRecordSink:
    return instance  # mypy checks CallRecordWriter against the port's Protocol
