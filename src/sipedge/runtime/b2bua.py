"""The B2BUA: one inbound call = a carrier dialog (we are its UAS) and an agent dialog (we are its
UAC), bridged by ``Call``.

Everything runs synchronously from transaction-layer callbacks; a call owns a few timer handles
(``CallTimers``). Every way a call ends goes through ``Call.end``, which is idempotent: the channel
is released exactly once, exactly one ``CallRecordEvent`` is emitted, metrics move once.

Agent failures (see ``responses.agent_failure_answer``): 486/600/603 are relayed as-is (the agent's
own answer); any other error response, no answer (Timer B, the ring bound) or a transport error
becomes 503 with ``Warning: 399 sipedge "agent unavailable"``.
"""

from __future__ import annotations

import enum
import logging
from datetime import UTC, datetime

from sipedge.edge.codecs import filter_sdp
from sipedge.edge.decisions import Reject
from sipedge.edge.inbound import InboundRoute
from sipedge.metrics import ENDING_CHILDREN, CallEnd, active_calls, invite_first_response_seconds
from sipedge.runtime.call_status import inbound_status
from sipedge.runtime.call_timers import CallTimers
from sipedge.runtime.legs import EdgeServices, Leg
from sipedge.runtime.messages import build_agent_invite, build_cancel, caller_number
from sipedge.runtime.ports import CallRecordEvent, HangupSide
from sipedge.runtime.relay import answer_pending
from sipedge.runtime.responses import (
    RELAYED_AGENT_FAILURES,
    agent_failure_answer,
    edge_warning,
    relay_response,
    respond,
)
from sipedge.sip.dialog import Dialog, DialogError
from sipedge.sip.headers import parse_via
from sipedge.sip.message import Request, Response
from sipedge.sip.randomness import uuid4
from sipedge.sip.transaction import TerminationReason, TxState
from sipedge.stack.transactions import ClientTransaction, ServerTransaction, SipTransport

__all__ = ["Call", "Phase"]

log = logging.getLogger(__name__)


class Phase(enum.Enum):
    CALLING = "calling"  # agent leg in progress, carrier got 100 (and maybe 18x)
    ANSWERED = "answered"  # 2xx sent to the carrier, its ACK not yet seen
    CONFIRMED = "confirmed"
    ENDED = "ended"


