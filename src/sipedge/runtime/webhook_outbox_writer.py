"""Writes call status events into the webhook outbox in batches, off the call path.

`WebhookOutboxWriter.status_changed()` (the `CallStatusSink` of the edge and the dialer) only
appends to a bounded in-memory queue: it never blocks, awaits or raises. A background task writes
what is queued every `flush_interval` seconds, or at once when a full batch waits: one transaction
per batch that looks up the agents' `webhook_url`s, numbers each run's events and inserts the rows
(`store.webhook_outbox.enqueue`). Events of agents without a webhook are not stored. Once written,
events survive restarts; the sender is nudged (`on_written`). A full queue drops its oldest event;
a batch that still fails after `max_attempts` is given up; both are counted in
`sipedge_webhook_events_lost_total` and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge import metrics
from sipedge.metrics import RecordLoss
from sipedge.runtime.ports import CallStatusEvent, CallStatusSink
from sipedge.runtime.webhook_payload import encode_body, payload_of
from sipedge.store.types import utcnow
from sipedge.store.webhook_outbox import OutboxEntry, enqueue

__all__ = ["WebhookOutboxWriter", "entry_of"]

log = logging.getLogger(__name__)

WARN_EVERY = 60.0  # seconds between two warnings about lost events

_LOST = {reason: metrics.webhook_events_lost_total.labels(reason.value) for reason in RecordLoss}


def entry_of(event: CallStatusEvent) -> OutboxEntry:
    """The outbox entry of an event (its agent is known)."""
    assert event.agent_id is not None
    return OutboxEntry(
        run_id=event.run_id,
        agent_id=event.agent_id,
        status=event.status,
        body=encode_body(payload_of(event)),
    )


class WebhookOutboxWriter:
    """Implements `runtime.ports.CallStatusSink`. `start()` on the loop, `await stop()` to end."""

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        *,
        batch_size: int = 200,
        flush_interval: float = 0.2,
        max_queue: int = 20_000,
        max_attempts: int = 3,
        retry_delay: float = 0.2,
        on_written: Callable[[], None] | None = None,
    ) -> None:
        if batch_size < 1 or max_queue < 1 or max_attempts < 1:
            raise ValueError("batch_size, max_queue and max_attempts must be at least 1")
        self._sessions = session_factory
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._max_queue = max_queue
        self._max_attempts = max_attempts
        self._retry_delay = retry_delay
        self.on_written = on_written
        self._queue: deque[CallStatusEvent] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._flush_lock = asyncio.Lock()
        self._last_warning = -WARN_EVERY
        self.written = 0
        self.lost = 0

    @property
    def pending(self) -> int:
        return len(self._queue)

    def status_changed(self, event: CallStatusEvent) -> None:
        """Queue `event`. Never blocks or raises: a full queue drops its oldest event."""
        if event.agent_id is None:
            return  # no agent, no webhook (a refusal before the agent step)
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
                self._run(), name="webhook-outbox-writer"
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
        """Write every queued event now (in batches, in order)."""
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

    async def _write(self, batch: list[CallStatusEvent]) -> None:
        for attempt in range(1, self._max_attempts + 1):
            try:
                entries = [entry_of(event) for event in batch]
                async with self._sessions() as session:
                    added = await enqueue(session, entries, now=utcnow())
                    await session.commit()
            except Exception as exc:  # counted and logged below; the writer must keep running
                if attempt < self._max_attempts:
                    log.debug("webhook outbox batch failed (attempt %d): %r", attempt, exc)
                    await asyncio.sleep(self._retry_delay * attempt)
                    continue
                log.error(
                    "gave up writing %d call status events after %d attempts",
                    len(batch),
                    attempt,
                    exc_info=True,
                )
                self._lose(len(batch), RecordLoss.WRITE_FAILED)
                return
            self.written += added
            if added and self.on_written is not None:
                self.on_written()
            return

    def _lose(self, count: int, reason: RecordLoss) -> None:
        self.lost += count
        _LOST[reason].inc(count)
        now = time.monotonic()
        if now - self._last_warning >= WARN_EVERY:  # a full queue must not flood the log
            self._last_warning = now
            log.warning("call status events lost (%s); %d lost in all", reason, self.lost)


def _implements_port(instance: WebhookOutboxWriter) -> CallStatusSink:
    return instance  # mypy checks WebhookOutboxWriter against the port's Protocol
