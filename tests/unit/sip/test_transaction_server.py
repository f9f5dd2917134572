"""INVITE and non-INVITE server transactions (RFC 3261 §17.2, RFC 6026 §8.5-8.7), fake clock."""

from __future__ import annotations

import pytest
from transaction_fixtures import PEER, Runner, request

from sipedge.sip.message import Request, Response
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import (
    Deliver,
    Received,
    Send,
    SendResponse,
    Start,
    Terminated,
    TerminationReason,
    TimerFired,
    TransportFailed,
    TxState,
    build_response,
)
from sipedge.sip.transaction_server import InviteServerTransaction, NonInviteServerTransaction

T1, T2, T4 = 0.5, 4.0, 5.0


def invite_server(*, reliable: bool = False) -> tuple[Runner, InviteServerTransaction, Request]:
    req = request("INVITE", transport="TCP" if reliable else "UDP")
    tx = InviteServerTransaction(req, PEER, reliable, TimerConfig(T1, T2, T4))
    runner = Runner(tx)
    runner.handle(Received(req))
    return runner, tx, req


def answer(req: Request, status: int, reason: str = "Reason") -> Response:
    return build_response(req, status, reason, to_tag=None if status == 100 else "uas-tag")


def ack_for(req: Request, *, branch: str | None = None) -> Request:
    # The ACK for a non-2xx carries the INVITE's branch (RFC 3261 §17.1.1.3).
    return request(
        "ACK",
        branch=branch or req.vias[0].branch or "",
        transport=req.vias[0].transport,
        to_tag="uas-tag",
    )


# --- INVITE server, §17.2.1 --------------------------------------------------------------------


def test_invite_server_sends_100_trying_at_once_and_delivers_the_invite() -> None:
    runner, tx, req = invite_server()
    assert tx.state is TxState.PROCEEDING
    first, second = (a for _, a in runner.log)
    assert isinstance(first, Send) and first.dest == PEER
    trying = first.msg
    assert isinstance(trying, Response) and trying.status == 100
    # §8.2.6: Via list, From, To (no tag on 100), Call-ID, CSeq and Timestamp copied.
    assert trying.headers.get_all("Via") == req.headers.get_all("Via")
    assert trying.headers.get("From") == req.headers.get("From")
    assert trying.to.tag is None
    assert trying.call_id == req.call_id
    assert trying.cseq == req.cseq
    assert trying.headers.get("Timestamp") == "54"
    assert second == Deliver(req)
    assert runner.timers == {}


def test_invite_retransmission_answered_with_latest_provisional_not_delivered() -> None:
    runner, _tx, req = invite_server()
    retransmission = request("INVITE")
    trying = runner.sends()[0][1].msg
    assert runner.handle(Received(retransmission)) == [Send(trying, PEER)]
    ringing = answer(req, 180, "Ringing")
    assert runner.handle(SendResponse(ringing)) == [Send(ringing, PEER)]
    assert runner.handle(Received(retransmission)) == [Send(ringing, PEER)]
    assert runner.delivered() == [Deliver(req)]


def test_invite_non2xx_udp_timer_g_capped_at_t2_until_timer_h() -> None:
    runner, tx, req = invite_server()
    busy = answer(req, 486, "Busy Here")
    runner.handle(SendResponse(busy))
    assert tx.state is TxState.COMPLETED
    assert runner.timers == {"G": T1, "H": 64 * T1}
    runner.advance(64 * T1)
    # The retransmissions re-send a read-only copy (fewer GC-tracked objects while waiting).
    times = [t for t, s in runner.sends() if bytes(s.msg) == bytes(busy)]
    assert times == [0.0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5]
    # §17.2.1: Timer H fired with no ACK: the TU is told.
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)


def test_invite_completed_answers_retransmitted_invite_with_the_final() -> None:
    runner, _, req = invite_server()
    busy = answer(req, 486, "Busy Here")
    runner.handle(SendResponse(busy))
    runner.advance(0.1)
    [resent] = runner.handle(Received(request("INVITE")))
    assert isinstance(resent, Send) and resent.dest == PEER and bytes(resent.msg) == bytes(busy)
    assert runner.delivered() == [Deliver(req)]


