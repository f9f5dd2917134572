"""A bounded in-memory queue drained to the store in batches, off the call path.

`_offer()` only appends: it never blocks, awaits or raises. A background task writes what is
queued every `flush_interval` seconds, or as soon as a full batch is waiting. A full queue drops
its oldest item; a batch that still fails after `max_attempts` tries is given up. Both losses are
counted (the subclass's counters, by `RecordLoss`) and logged at most once a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge.metrics import RecordLoss

__all__ = ["WARN_EVERY", "BatchWriter"]

log = logging.getLogger(__name__)

WARN_EVERY = 60.0  # seconds between two warnings about lost items
T = TypeVar("T")


class BatchWriter(Generic[T]):
    """`start()` on the loop, `await stop()` to end; subclasses say how a batch is stored.

    `batch_size` items per write; `flush_interval` seconds between writes of a partial batch;
    `max_queue` items held at most (the oldest is dropped beyond it); `max_attempts` tries per
    batch, `retry_delay` seconds apart (growing linearly).
    """

    what = "items"  # for log lines

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        *,
        lost_counters: Mapping[RecordLoss, Counter],
        batch_size: int,
        flush_interval: float,
        max_queue: int,
        max_attempts: int,
        retry_delay: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if batch_size < 1 or max_queue < 1 or max_attempts < 1:
            raise ValueError("batch_size, max_queue and max_attempts must be at least 1")
        self._sessions = session_factory
        self._lost_counters = lost_counters
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._max_queue = max_queue
        self._max_attempts = max_attempts
        self._retry_delay = retry_delay
        self._clock = clock
        self._queue: deque[T] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._flush_lock = asyncio.Lock()
        self._last_warning = -WARN_EVERY
        self._unwarned = 0  # losses since the last warning
        self.written = 0
        self.lost = 0

    async def _persist(self, session: AsyncSession, batch: list[T]) -> int:
        """Store `batch` in `session` (the caller commits); returns how many were stored."""
        raise NotImplementedError

    def _stored(self, count: int) -> None:
        """After a committed batch of `count` stored items (metrics, nudges)."""

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _offer(self, item: T) -> None:
        """Queue `item`. Never blocks or raises: a full queue drops its oldest item."""
        if len(self._queue) >= self._max_queue:
            self._queue.popleft()
            self._lose(1, RecordLoss.QUEUE_FULL)
        self._queue.append(item)
        if len(self._queue) >= self._batch_size:
            self._wake.set()

    def start(self) -> None:
        """Start the background writer on the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=type(self).__name__
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
        """Write every queued item now (in batches, in order)."""
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

    async def _write(self, batch: list[T]) -> None:
        for attempt in range(1, self._max_attempts + 1):
            try:
                async with self._sessions() as session:
                    stored = await self._persist(session, batch)
                    await session.commit()
            except Exception as exc:  # counted and logged below; the writer must keep running
                if attempt < self._max_attempts:
                    log.debug("%s batch failed (attempt %d): %r", self.what, attempt, exc)
                    await asyncio.sleep(self._retry_delay * attempt)
                    continue
                log.error(
                    "gave up writing %d %s after %d attempts",
                    len(batch),
                    self.what,
                    attempt,
                    exc_info=True,
                )
                self._lose(len(batch), RecordLoss.WRITE_FAILED)
                return
            self.written += stored
            self._stored(stored)
            return

    def _lose(self, count: int, reason: RecordLoss) -> None:
        self.lost += count
        self._lost_counters[reason].inc(count)
        self._unwarned += count
        now = self._clock()
        if now - self._last_warning >= WARN_EVERY:  # a full queue must not flood the log
            log.warning(
                "%d %s lost (%s); %d lost in all", self._unwarned, self.what, reason, self.lost
            )
            self._last_warning = now
            self._unwarned = 0