class Call:
    """One bridged inbound call. Created by ``EdgeServices.start_call`` once the pipeline
    accepted the INVITE (holding the channel)."""

    # Slots: a held call's own attributes cost no per-instance dict (subclasses may add one).
    __slots__ = (
        "_caller",
        "agent",
        "agent_ack",
        "agent_invite",
        "agent_tx",
        "answered_at",
        "carrier",
        "carrier_tag",
        "deferred_ack",
        "final_code",
        "first_response_sent",
        "invite",
        "invite_tx",
        "phase",
        "route",
        "run_id",
        "started_at",
        "started_mono",
        "status",
        "svc",
        "timers",
    )

    def __init__(
        self,
        svc: EdgeServices,
        *,
        route: InboundRoute,
        invite: Request,
        tx: ServerTransaction,
        source: tuple[str, int],
        transport: SipTransport,
        started_at: datetime,
        started_mono: float,
    ) -> None:
        self.svc = svc
        self.route = route
        self.run_id = svc.new_run_id()
        self.phase = Phase.CALLING
        self.started_at = started_at
        self.started_mono = started_mono
        self.answered_at: datetime | None = None
        self.final_code: int | None = None
        self.first_response_sent = False
        self.timers = CallTimers(svc.call_deadlines)
        self.invite = invite
        self.invite_tx = tx
        self.carrier_tag = svc.new_tag()
        self._caller = caller_number(invite.from_)  # read for the agent, the status and the record
        self.carrier = Leg("carrier", invite.call_id, transport, source)
        agent_transport = svc.agent_transport
        self.agent = Leg("agent", f"{uuid4().hex}@sipedge", agent_transport, svc.agent_peer)
        self.agent_invite = build_agent_invite(
            route=route,
            run_id=self.run_id,
            target=svc.agent_target,
            via=svc.via(agent_transport, svc.agent_peer),
            contact=svc.contact(agent_transport, svc.agent_peer),
            call_id=self.agent.call_id,
            from_tag=svc.new_tag(),
            caller=self._caller,
            local_host=svc.local_host(agent_transport, svc.agent_peer),
            max_forwards=invite.max_forwards - 1,
        )
        self.agent_ack: Request | None = None
        self.agent_tx: ClientTransaction | None = None
        self.deferred_ack = route.late_offer  # late offer: the agent's ACK waits for the carrier's
        self.status = inbound_status(self)  # ringing / in-progress / final, for the webhooks

    @property
    def agent_invite_seq(self) -> int:
        return self.agent_invite.cseq.seq

    @property
    def ended(self) -> bool:
        return self.phase is Phase.ENDED

    @property
    def from_number(self) -> str:
        return self._caller

    def leg_of(self, call_id: str) -> Leg:
        return self.carrier if call_id == self.carrier.call_id else self.agent

    def other(self, leg: Leg) -> Leg:
        return self.agent if leg is self.carrier else self.carrier

    def on_own_response(self, leg: Leg, response: Response) -> bool:
        """A response the call handles itself beyond the agent INVITE's (outbound calls: their
        carrier INVITE and re-INVITE); True when consumed."""
        return False

    def on_own_failure(self, request: Request, reason: TerminationReason) -> bool:
        """A client transaction of the call's own failed (outbound calls); True when handled."""
        return False

    # --- the agent INVITE ----------------------------------------------------------------------

    def start(self) -> None:
        self.timers.start("ring", self.svc.timeouts.agent_ring, self._ring_timeout)
        self.agent_tx = self.svc.send(self.agent_invite, self.agent)

    def on_agent_invite_response(self, response: Response) -> None:
        status = response.status
        if status == 100:
            return
        if self.ended:
            return  # a 2xx after the end is cleaned up by EdgeServices (orphan ACK + BYE)
        if status < 200:
            self._relay_provisional(response)
        elif status < 300:
            self._agent_answered(response)
        elif self.phase is Phase.CALLING:
            # The transaction ACKs the non-2xx itself (§17.1.1.3).
            answer, rule = agent_failure_answer(status)
            decided = (
                CallEnd.AGENT_DECLINED
                if status in RELAYED_AGENT_FAILURES
                else CallEnd.AGENT_FAILURE
            )
            self._reject_carrier(answer, rule)
            self.end(decided, "agent")

    def on_agent_invite_failed(self, reason: TerminationReason) -> None:
        if self.phase is not Phase.CALLING:
            return
        self._reject_carrier(*agent_failure_answer(None))
        unreachable = reason is TerminationReason.TRANSPORT_ERROR
        self.end(CallEnd.AGENT_UNREACHABLE if unreachable else CallEnd.AGENT_TIMEOUT, "edge")

    def _ring_timeout(self) -> None:
        if self.phase is Phase.CALLING:
            self._cancel_agent()
            self._reject_carrier(*agent_failure_answer(None))
            self.end(CallEnd.AGENT_TIMEOUT, "edge")

    def _relay_provisional(self, response: Response) -> None:
        if self.phase is not Phase.CALLING:
            return
        tagged = response.to.tag is not None
        if tagged and self.agent.dialog is None:
            try:
                self.agent.dialog = Dialog.uac(self.agent_invite, response)
            except DialogError:
                log.debug("agent provisional without a usable Contact")
        body = self.filtered(response.body) if response.body else None
        out = relay_response(
            self.invite,
            response,
            to_tag=self.carrier_tag,
            contact=self.svc.contact(self.carrier.transport, self.carrier.peer) if tagged else None,
            body=body,
        )
        self._to_carrier(out)
        self.status.ringing(response.status)

    def _agent_answered(self, response: Response) -> None:
        agent = self.agent
        if agent.dialog is not None and not agent.dialog.early:
            if self.agent_ack is not None:  # a 2xx retransmission: our ACK was lost
                self.svc.send_stateless(self.agent_ack, agent)
            return
        try:
            if agent.dialog is None:
                agent.dialog = Dialog.uac(self.agent_invite, response)
            else:
                agent.dialog.receive_response(response)
        except DialogError:
            self._reject_carrier(*agent_failure_answer(None))
            self.end(CallEnd.AGENT_FAILURE, "agent")
            return
        if self.phase is not Phase.CALLING:
            return
        body = self.filtered(response.body)
        if response.body and body is None:
            # The agent answered with none of the trunk's codecs: hang it up, 488 the carrier.
            self._ack_agent()
            self.svc.send_bye(agent)
            self._reject_carrier(488, "no common codec")
            self.end(CallEnd.NO_COMMON_CODEC, "edge")
            return
        if not self.deferred_ack:
            self._ack_agent()
        self.timers.cancel("ring")
        ok = relay_response(
            self.invite,
            response,
            to_tag=self.carrier_tag,
            contact=self.svc.contact(self.carrier.transport, self.carrier.peer),
            body=body,
        )
        local_via = parse_via(self.svc.via(self.carrier.transport, self.carrier.peer))[0]
        self.carrier.dialog = Dialog.uas(self.invite, ok, local_via=local_via)
        self.phase = Phase.ANSWERED
        self.answered_at = datetime.now(UTC)
        self.final_code = ok.status
        self._to_carrier(ok)
        self.status.answered(ok.status)
        # An answered call lifts a degraded trunk, whichever way it went (SPEC §5 health).
        self.svc.activity.call_outcome(
            trunk_id=self.route.trunk.id, outcome="answered", at=self.answered_at
        )
        self.send_2xx(self.carrier, self.invite_tx, ok)
        self.timers.start("max", self.svc.max_call_duration, self._max_duration)
        self._keep_skeletons()

    def _keep_skeletons(self) -> None:
        """Answered: both INVITE transactions are Accepted and keep only their requests'
        skeletons (ids, Via, Contact); point at those and let the full offers go, so a held call
        costs its dialogs, not two INVITEs with SDP."""
        self.invite = self.invite_tx.request
        if self.agent_tx is not None:
            self.agent_invite = self.agent_tx.request
            self.agent_tx = None  # retired by the layer; nothing else of it is needed

    def _ack_agent(self, body: bytes = b"") -> None:
        dialog = self.agent.dialog
        if dialog is None or self.agent_ack is not None:
            return
        content_type = "application/sdp" if body else None
        self.agent_ack = dialog.create_request("ACK", body=body, content_type=content_type)
        self.svc.send_stateless(self.agent_ack, self.agent)

    def filtered(self, body: bytes) -> bytes | None:
        """``body`` restricted to the trunk's codecs; None when nothing (or no SDP) is left."""
        result = filter_sdp(body, self.route.trunk.codecs)
        if isinstance(result, Reject):
            return None
        return result.body

    def _to_carrier(self, response: Response) -> None:
        if not self.first_response_sent:
            self.first_response_sent = True
            invite_first_response_seconds.observe(self.svc.loop.time() - self.started_mono)
        self.invite_tx.respond(response)

    def _reject_carrier(self, status: int, rule: str) -> None:
        if self.invite_tx.state is not TxState.PROCEEDING:
            return
        self.final_code = status
        self._to_carrier(
            respond(self.invite, status, to_tag=self.carrier_tag, warning=edge_warning(rule))
        )

    def _cancel_agent(self) -> None:
        if self.agent.dialog is None or self.agent.dialog.early:
            self.svc.send(build_cancel(self.agent_invite), self.agent)

    # --- our 2xx, retransmitted until the ACK (RFC 3261 §13.3.1.4) -----------------------------

    def send_2xx(self, leg: Leg, tx: ServerTransaction, ok: Response) -> None:
        """``ok`` was just sent on ``tx``; retransmit it (T1 doubling to T2, unreliable only)
        until the leg's ACK, and give up after 64*T1 (then the call ends)."""
        leg.ok, leg.ok_tx, leg.ok_elapsed = ok, tx, 0.0
        leg.ok_interval = self.svc.timers.t1
        self._arm_2xx(leg)

    def _arm_2xx(self, leg: Leg) -> None:
        timeout = self.svc.timers.timeout
        if leg.transport.reliable:
            delay = timeout - leg.ok_elapsed
        else:
            delay = min(leg.ok_interval, timeout - leg.ok_elapsed)
        self.timers.start(
            f"2xx-{leg.side}", max(delay, 0.0), lambda: self._retransmit_2xx(leg, delay)
        )

    def _retransmit_2xx(self, leg: Leg, waited: float) -> None:
        if leg.ok is None or leg.ok_tx is None:
            return
        leg.ok_elapsed += waited
        if leg.ok_elapsed >= self.svc.timers.timeout - 1e-9:
            leg.ok = leg.ok_tx = None
            self.terminate(CallEnd.NO_ACK)
            return
        if leg.ok_tx.state is TxState.ACCEPTED:
            leg.ok_tx.respond(leg.ok)
        else:
            self.svc.send_stateless(leg.ok, leg, leg.ok_tx.fsm.dest)
        leg.ok_interval = min(leg.ok_interval * 2, self.svc.timers.t2)
        self._arm_2xx(leg)

    def on_ack(self, leg: Leg, ack: Request) -> None:
        ok = leg.ok
        if ok is None or ack.cseq.seq != ok.cseq.seq:
            return
        leg.ok = leg.ok_tx = None
        self.timers.cancel(f"2xx-{leg.side}")
        if leg is self.carrier and self.phase is Phase.ANSWERED:
            self.phase = Phase.CONFIRMED
            if self.deferred_ack:
                self.deferred_ack = False
                answer = self.filtered(ack.body) if ack.body else None
                self._ack_agent(answer or b"")

    # --- ending --------------------------------------------------------------------------------

    def on_cancel(self) -> None:
        """The carrier cancelled its INVITE (the CANCEL itself is answered by the caller)."""
        if self.phase is not Phase.CALLING:
            return
        self._cancel_agent()
        self.final_code = 487
        self._to_carrier(respond(self.invite, 487, to_tag=self.carrier_tag))
        self.end(CallEnd.CANCELED, "carrier")

    def on_bye(self, leg: Leg) -> None:
        """A BYE from ``leg`` (already answered 200): hang up the other leg."""
        if self.phase is Phase.CALLING:
            if leg is self.carrier:
                self.on_cancel()
            return
        self.svc.send_bye(self.other(leg))
        self.end(CallEnd.ANSWERED, leg.side)

    def terminate(self, reason: CallEnd) -> None:
        """End the call from the edge's side: 503 + CANCEL before the answer, else BYE both."""
        if self.ended:
            return
        if self.phase is Phase.CALLING:
            self._cancel_agent()
            self._reject_carrier(503, _EDGE_RULES.get(reason, "service unavailable"))
        else:
            self.svc.send_bye(self.carrier)
            self.svc.send_bye(self.agent)
        self.end(reason, "edge")

    def carrier_lost(self) -> None:
        """Our responses cannot reach the carrier any more (its TCP connection is gone)."""
        self.terminate(CallEnd.CARRIER_UNREACHABLE)

    def _max_duration(self) -> None:
        self.terminate(CallEnd.MAX_DURATION)

    def end(self, reason: CallEnd, side: HangupSide) -> None:
        """The one exit: release the channel, emit the record, move the metrics (once)."""
        if self.ended:
            return
        if self.invite_tx.state is TxState.PROCEEDING:
            self._reject_carrier(503, "service unavailable")  # safety net: never left unanswered
        self.phase = Phase.ENDED
        self.timers.cancel_all()
        self.carrier.ok = self.agent.ok = None
        answer_pending(self.carrier)
        answer_pending(self.agent)
        self.svc.forget(self)
        self.svc.release_channel(self.route.trunk.id, self.route.lease.call_id)
        active_calls.dec()
        ENDING_CHILDREN[reason].inc()
        route = self.route
        event = CallRecordEvent(
            run_id=self.run_id,
            trunk_id=route.trunk.id,
            direction="inbound",
            started_at=self.started_at,
            ended_at=datetime.now(UTC),
            final_sip_code=self.final_code or 500,
            decided_by=reason.value,
            number_id=route.number.id,
            agent_id=route.agent.id,
            from_number=self.from_number,
            to_number=route.number.e164,
            carrier_call_id=self.carrier.call_id,
            agent_call_id=self.agent.call_id,
            answered_at=self.answered_at,
            hangup_side=side,
        )
        try:
            self.svc.records.record(event)
        except Exception:
            # The sink must not raise; if it does, the call path still ends cleanly.
            log.exception("call record sink failed")
        self.status.ended(event)
        log.debug("call %s ended: %s (%s)", self.run_id, reason.value, side)


_EDGE_RULES = {
    CallEnd.TRUNK_DELETED: "trunk unavailable",
    CallEnd.SHUTDOWN: "service shutting down",
    CallEnd.MAX_DURATION: "maximum call duration",
}
