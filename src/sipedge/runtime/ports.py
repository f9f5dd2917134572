"""The seams between the SIP call path and the storage side of the runtime.

The call path (handlers, B2BUA) only ever reads `SnapshotSource.current` and pushes events into
sinks that never block and never await; the storage side drains them in batches, off the path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from sipedge.edge.snapshot import RoutingSnapshot

Direction = Literal["inbound", "outbound"]
HangupSide = Literal["carrier", "agent", "edge"]


class SnapshotSource(Protocol):
    """Holds the routing snapshot in force; swapped whole by the loader."""

    @property
    def current(self) -> RoutingSnapshot: ...


@dataclass(frozen=True, slots=True)
class CallRecordEvent:
    """A finished (or refused) call, as the call path saw it. Written asynchronously in batches.

    `decided_by` names the rule that ended the call: an edge `MetricReason` value for a refusal
    ("channels", "codecs", ...), else "answered", "agent_failure", "agent_timeout", "canceled",
    "max_duration", "trunk_deleted", ...
    """

    run_id: str
    trunk_id: str
    direction: Direction
    started_at: datetime
    ended_at: datetime
    final_sip_code: int
    decided_by: str
    number_id: str | None = None
    agent_id: str | None = None
    from_number: str | None = None
    to_number: str | None = None
    carrier_call_id: str | None = None
    agent_call_id: str | None = None
    answered_at: datetime | None = None
    hangup_side: HangupSide | None = None

    @property
    def duration_seconds(self) -> float | None:
        if self.answered_at is None:
            return None
        return max(0.0, (self.ended_at - self.answered_at).total_seconds())


class CallRecordSink(Protocol):
    def record(self, event: CallRecordEvent) -> None:
        """Queue a record; must not block or raise on the call path."""
        ...


class ActivitySink(Protocol):
    """Trunk/number activity seen by the call path: `last_*_at` and health, throttled by the sink."""

    def call_crossed(
        self, *, trunk_id: str, number_id: str | None, direction: Direction, at: datetime
    ) -> None:
        """A call crossed the trunk (inbound accepted at ACL step, or any carrier response)."""
        ...

    def call_outcome(self, *, trunk_id: str, outcome: str, at: datetime) -> None:
        """A call's outcome for the trunk's health: "answered" (an inbound or outbound call was
        answered), or how an outbound attempt ended ("carrier_failure" or the callee's answer)."""
        ...


CallStatus = Literal[
    "queued",
    "scheduled",
    "ringing",
    "in-progress",
    "completed",
    "busy",
    "no-answer",
    "failed",
    "canceled",
]
FINAL_STATUSES: frozenset[str] = frozenset({"completed", "busy", "no-answer", "failed", "canceled"})


@dataclass(frozen=True, slots=True)
class CallStatusEvent:
    """A call reached `status` (SPEC §5) at `updated_at`; the agent's webhook receives it.

    `created_at` is when the call began (INVITE received, or `POST /call`). The remaining fields
    are the payload's `telephony_data` (`provider` is always "sip-trunk"): `sip_call_id` is the
    carrier leg's Call-ID; `hangup_by`, `hangup_reason` (a `decided_by` value) and `duration_s`
    (answer to end) are set on final statuses; `sip_status` is the SIP code behind the status.
    """

    run_id: str
    status: CallStatus
    direction: Direction
    created_at: datetime
    updated_at: datetime
    agent_id: str | None = None
    trunk_id: str | None = None
    number_id: str | None = None
    from_number: str | None = None
    to_number: str | None = None
    sip_call_id: str | None = None
    hangup_by: HangupSide | None = None
    hangup_reason: str | None = None
    sip_status: int | None = None
    duration_s: float | None = None
    user_data: Mapping[str, Any] | None = None


class CallStatusSink(Protocol):
    def status_changed(self, event: CallStatusEvent) -> None:
        """Queue a status change for the webhook outbox; must not block or raise."""
        ...


class NoStatuses:
    """The `CallStatusSink` that drops everything (processes and tests without webhooks)."""

    def status_changed(self, event: CallStatusEvent) -> None:
        return None