def test_invite_ack_confirms_and_timer_i_absorbs_ack_retransmissions() -> None:
    runner, tx, req = invite_server()
    runner.handle(SendResponse(answer(req, 603, "Decline")))
    runner.advance(1.0)  # one G retransmission at 0.5
    ack = ack_for(req)
    actions = runner.handle(Received(ack))
    assert tx.state is TxState.CONFIRMED
    assert not any(isinstance(a, Deliver) for a in actions)  # the non-2xx ACK stays here
    assert runner.timers == {"I": 1.0 + T4}
    sent_before = len(runner.sends())
    assert runner.handle(Received(ack)) == []
    runner.advance(100)
    assert len(runner.sends()) == sent_before  # no more G after the ACK
    assert runner.terminated == Terminated(TerminationReason.NORMAL)


def test_invite_tcp_no_timer_g_and_timer_i_zero() -> None:
    runner, tx, req = invite_server(reliable=True)
    runner.handle(SendResponse(answer(req, 480, "Temporarily Unavailable")))
    assert runner.timers == {"H": 64 * T1}
    actions = runner.handle(Received(ack_for(req)))
    assert actions[-1] == Terminated(TerminationReason.NORMAL)
    assert tx.state is TxState.TERMINATED


def test_invite_tcp_timer_h_still_bounds_the_wait_for_ack() -> None:
    runner, _, req = invite_server(reliable=True)
    runner.handle(SendResponse(answer(req, 500, "Server Internal Error")))
    runner.advance(64 * T1)
    assert len(runner.sends()) == 2  # 100 and the 500, never retransmitted over TCP
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)


def test_invite_2xx_accepted_absorbs_invites_passes_acks_and_tu_retransmissions() -> None:
    runner, tx, req = invite_server()
    ok = answer(req, 200, "OK")
    assert runner.handle(SendResponse(ok))[0] == Send(ok, PEER)
    assert tx.state is TxState.ACCEPTED
    assert runner.timers == {"L": 64 * T1}
    # Nothing is re-sent from Accepted: the offer and the 2xx are let go (a held call's memory).
    assert tx.last_response is None and tx.request is not req
    assert tx.request.body == b"" and tx.request.call_id == req.call_id
    assert tx.request.cseq == req.cseq and tx.request.top_via == req.top_via
    # RFC 6026 §8.6: an INVITE retransmission is absorbed (not answered, not delivered).
    assert runner.handle(Received(request("INVITE"))) == []
    # The TU retransmits its 2xx (RFC 3261 §13.3.1.4): passed to the transport.
    assert runner.handle(SendResponse(ok)) == [Send(ok, PEER)]
    # A matching ACK goes to the TU (RFC 6026 §8.7).
    ack = ack_for(req)
    assert runner.handle(Received(ack)) == [Deliver(ack)]
    assert runner.handle(SendResponse(answer(req, 486))) == []  # no non-2xx after a 2xx
    runner.advance(64 * T1)
    assert runner.terminated == Terminated(TerminationReason.NORMAL)


def test_invite_server_noise_is_a_no_op() -> None:
    req = request("INVITE")
    tx = InviteServerTransaction(req, PEER, False, TimerConfig(T1, T2, T4))
    assert tx.handle(Start(), 0) == []
    assert tx.handle(SendResponse(answer(req, 200)), 0) == []
    assert tx.state is TxState.INIT
    runner = Runner(tx)
    runner.handle(Received(req))
    assert runner.handle(TimerFired("G")) == []  # not armed
    assert runner.handle(Received(answer(req, 200))) == []  # a response is not for a server tx
    assert runner.handle(Received(request("BYE"))) == []
    assert runner.handle(Received(ack_for(req))) == []  # ACK in Proceeding: nothing to ACK
    assert tx.state is TxState.PROCEEDING


def test_invite_server_transport_error_terminates_and_reports() -> None:
    runner, _tx, req = invite_server()
    runner.handle(SendResponse(answer(req, 486)))
    actions = runner.handle(TransportFailed())
    assert actions[-1] == Terminated(TerminationReason.TRANSPORT_ERROR)
    assert runner.timers == {}
    assert runner.handle(TimerFired("G")) == []


