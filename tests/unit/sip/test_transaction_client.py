"""INVITE and non-INVITE client transactions (RFC 3261 §17.1, RFC 6026 §8.4) with a fake clock."""

from __future__ import annotations

import pytest
from transaction_fixtures import PEER, Runner, request, response

from sipedge.sip.message import Request
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import (
    CancelSent,
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
)
from sipedge.sip.transaction_client import InviteClientTransaction, NonInviteClientTransaction

T1, T2, T4 = 0.5, 4.0, 5.0


def invite_client(*, reliable: bool = False) -> tuple[Runner, InviteClientTransaction, Request]:
    req = request("INVITE", transport="TCP" if reliable else "UDP")
    tx = InviteClientTransaction(req, PEER, reliable, TimerConfig(T1, T2, T4))
    runner = Runner(tx)
    runner.handle(Start())
    return runner, tx, req


def non_invite_client(
    *, reliable: bool = False
) -> tuple[Runner, NonInviteClientTransaction, Request]:
    req = request("OPTIONS", transport="TCP" if reliable else "UDP")
    tx = NonInviteClientTransaction(req, PEER, reliable, TimerConfig(T1, T2, T4))
    runner = Runner(tx)
    runner.handle(Start())
    return runner, tx, req


# --- INVITE client, §17.1.1 -------------------------------------------------------------------


def test_invite_udp_timer_a_doubles_without_cap_until_timer_b() -> None:
    runner, tx, req = invite_client()
    assert tx.state is TxState.CALLING
    assert runner.timers == {"A": T1, "B": 64 * T1}
    runner.advance(64 * T1)
    times = [t for t, _ in runner.sends()]
    # Sent at 0, then every A: 0.5, 1, 2, 4, 8, 16 apart (Timer A has no T2 cap, §17.1.1.2).
    assert times == [0.0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5]
    assert all(send.msg is req and send.dest == PEER for _, send in runner.sends())
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)
    assert tx.state is TxState.TERMINATED


def test_invite_tcp_never_retransmits_and_times_out_with_b() -> None:
    runner, _tx, _ = invite_client(reliable=True)
    assert runner.timers == {"B": 64 * T1}
    runner.advance(100)
    assert len(runner.sends()) == 1
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)


def test_invite_provisional_stops_retransmissions_and_timer_b() -> None:
    runner, tx, req = invite_client()
    runner.advance(0.7)  # one retransmission at 0.5
    ringing = response(req, 180, "Ringing")
    assert runner.handle(Received(ringing))[-1] == Deliver(ringing)
    assert tx.state is TxState.PROCEEDING
    assert runner.timers == {}
    runner.advance(1000)
    assert len(runner.sends()) == 2
    assert runner.terminated is None  # Proceeding waits for the TU (CANCEL) or a final response
    again = response(req, 183, "Session Progress")
    assert runner.handle(Received(again)) == [Deliver(again)]


def test_invite_cancelled_in_proceeding_is_destroyed_64_t1_later_without_final() -> None:
    # §9.1: "If there is no final response for the original request in 64*T1 seconds ... the
    # client SHOULD then consider the original transaction cancelled and SHOULD destroy" it.
    runner, tx, req = invite_client()
    runner.handle(Received(response(req, 180, "Ringing")))
    runner.advance(10)
    runner.handle(CancelSent())
    assert runner.timers == {"B": 10 + 64 * T1}  # absolute deadlines
    runner.advance(10 + 64 * T1 - 0.1)
    assert runner.terminated is None
    runner.advance(10 + 64 * T1 + 0.1)
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)
    assert tx.state is TxState.TERMINATED


def test_invite_cancelled_then_487_completes_as_usual() -> None:
    runner, tx, req = invite_client()
    runner.handle(Received(response(req, 180, "Ringing")))
    runner.handle(CancelSent())
    runner.handle(Received(response(req, 487, "Request Terminated")))
    assert tx.state is TxState.COMPLETED
    assert runner.timers == {"D": 32.0}  # Timer B cancelled, Timer D armed


def test_invite_cancel_sent_while_calling_keeps_timer_b() -> None:
    runner, tx, _ = invite_client()
    runner.advance(1.0)
    assert runner.handle(CancelSent()) == []
    assert tx.state is TxState.CALLING


