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

from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge import metrics
from sipedge.metrics import RecordLoss
from sipedge.runtime.batch_writer import BatchWriter
from sipedge.runtime.ports import CallStatusEvent, CallStatusSink
from sipedge.runtime.webhook_payload import encode_body, payload_of
from sipedge.store.types import utcnow
from sipedge.store.webhook_outbox import OutboxEntry, agents_with_webhook, enqueue

__all__ = ["WebhookOutboxWriter", "entry_of"]

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


class WebhookOutboxWriter(BatchWriter[CallStatusEvent]):
    """Implements `runtime.ports.CallStatusSink`. Parameters as `BatchWriter`'s; `on_written()`
    is called after a batch stored at least one event (to nudge the sender)."""

    what = "call status events"

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
        super().__init__(
            session_factory,
            lost_counters=_LOST,
            batch_size=batch_size,
            flush_interval=flush_interval,
            max_queue=max_queue,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
        )
        self.on_written = on_written

    def status_changed(self, event: CallStatusEvent) -> None:
        """Queue `event`. Never blocks or raises: a full queue drops its oldest event."""
        if event.agent_id is None:
            return  # no agent, no webhook (a refusal before the agent step)
        self._offer(event)

    async def _persist(self, session: AsyncSession, batch: list[CallStatusEvent]) -> int:
        # Most agents have no webhook: their events are dropped before a JSON body is built.
        wanted = await agents_with_webhook(
            session, {event.agent_id for event in batch if event.agent_id}
        )
        entries = [entry_of(event) for event in batch if event.agent_id in wanted]
        return await enqueue(session, entries, now=utcnow()) if entries else 0

    def _stored(self, count: int) -> None:
        if count and self.on_written is not None:
            self.on_written()


def _implements_port(instance: WebhookOutboxWriter) -> CallStatusSink:
    return instance  # mypy checks WebhookOutboxWriter against the port's Protocol
