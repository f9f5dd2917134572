"""An outbound call: the carrier leg (we are its UAC, through the trunk's gateways with failover and
one digest answer per gateway) bridged on answer to an agent leg (we are its UAC too).

``OutboundCall`` extends the inbound ``Call``: it shares ``Leg``, the call registry, the relay of
in-dialog requests (re-INVITE, INFO, ...), the 2xx retransmission and the BYE handling; only the
call set-up and the ending differ. The gateway walk is ``edge.outbound.DialAttempt``.

Offer/answer (RFC 3264), with no media anchored by the edge:
1. the carrier gets our offer O1: the trunk's codecs in order + telephone-event, our address and a
   placeholder port (``outbound_messages``); its 2xx carries the answer A1; we ACK it;
2. the agent gets a new INVITE whose offer is A1 filtered to the trunk's codecs (the carrier's
   media), with the inbound ``X-Sipedge-*`` headers plus ``X-Sipedge-Direction: outbound``; its
   2xx carries the answer A2 (the agent's media); we ACK it;
3. the carrier gets a re-INVITE whose offer is A2 filtered, with our ``o=`` session and the next
   version; its answer completes the exchange (a failed re-INVITE leaves the call up).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sipedge.edge.inbound import InboundRoute
from sipedge.edge.outbound import (
    AnswerChallenge,
    DialAction,
    DialAttempt,
    FinalClass,
    Finish,
    SendInvite,
    Timeout,
    TransportFailure,
    classify_final,
)
from sipedge.edge.outbound import Response as CarrierResponse
from sipedge.edge.snapshot import GatewayView
from sipedge.metrics import CallEnd, OutboundAttemptResult, active_calls, outbound_attempt
from sipedge.runtime.b2bua import Call, Phase
from sipedge.runtime.call_timers import CallTimers
from sipedge.runtime.legs import EdgeServices, Leg
from sipedge.runtime.messages import build_cancel
from sipedge.runtime.outbound_bridge import (
    Stage,
    agent_answered_or_refused,
    carrier_answered,
    finish_call,
    on_reinvite_response,
)
from sipedge.runtime.outbound_messages import (
    build_carrier_invite,
    carrier_offer,
    carrier_request_uri,
)
from sipedge.runtime.ports import HangupSide
from sipedge.sip.digest import DigestError, build_authorization, choose_challenge
from sipedge.sip.message import Request, Response
from sipedge.sip.transaction import TerminationReason
from sipedge.stack.transactions import ServerTransaction, SipTransport

__all__ = ["OutboundCall", "OutboundSetup", "StatusReport"]

log = logging.getLogger(__name__)


StatusReport = Callable[[str, dict[str, Any]], None]

_STATUS = {
    FinalClass.ANSWERED: "completed",
    FinalClass.BUSY: "busy",
    FinalClass.DECLINED: "busy",
    FinalClass.NO_ANSWER: "no-answer",
    FinalClass.FAILED: "failed",
    FinalClass.CARRIER_FAILURE: "failed",
}
_RESULT_BY_CLASS = {
    FinalClass.BUSY: OutboundAttemptResult.BUSY,
    FinalClass.DECLINED: OutboundAttemptResult.DECLINED,
    FinalClass.NO_ANSWER: OutboundAttemptResult.NO_ANSWER,
    FinalClass.FAILED: OutboundAttemptResult.FAILED,
}


@dataclass(frozen=True, slots=True)
class OutboundSetup:
    """What the dialer hands a call: its row, route, transport, credentials and sinks."""

    run_id: str
    route: InboundRoute  # trunk, calling number, agent, channel lease (no SDP)
    recipient: str  # E.164 with +
    transport: SipTransport
    credentials: tuple[str, str] | None
    resolve: Callable[[GatewayView, str], Any]  # async (gateway, transport) -> [Address]
    report: StatusReport


class OutboundCall(Call):
    """One outbound call; ``start()`` dials, ``hangup()`` is ``POST /call/{run_id}/hangup``."""

    def __init__(self, svc: EdgeServices, setup: OutboundSetup, gateways: tuple[GatewayView, ...]):
        # Call.__init__ builds an inbound call; the attributes its shared methods use are set here.
        self.svc = svc
        self.setup = setup
        self.route = setup.route
        self.run_id = setup.run_id
        self.phase = Phase.CALLING
        self.stage = Stage.DIALING
        self.started_at = datetime.now(UTC)
        self.started_mono = svc.loop.time()
        self.answered_at: datetime | None = None
        self.final_code: int | None = None
        self.first_response_sent = True
        self.timers = CallTimers(svc.call_deadlines)
        self.invite_tx = cast(ServerTransaction, None)  # no carrier INVITE of ours to answer
        self.deferred_ack = False
        self.carrier_tag = svc.new_tag()
        self.session_id = secrets.randbelow(2**31)
        self.sdp_version = 1
        self.attempt = DialAttempt(gateways, has_credentials=setup.credentials is not None)
        transport = setup.transport
        self.carrier = Leg("carrier", f"{uuid.uuid4().hex}@sipedge", transport, ("0.0.0.0", 0))
        self.agent = Leg(
            "agent", f"{uuid.uuid4().hex}@sipedge", svc.agent_transport, svc.agent_peer
        )
        self.invite: Request | None = None  # type: ignore[assignment]
        self.agent_invite: Request | None = None  # type: ignore[assignment]
        self.agent_ack: Request | None = None
        self.carrier_ack: Request | None = None
        self.reinvite_seq: int | None = None
        self.gateway: GatewayView | None = None
        self.provisional = False  # a provisional came on the current carrier INVITE
        self.hangup_asked = False
        self.ring_timed_out = False  # our CANCEL after the ring timeout is in flight
        self.crossed = False
        self.call_ids: set[str] = set()
        self._dialing: asyncio.Task[None] | None = None
        self.request_uri = carrier_request_uri(setup.recipient, "invalid", 5060, "udp", True)
        self.local_host = ""
        self.offer = b""
        self.challenge: Response | None = None

    # --- registry and status -------------------------------------------------------------------

    @property
    def agent_invite_seq(self) -> int:
        return self.agent_invite.cseq.seq if self.agent_invite is not None else -1

    def _register(self, call_id: str) -> None:
        self.call_ids.add(call_id)
        self.svc.calls[call_id] = self

    def _report(self, **values: Any) -> None:
        values.setdefault("updated_at", datetime.now(UTC))
        try:
            self.setup.report(self.run_id, values)
        except Exception:
            log.exception("outbound status report failed")

    # --- dialling ------------------------------------------------------------------------------

    def start(self) -> None:
        self.svc.live[self.run_id] = self
        active_calls.inc()
        self._report(started_at=self.started_at)
        self._act(self.attempt.start())

    def _act(self, action: DialAction) -> None:
        if self.stage is Stage.ENDED:
            return
        if isinstance(action, Finish):
            self._finished(action)
        elif isinstance(action, SendInvite):
            if self.hangup_asked:
                self._end_unanswered("canceled", None, "canceled")
                return
            # DNS is awaited in the call's own task, never in a message callback.
            self._dialing = self.svc.loop.create_task(self._dial_gateway(action.gateway))
        elif isinstance(action, AnswerChallenge):
            self._answer_challenge(action.status)

    async def _dial_gateway(self, gateway: GatewayView) -> None:
        try:
            addresses = await self.setup.resolve(gateway, self.route.trunk.transport)
        except Exception:
            log.exception("resolving gateway %s failed", gateway.id)
            addresses = []
        if self.stage is not Stage.DIALING:
            return
        if self.hangup_asked:
            self._end_unanswered("canceled", None, "canceled")
            return
        if not addresses:
            outbound_attempt(OutboundAttemptResult.TRANSPORT_ERROR)
            self._act(self.attempt.handle(TransportFailure()))
            return
        self.gateway = gateway
        old = self.carrier.call_id
        if self.svc.calls.get(old) is self:  # a late answer from the last gateway is an orphan
            del self.svc.calls[old]
        self.call_ids.discard(old)
        self.carrier = Leg(
            "carrier", f"{uuid.uuid4().hex}@sipedge", self.setup.transport, addresses[0]
        )
        self._register(self.carrier.call_id)
        svc, leg = self.svc, self.carrier
        self.request_uri = carrier_request_uri(
            self.setup.recipient,
            gateway.host,
            gateway.port,
            self.route.trunk.transport,
            self.route.trunk.outbound_leading_plus,
        )
        self.local_host = svc.local_host(leg.transport, leg.peer)
        self.offer = carrier_offer(self.local_host, self.route.trunk.codecs, self.session_id)
        self._send_carrier_invite(cseq=1, authorization=None)

    def _send_carrier_invite(self, *, cseq: int, authorization: tuple[str, str] | None) -> None:
        svc, leg = self.svc, self.carrier
        self.provisional = False
        self.invite = build_carrier_invite(
            request_uri=self.request_uri,
            from_number=self.route.number.e164,
            plus=self.route.trunk.outbound_leading_plus,
            local_host=self.local_host,
            via=svc.via(leg.transport, leg.peer),
            contact=svc.contact(leg.transport, leg.peer),
            call_id=leg.call_id,
            from_tag=self.carrier_tag,
            cseq=cseq,
            body=self.offer,
            authorization=authorization,
        )
        self.timers.start("ring", svc.timeouts.carrier_ring, self._ring_timeout)
        svc.send(self.invite, leg)

    def _answer_challenge(self, status: int) -> None:
        response = self.challenge
        name = "WWW-Authenticate" if status == 401 else "Proxy-Authenticate"
        answer = "Authorization" if status == 401 else "Proxy-Authorization"
        values = response.headers.get_all(name) if response is not None else []
        challenge = choose_challenge(values)
        credentials = self.setup.credentials
        if challenge is None or credentials is None or self.invite is None:
            outbound_attempt(OutboundAttemptResult.AUTH_FAILED)
            self._act(self.attempt.handle(CarrierResponse(status)))
            return
        username, password = credentials
        try:
            value = build_authorization(
                challenge,
                method="INVITE",
                uri=str(self.request_uri),
                username=username,
                password=password,
            )
        except DigestError:
            outbound_attempt(OutboundAttemptResult.AUTH_FAILED)
            self._act(self.attempt.handle(CarrierResponse(status)))
            return
        self._send_carrier_invite(cseq=self.invite.cseq.seq + 1, authorization=(answer, value))

    # --- carrier responses ---------------------------------------------------------------------

    def on_own_response(self, leg: Leg, response: Response) -> bool:
        if leg is self.agent:
            return False
        cseq = response.cseq
        if cseq.method != "INVITE":
            return False
        if self.reinvite_seq is not None and cseq.seq == self.reinvite_seq:
            self._on_reinvite_response(response)
            return True
        if (
            self.invite is None
            or response.call_id != self.carrier.call_id
            or cseq.seq != self.invite.cseq.seq
        ):
            return True
        self._on_carrier_invite_response(response)
        return True

    def _on_carrier_invite_response(self, response: Response) -> None:
        status = response.status
        if self.stage is Stage.ENDED:
            return
        if not self.crossed:
            self.crossed = True
            self.svc.activity.call_crossed(
                trunk_id=self.route.trunk.id,
                number_id=self.route.number.id,
                direction="outbound",
                at=datetime.now(UTC),
            )
        if 200 <= status < 300 and self.stage is not Stage.DIALING:
            if self.carrier_ack is not None:
                self.svc.send_stateless(self.carrier_ack, self.carrier)  # 2xx retransmission
            return
        if self.stage is not Stage.DIALING:
            return
        if status < 200:
            if status > 100 and not self.provisional:
                self.provisional = True
                self._report(status="ringing")
                if self.hangup_asked and self.invite is not None:
                    self.svc.send(build_cancel(self.invite), self.carrier)
            return
        self.timers.cancel("ring")
        if status < 300:
            self._carrier_answered(response)
            return
        if status in (401, 407):
            self.challenge = response
        action = self.attempt.handle(CarrierResponse(status))
        if not isinstance(action, AnswerChallenge) and _carrier_failure(status):
            outbound_attempt(_gateway_result(status))
        if (
            isinstance(action, Finish)
            and action.result is FinalClass.NO_ANSWER
            and self.hangup_asked
        ):
            self._end_unanswered("canceled", status, "canceled")
            return
        self.final_code = status
        self._act(action)

    def on_own_failure(self, request: Request, reason: TerminationReason) -> bool:
        if request is self.invite:
            if self.stage is Stage.DIALING:
                self.timers.cancel("ring")
                transport = reason is TerminationReason.TRANSPORT_ERROR
                outbound_attempt(
                    OutboundAttemptResult.TRANSPORT_ERROR
                    if transport
                    else OutboundAttemptResult.TIMEOUT
                )
                if self.hangup_asked:
                    self._end_unanswered("canceled", None, "canceled")
                    return True
                if self.ring_timed_out:
                    # Our CANCEL after the ring timeout was never answered (§9.1, 64*T1): the
                    # callee did not answer; ringing another gateway now would be wrong.
                    self._end_unanswered("no-answer", None, "no_answer")
                    return True
                self._act(self.attempt.handle(TransportFailure() if transport else Timeout()))
            return True
        if request is self.agent_invite:
            self.on_agent_invite_failed(reason)
            return True
        return False

    def _ring_timeout(self) -> None:
        if self.stage is Stage.DIALING and self.provisional and self.invite is not None:
            self.hangup_asked = False
            self.ring_timed_out = True
            self.svc.send(build_cancel(self.invite), self.carrier)

    def _finished(self, finish: Finish) -> None:
        result = finish.result
        if result is FinalClass.CARRIER_FAILURE:
            self.svc.activity.call_outcome(
                trunk_id=self.route.trunk.id, outcome="carrier_failure", at=datetime.now(UTC)
            )
            self._end_unanswered("failed", finish.status, "carrier_failure")
            return
        outbound_attempt(_RESULT_BY_CLASS.get(result, OutboundAttemptResult.FAILED))
        self.svc.activity.call_outcome(
            trunk_id=self.route.trunk.id, outcome=result.value, at=datetime.now(UTC)
        )
        self._end_unanswered(_STATUS[result], finish.status, result.value)

    # --- answered: bridge to the agent ---------------------------------------------------------

    def _carrier_answered(self, response: Response) -> None:
        carrier_answered(self, response)

    def on_agent_invite_response(self, response: Response) -> None:
        agent_answered_or_refused(self, response)

    def _on_reinvite_response(self, response: Response) -> None:
        on_reinvite_response(self, response)

    def on_agent_invite_failed(self, reason: TerminationReason) -> None:
        if self.stage is Stage.BRIDGING:
            self.svc.send_bye(self.carrier)
            self._end("failed", CallEnd.AGENT_UNREACHABLE, "edge", reason="agent unavailable")

    def _agent_timeout(self) -> None:
        if self.stage is Stage.BRIDGING:
            self._cancel_agent()
            self.svc.send_bye(self.carrier)
            self._end("failed", CallEnd.AGENT_TIMEOUT, "edge", reason="agent unavailable")

    # --- ending --------------------------------------------------------------------------------

    def hangup(self) -> None:
        """The API asked to end the call: CANCEL while ringing, BYE both legs once answered."""
        if self.stage is Stage.ENDED or self.hangup_asked:
            return
        self.hangup_asked = True
        if self.stage is Stage.DIALING:
            if self.provisional and self.invite is not None:
                self.svc.send(build_cancel(self.invite), self.carrier)
            return  # otherwise: CANCEL on the first provisional, BYE on a 2xx, no next gateway
        self._hang_up_both("completed", "edge")

    def _hang_up_both(self, status: str, side: HangupSide) -> None:
        if self.stage is Stage.BRIDGING:
            self._cancel_agent()
        else:
            self.svc.send_bye(self.agent)
        self.svc.send_bye(self.carrier)
        self._end(status, CallEnd.ANSWERED, side, reason="hangup")

    def _cancel_agent(self) -> None:
        if self.agent_invite is not None and (self.agent.dialog is None or self.agent.dialog.early):
            self.svc.send(build_cancel(self.agent_invite), self.agent)

    def on_cancel(self) -> None:
        return None  # nobody can CANCEL an INVITE of ours

    def on_bye(self, leg: Leg) -> None:
        if self.stage is Stage.ENDED:
            return
        if self.stage is Stage.BRIDGING:
            if leg is self.carrier:
                self._cancel_agent()
                self._end("completed", CallEnd.ANSWERED, "carrier", reason="answered")
            return
        self.svc.send_bye(self.other(leg))
        self._end("completed", CallEnd.ANSWERED, leg.side, reason="answered")

    def terminate(self, reason: CallEnd) -> None:
        if self.stage is Stage.ENDED:
            return
        if self.stage is Stage.DIALING:
            if self.provisional and self.invite is not None:
                self.svc.send(build_cancel(self.invite), self.carrier)
            self._end("failed", reason, "edge", reason=reason.value)
            return
        if self.stage is Stage.BRIDGING:
            self._cancel_agent()
        else:
            self.svc.send_bye(self.agent)
        self.svc.send_bye(self.carrier)
        self._end("completed", reason, "edge", reason=reason.value)

    def _end_unanswered(self, status: str, code: int | None, reason: str) -> None:
        self.final_code = code
        self._end(status, None, "carrier" if code else "edge", reason=reason)

    def end(self, reason: CallEnd, side: HangupSide) -> None:
        self._end("failed" if self.answered_at is None else "completed", reason, side, reason.value)

    def _end(self, status: str, ending: CallEnd | None, side: HangupSide, reason: str) -> None:
        """The one exit: channel released, status reported, one call record (once)."""
        finish_call(self, status, side, reason)


def _carrier_failure(status: int) -> bool:
    return status > 699 or classify_final(status) is FinalClass.CARRIER_FAILURE


def _gateway_result(status: int) -> OutboundAttemptResult:
    if status in (401, 407):
        return OutboundAttemptResult.AUTH_FAILED
    if status == 403:
        return OutboundAttemptResult.FORBIDDEN
    if status == 408:
        return OutboundAttemptResult.TIMEOUT
    if 500 <= status <= 599:
        return OutboundAttemptResult.SERVER_ERROR
    return OutboundAttemptResult.FAILED  # recounted by _finished for callee answers