@pytest.mark.parametrize("status", [300, 404, 486, 503, 603])
def test_invite_non2xx_is_acked_inside_the_transaction(status: int) -> None:
    runner, tx, req = invite_client()
    runner.advance(0.2)
    final = response(req, status, to_tag="callee-tag")
    actions = runner.handle(Received(final))
    assert tx.state is TxState.COMPLETED
    sends = [a for a in actions if isinstance(a, Send)]
    assert len(sends) == 1 and sends[0].dest == PEER
    ack = sends[0].msg
    assert isinstance(ack, Request)
    # §17.1.1.3: same Request-URI, Call-ID, From, CSeq number; To of the response; one Via, the
    # INVITE's top Via (same branch); the INVITE's Route headers.
    assert ack.method == "ACK"
    assert str(ack.uri) == str(req.uri)
    assert ack.call_id == req.call_id
    assert ack.headers.get("From") == req.headers.get("From")
    assert ack.to.tag == "callee-tag"
    assert (ack.cseq.seq, ack.cseq.method) == (req.cseq.seq, "ACK")
    assert [str(v) for v in ack.vias] == [str(req.vias[0])]
    assert ack.vias[0].branch == req.vias[0].branch
    assert ack.headers.get_all("Route") == req.headers.get_all("Route")
    assert ack.body == b""
    assert Deliver(final) in actions
    assert runner.timers == {"D": pytest.approx(0.2 + 32.0)}


def test_invite_completed_resends_ack_for_retransmitted_final_and_absorbs_it() -> None:
    runner, _tx, req = invite_client()
    final = response(req, 486, "Busy Here")
    first = runner.handle(Received(final))
    ack = next(a.msg for a in first if isinstance(a, Send))
    runner.advance(5)
    assert runner.handle(Received(final)) == [Send(ack, PEER)]
    assert runner.delivered() == [Deliver(final)]
    runner.advance(0.2 + 32.0)
    assert runner.terminated == Terminated(TerminationReason.NORMAL)
    assert runner.handle(Received(final)) == []


def test_invite_timer_d_is_zero_over_tcp() -> None:
    runner, tx, req = invite_client(reliable=True)
    final = response(req, 404, "Not Found")
    actions = runner.handle(Received(final))
    sends = [a.msg for a in actions if isinstance(a, Send)]
    assert len(sends) == 1 and isinstance(sends[0], Request) and sends[0].method == "ACK"
    assert actions[-2:] == [Deliver(final), Terminated(TerminationReason.NORMAL)]
    assert tx.state is TxState.TERMINATED


def test_invite_2xx_enters_accepted_and_passes_retransmissions_to_the_tu() -> None:
    runner, tx, req = invite_client()
    ok = response(req, 200, "OK")
    actions = runner.handle(Received(ok))
    # RFC 6026 §8.4: Accepted, Timer M; no ACK from the transaction (the TU ACKs a 2xx).
    assert actions[-1] == Deliver(ok)
    assert not any(isinstance(a, Send) for a in actions)
    assert tx.state is TxState.ACCEPTED
    assert runner.timers == {"M": 64 * T1}
    # Never re-sent again: only the skeleton the TU may still ask for (ids, Via, Contact) stays.
    assert tx.request is not req and tx.request.body == b""
    assert [k for k, _ in tx.request.headers] == [
        k
        for k, _ in req.headers
        if k in ("Via", "Route", "From", "To", "Call-ID", "CSeq", "Contact")
    ]
    runner.advance(3)
    assert runner.handle(Received(ok)) == [Deliver(ok)]
    assert runner.handle(Received(response(req, 486))) == []  # no non-2xx after a 2xx
    runner.advance(64 * T1)
    assert runner.terminated == Terminated(TerminationReason.NORMAL)
    assert len(runner.sends()) == 1


def test_invite_2xx_from_proceeding_also_accepted() -> None:
    runner, tx, req = invite_client(reliable=True)
    runner.handle(Received(response(req, 180)))
    runner.handle(Received(response(req, 200)))
    assert tx.state is TxState.ACCEPTED
    assert runner.timers == {"M": 64 * T1}  # M is not zero over TCP: forks may still answer


