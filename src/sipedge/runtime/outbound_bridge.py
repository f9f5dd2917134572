"""The answered half of an outbound call (see ``outbound_call`` for the offer/answer design):
the carrier's 2xx, the agent leg, and the media-update re-INVITE towards the carrier."""

from __future__ import annotations

import enum
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sipedge.edge.outbound import Response as CarrierResponse
from sipedge.metrics import CallEnd, OutboundAttemptResult, active_calls, outbound_attempt
from sipedge.runtime.b2bua import Phase
from sipedge.runtime.messages import build_agent_invite
from sipedge.runtime.outbound_messages import DIRECTION_HEADER, rewrite_origin
from sipedge.runtime.ports import CallRecordEvent, HangupSide
from sipedge.runtime.relay import answer_pending
from sipedge.sip.dialog import Dialog, DialogError
from sipedge.sip.message import Response

if TYPE_CHECKING:
    from sipedge.runtime.outbound_call import OutboundCall

__all__ = [
    "Stage",
    "agent_answered_or_refused",
    "carrier_answered",
    "finish_call",
    "on_reinvite_response",
]

log = logging.getLogger(__name__)


class Stage(enum.Enum):
    DIALING = "dialing"  # carrier INVITE outstanding
    BRIDGING = "bridging"  # carrier answered, agent INVITE outstanding
    UP = "up"
    ENDED = "ended"


def carrier_answered(call: OutboundCall, response: Response) -> None:
    assert call.invite is not None
    outbound_attempt(OutboundAttemptResult.ANSWERED)
    call.attempt.handle(CarrierResponse(response.status))
    call.svc.activity.call_outcome(
        trunk_id=call.route.trunk.id, outcome="answered", at=datetime.now(UTC)
    )
    leg = call.carrier
    try:
        leg.dialog = Dialog.uac(call.invite, response)
    except DialogError:
        call._end_unanswered("failed", response.status, "carrier_failure")
        return
    call.carrier_ack = leg.dialog.create_request("ACK")
    call.svc.send_stateless(call.carrier_ack, leg)
    call.stage = Stage.BRIDGING
    call.phase = Phase.ANSWERED
    call.answered_at = datetime.now(UTC)
    call.final_code = response.status
    call._report(
        status="in-progress",
        answered_at=call.answered_at,
        final_sip_code=200,
        carrier_call_id=leg.call_id,
    )
    if call.hangup_asked:
        call._hang_up_both("canceled", "edge")
        return
    body = call.filtered(response.body) if response.body else None
    if body is None:
        call.svc.send_bye(leg)
        call._end("failed", CallEnd.NO_COMMON_CODEC, "edge", reason="no common codec")
        return
    svc, agent = call.svc, call.agent
    route = replace(call.route, sdp=body)
    call.agent_invite = build_agent_invite(
        route=route,
        run_id=call.run_id,
        target=svc.agent_target,
        via=svc.via(agent.transport, agent.peer),
        contact=svc.contact(agent.transport, agent.peer),
        call_id=agent.call_id,
        from_tag=svc.new_tag(),
        caller=call.setup.recipient,
        local_host=svc.local_host(agent.transport, agent.peer),
        max_forwards=70,
    )
    call.agent_invite.headers.add(DIRECTION_HEADER, "outbound")
    call._register(agent.call_id)
    call.timers.start("agent", svc.timeouts.bridge_answer, call._agent_timeout)
    svc.send(call.agent_invite, agent)


def agent_answered_or_refused(call: OutboundCall, response: Response) -> None:
    status = response.status
    if status < 200 or call.stage is Stage.ENDED:
        return
    agent = call.agent
    if status >= 300:
        if call.stage is Stage.BRIDGING:
            call.svc.send_bye(call.carrier)
            call._end("failed", CallEnd.AGENT_FAILURE, "agent", reason="agent unavailable")
        return
    if agent.dialog is not None and not agent.dialog.early:
        if call.agent_ack is not None:
            call.svc.send_stateless(call.agent_ack, agent)
        return
    try:
        agent.dialog = Dialog.uac(call.agent_invite, response)  # type: ignore[arg-type]
    except DialogError:
        call.svc.send_bye(call.carrier)
        call._end("failed", CallEnd.AGENT_FAILURE, "agent", reason="agent unavailable")
        return
    call.agent_ack = agent.dialog.create_request("ACK")
    call.svc.send_stateless(call.agent_ack, agent)
    call.timers.cancel("agent")
    call.stage = Stage.UP
    call.phase = Phase.CONFIRMED
    call._report(agent_call_id=agent.call_id)
    call.timers.start("max", call.svc.max_call_duration, call._max_duration)
    answer = call.filtered(response.body) if response.body else None
    if answer is not None and call.carrier.dialog is not None:
        call.sdp_version += 1
        body = rewrite_origin(answer, call.local_host, call.session_id, call.sdp_version)
        reinvite = call.carrier.dialog.create_request(
            "INVITE", body=body, content_type="application/sdp"
        )
        call.reinvite_seq = reinvite.cseq.seq
        call.svc.send(reinvite, call.carrier)


def on_reinvite_response(call: OutboundCall, response: Response) -> None:
    leg = call.carrier
    if response.status < 200 or leg.dialog is None:
        return
    if response.status >= 300:
        log.debug("carrier refused the media update of %s: %d", call.run_id, response.status)
        return
    ack = leg.reinvite_ack
    if ack is None or ack.cseq.seq != response.cseq.seq:
        leg.dialog.receive_response(response)
        ack = leg.dialog.create_request("ACK")
        leg.reinvite_ack = ack
    call.svc.send_stateless(ack, leg)


def finish_call(call: OutboundCall, status: str, side: HangupSide, reason: str) -> None:
    if call.stage is Stage.ENDED:
        return
    call.stage = Stage.ENDED
    call.phase = Phase.ENDED
    call.timers.cancel_all()
    call.carrier.ok = call.agent.ok = None
    answer_pending(call.carrier)
    answer_pending(call.agent)
    for call_id in call.call_ids:
        if call.svc.calls.get(call_id) is call:
            del call.svc.calls[call_id]
    call.svc.live.pop(call.run_id, None)
    call.svc.release_channel(call.route.trunk.id, call.route.lease.call_id)
    active_calls.dec()
    ended_at = datetime.now(UTC)
    code = call.final_code
    if code is None:
        code = 487 if status == "canceled" else 408
    call._report(status=status, ended_at=ended_at, final_sip_code=code, reason=reason)
    route = call.route
    event = CallRecordEvent(
        run_id=call.run_id,
        trunk_id=route.trunk.id,
        direction="outbound",
        started_at=call.started_at,
        ended_at=ended_at,
        final_sip_code=code,
        decided_by=reason,
        number_id=route.number.id,
        agent_id=route.agent.id,
        from_number=route.number.e164,
        to_number=call.setup.recipient,
        carrier_call_id=call.carrier.call_id if call.invite is not None else None,
        agent_call_id=call.agent.call_id if call.agent_invite is not None else None,
        answered_at=call.answered_at,
        hangup_side=side,
    )
    try:
        call.svc.records.record(event)
    except Exception:
        log.exception("call record sink failed")
    log.debug("outbound call %s ended: %s (%s)", call.run_id, status, reason)
