"""Call status changes (SPEC §5 statuses) as ``CallStatusEvent``s for the webhook outbox.

An inbound call is ``ringing`` when the first 18x reaches the carrier, ``in-progress`` when the
agent's 2xx does, and ends with exactly one final status, derived from its call record:

- answered before it ended -> ``completed`` (whoever hung up, and why, is in ``telephony_data``);
- the carrier cancelled -> ``canceled``;
- 486/600/603 (the agent's busy or decline, or the trunk's channel limit) -> ``busy``;
- the agent rang but never answered (ring timeout, Timer B after an 18x) -> ``no-answer``;
- anything else (agent down or failing, no common codec, a refusal) -> ``failed``.

A refused inbound call that passed the carrier ACL step emits only its final status. Emitting
never raises into the call path: a failing sink is logged and the call goes on.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sipedge.metrics import CallEnd
from sipedge.runtime.ports import CallRecordEvent, CallStatus, CallStatusEvent, CallStatusSink

if TYPE_CHECKING:
    from sipedge.runtime.b2bua import Call

__all__ = ["BUSY_CODES", "InboundStatus", "final_status", "inbound_status", "status_of_record"]

log = logging.getLogger(__name__)

BUSY_CODES = frozenset({486, 600, 603})


def final_status(*, decided_by: str, answered: bool, rang: bool, sip_code: int) -> CallStatus:
    """The final status of a call that ended as ``decided_by`` with ``sip_code`` (see above)."""
    if answered:
        return "completed"
    if decided_by == CallEnd.CANCELED:
        return "canceled"
    if sip_code in BUSY_CODES:
        return "busy"
    if rang and decided_by == CallEnd.AGENT_TIMEOUT:
        return "no-answer"
    return "failed"


def status_of_record(record: CallRecordEvent, *, rang: bool = False) -> CallStatusEvent:
    """The final status event of a finished (or refused) call, from its call record."""
    return CallStatusEvent(
        run_id=record.run_id,
        status=final_status(
            decided_by=record.decided_by,
            answered=record.answered_at is not None,
            rang=rang,
            sip_code=record.final_sip_code,
        ),
        direction=record.direction,
        created_at=record.started_at,
        updated_at=record.ended_at,
        agent_id=record.agent_id,
        trunk_id=record.trunk_id,
        number_id=record.number_id,
        from_number=record.from_number,
        to_number=record.to_number,
        sip_call_id=record.carrier_call_id,
        hangup_by=record.hangup_side,
        hangup_reason=record.decided_by,
        sip_status=record.final_sip_code,
        duration_s=record.duration_seconds,
    )


def emit(sink: CallStatusSink, event: CallStatusEvent) -> None:
    """Hand ``event`` to ``sink``; a sink that raises (it must not) never breaks the call."""
    try:
        sink.status_changed(event)
    except Exception:
        log.exception("call status sink failed")


class InboundStatus:
    """The status changes of one inbound call, each emitted at most once, the final one once."""

    __slots__ = ("_base", "_rang", "_sent", "_sink")

    def __init__(self, sink: CallStatusSink, base: CallStatusEvent) -> None:
        self._sink = sink
        self._base = base
        self._sent: set[str] = set()
        self._rang = False

    @property
    def sent(self) -> frozenset[str]:
        return frozenset(self._sent)

    def ringing(self, sip_status: int) -> None:
        """A provisional answer was relayed to the carrier (only the first 18x counts)."""
        if not 180 <= sip_status < 190:
            return
        self._rang = True
        self._emit("ringing", sip_status)

    def answered(self, sip_status: int) -> None:
        """The agent's 2xx was relayed to the carrier."""
        self._emit("in-progress", sip_status)

    def ended(self, record: CallRecordEvent) -> None:
        """The call ended with ``record``: its one final status."""
        if "final" in self._sent:
            return
        self._sent.add("final")
        emit(self._sink, status_of_record(record, rang=self._rang))

    def _emit(self, status: CallStatus, sip_status: int) -> None:
        if status in self._sent or "final" in self._sent:
            return
        self._sent.add(status)
        emit(
            self._sink,
            replace(self._base, status=status, updated_at=datetime.now(UTC), sip_status=sip_status),
        )


class _Unreported(InboundStatus):
    """The reporter of a call whose agent has no webhook: nothing to build or queue."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    @property
    def sent(self) -> frozenset[str]:
        return frozenset()

    def ringing(self, sip_status: int) -> None:
        return None

    def answered(self, sip_status: int) -> None:
        return None

    def ended(self, record: CallRecordEvent) -> None:
        return None


UNREPORTED = _Unreported()


def inbound_status(call: Call) -> InboundStatus:
    """The status reporter of a new inbound call (built once its legs exist)."""
    route = call.route
    if not route.agent.has_webhook:
        return UNREPORTED  # the routing snapshot says so; reloaded when an agent changes
    base = CallStatusEvent(
        run_id=call.run_id,
        status="ringing",
        direction="inbound",
        created_at=call.started_at,
        updated_at=call.started_at,
        agent_id=route.agent.id,
        trunk_id=route.trunk.id,
        number_id=route.number.id,
        from_number=call.from_number,
        to_number=route.number.e164,
        sip_call_id=call.carrier.call_id,
    )
    return InboundStatus(call.svc.statuses, base)