def test_invite_transport_error_terminates_and_reports() -> None:
    runner, _tx, _ = invite_client()
    actions = runner.handle(TransportFailed("icmp unreachable"))
    assert actions[-1] == Terminated(TerminationReason.TRANSPORT_ERROR)
    assert runner.timers == {}
    assert runner.handle(TransportFailed()) == []


def test_invite_unexpected_inputs_are_no_ops() -> None:
    req = request("INVITE")
    tx = InviteClientTransaction(req, PEER, False, TimerConfig(T1, T2, T4))
    # Before Start: nothing but Start does anything.
    assert tx.handle(Received(response(req, 200)), 0) == []
    assert tx.handle(TimerFired("A"), 0) == []
    runner = Runner(tx)
    runner.handle(Start())
    assert runner.handle(Start()) == []
    assert runner.handle(TimerFired("D")) == []  # never armed
    assert runner.handle(TimerFired("G")) == []  # not a client timer
    assert runner.handle(Received(req)) == []  # a request is not for a client transaction
    assert runner.handle(SendResponse(response(req, 200))) == []
    assert tx.state is TxState.CALLING


def test_invite_stale_timer_after_cancel_is_ignored() -> None:
    runner, tx, req = invite_client()
    runner.handle(Received(response(req, 180)))
    # A stack that raced the cancel may still deliver A: the FSM must not retransmit.
    assert tx.handle(TimerFired("A"), 0.5) == []
    assert tx.handle(TimerFired("B"), 32.0) == []
    assert tx.state is TxState.PROCEEDING


# --- non-INVITE client, §17.1.2 ----------------------------------------------------------------


def test_non_invite_udp_timer_e_doubles_capped_at_t2_until_timer_f() -> None:
    runner, tx, _req = non_invite_client()
    assert tx.state is TxState.TRYING
    assert runner.timers == {"E": T1, "F": 64 * T1}
    runner.advance(64 * T1)
    times = [t for t, _ in runner.sends()]
    # Intervals 0.5, 1, 2, 4, then 4 (T2) forever (§17.1.2.2).
    assert times == [0.0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5]
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)


def test_non_invite_proceeding_retransmits_every_t2() -> None:
    runner, tx, req = non_invite_client()
    runner.advance(0.2)
    trying = response(req, 100, "Trying")
    assert runner.handle(Received(trying)) == [Deliver(trying)]
    assert tx.state is TxState.PROCEEDING
    runner.advance(20)
    times = [t for t, _ in runner.sends()]
    # E still fires at 0.5 as armed, then is reset to T2 each time (§17.1.2.2).
    assert times == [0.0, 0.5, 4.5, 8.5, 12.5, 16.5]
    runner.advance(64 * T1)
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)


def test_non_invite_tcp_has_no_timer_e() -> None:
    runner, _, _ = non_invite_client(reliable=True)
    assert runner.timers == {"F": 64 * T1}
    runner.advance(64 * T1)
    assert len(runner.sends()) == 1
    assert runner.terminated == Terminated(TerminationReason.TIMEOUT)


def test_non_invite_final_completes_and_timer_k_absorbs_retransmissions() -> None:
    runner, tx, req = non_invite_client()
    ok = response(req, 200, "OK")
    runner.advance(0.1)
    actions = runner.handle(Received(ok))
    assert Deliver(ok) in actions
    assert tx.state is TxState.COMPLETED
    assert runner.timers == {"K": pytest.approx(0.1 + T4)}
    assert runner.handle(Received(ok)) == []
    runner.advance(10)
    assert runner.terminated == Terminated(TerminationReason.NORMAL)
    assert len(runner.sends()) == 1


def test_non_invite_timer_k_is_zero_over_tcp() -> None:
    runner, _, req = non_invite_client(reliable=True)
    final = response(req, 481, "Call/Transaction Does Not Exist")
    actions = runner.handle(Received(final))
    assert actions[-2:] == [Deliver(final), Terminated(TerminationReason.NORMAL)]


def test_non_invite_transport_error_and_noise() -> None:
    runner, _tx, req = non_invite_client()
    assert runner.handle(Received(req)) == []
    assert runner.handle(TimerFired("K")) == []
    assert runner.handle(TransportFailed())[-1] == Terminated(TerminationReason.TRANSPORT_ERROR)
    assert runner.handle(Received(response(req, 200))) == []