def test_invite_second_final_from_tu_is_not_sent() -> None:
    runner, _, req = invite_server()
    runner.handle(SendResponse(answer(req, 486)))
    assert runner.handle(SendResponse(answer(req, 200))) == []


# --- non-INVITE server, §17.2.2 ----------------------------------------------------------------


def non_invite_server(
    *, reliable: bool = False, method: str = "BYE"
) -> tuple[Runner, NonInviteServerTransaction, Request]:
    req = request(method, transport="TCP" if reliable else "UDP", to_tag="uas-tag")
    tx = NonInviteServerTransaction(req, PEER, reliable, TimerConfig(T1, T2, T4))
    runner = Runner(tx)
    return runner, tx, req


def test_non_invite_server_delivers_and_drops_retransmissions_in_trying() -> None:
    runner, tx, req = non_invite_server()
    assert runner.handle(Received(req)) == [Deliver(req)]  # no 100 Trying for non-INVITE
    assert tx.state is TxState.TRYING
    assert runner.handle(Received(request("BYE", to_tag="uas-tag"))) == []


def test_non_invite_server_proceeding_resends_the_provisional() -> None:
    runner, tx, req = non_invite_server()
    runner.handle(Received(req))
    trying = answer(req, 100, "Trying")
    assert runner.handle(SendResponse(trying)) == [Send(trying, PEER)]
    assert tx.state is TxState.PROCEEDING
    assert runner.handle(Received(req)) == [Send(trying, PEER)]
    assert runner.delivered() == [Deliver(req)]


@pytest.mark.parametrize("status", [200, 404])
def test_non_invite_server_completed_resends_final_until_timer_j(status: int) -> None:
    runner, tx, req = non_invite_server()
    runner.handle(Received(req))
    final = answer(req, status)
    runner.handle(SendResponse(final))
    assert tx.state is TxState.COMPLETED
    assert runner.timers == {"J": 64 * T1}
    runner.advance(10)
    [resent] = runner.handle(Received(req))
    assert isinstance(resent, Send) and resent.dest == PEER and bytes(resent.msg) == bytes(final)
    assert runner.handle(SendResponse(answer(req, 500))) == []  # later TU answers discarded
    runner.advance(64 * T1 - 0.001)
    assert runner.terminated is None
    runner.advance(64 * T1)
    assert runner.terminated == Terminated(TerminationReason.NORMAL)
    assert runner.handle(Received(req)) == []


def test_non_invite_server_timer_j_zero_over_tcp() -> None:
    runner, tx, req = non_invite_server(reliable=True)
    runner.handle(Received(req))
    ok = answer(req, 200, "OK")
    assert runner.handle(SendResponse(ok)) == [Send(ok, PEER), Terminated(TerminationReason.NORMAL)]
    assert tx.state is TxState.TERMINATED


def test_non_invite_server_transport_error_and_noise() -> None:
    runner, _tx, req = non_invite_server(method="OPTIONS")
    assert runner.handle(TimerFired("J")) == []
    runner.handle(Received(req))
    assert runner.handle(TimerFired("J")) == []  # not armed yet
    assert runner.handle(Received(request("INFO"))) == []  # another method is not ours
    assert runner.handle(TransportFailed())[-1] == Terminated(TerminationReason.TRANSPORT_ERROR)
    assert runner.handle(SendResponse(answer(req, 200))) == []


def test_build_response_copies_in_order_and_tags_to_only_once() -> None:
    req = request("INVITE")
    resp = build_response(req, 486, "Busy Here", to_tag="mine")
    # §8.2.6.2: every Via in order, From/Call-ID/CSeq verbatim, our tag added to To.
    assert resp.headers.get_all("Via") == req.headers.get_all("Via")
    assert resp.headers.get("From") == req.headers.get("From")
    assert (resp.call_id, resp.cseq) == (req.call_id, req.cseq)
    assert resp.to.tag == "mine"
    assert "Timestamp" not in resp.headers  # only a 100 echoes it (§8.2.6.1)
    assert "Contact" not in resp.headers and "Route" not in resp.headers
    in_dialog = request("BYE", to_tag="existing")
    assert build_response(in_dialog, 200, "OK", to_tag="other").to.tag == "existing"
