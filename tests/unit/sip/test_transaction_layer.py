"""The asyncio transaction layer driven by a fake loop (time + call_at only) and a fake transport:
matching, the shared timer heap, stray ACKs/responses and transport failures, without sleeping."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from transaction_fixtures import request, response

from sipedge.sip.errors import TransportError
from sipedge.sip.message import Message, Request, Response
from sipedge.sip.parser import parse_message
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import Address, TerminationReason, TxState, build_response
from sipedge.stack.transactions import (
    AnyTransaction,
    ClientTransaction,
    ServerTransaction,
    SipTransport,
    TransactionLayer,
)

SRC = ("192.0.2.10", 5060)


class FakeHandle:
    def __init__(self, loop: FakeLoop, at: float, cb: Any) -> None:
        self.at, self.cb, self.cancelled = at, cb, False
        loop.handles.append(self)

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class FakeLoop:
    now: float = 0.0
    handles: list[FakeHandle] = field(default_factory=list)

    def time(self) -> float:
        return self.now

    def call_at(self, at: float, cb: Any) -> FakeHandle:
        return FakeHandle(self, at, cb)

    def pending(self) -> list[FakeHandle]:
        return [h for h in self.handles if not h.cancelled]

    def advance(self, until: float) -> None:
        while True:
            due = [h for h in self.pending() if h.at <= until]
            if not due:
                break
            h = min(due, key=lambda h: h.at)
            h.cancelled = True
            self.now = max(self.now, h.at)
            h.cb()
        self.now = until


@dataclass
class FakeTransport:
    name: str = "UDP"
    reliable: bool = False
    local_address: Address = ("198.51.100.1", 5060)
    sent: list[tuple[float, Message, Address]] = field(default_factory=list)
    fail: bool = False
    loop: FakeLoop | None = None

    def send_message(self, msg: Message, dest: Address) -> None:
        if self.fail:
            raise TransportError("unreachable")
        self.sent.append((self.loop.now if self.loop else 0.0, msg, dest))

    def send(self, data: bytes, dest: Address) -> None:
        msg = parse_message(data)
        self.send_message(msg, dest)


@dataclass
class RecordingTU:
    requests: list[tuple[Request, ServerTransaction | None]] = field(default_factory=list)
    responses: list[tuple[Response, ClientTransaction | None]] = field(default_factory=list)
    ended: list[tuple[AnyTransaction, TerminationReason]] = field(default_factory=list)
    auto_status: int | None = None

    def on_request(
        self, req: Request, tx: ServerTransaction | None, source: Address, transport: SipTransport
    ) -> None:
        self.requests.append((req, tx))
        if tx is not None and self.auto_status is not None and req.method != "ACK":
            tx.respond(build_response(req, self.auto_status, "Auto", to_tag="uas"))

    def on_response(self, resp: Response, tx: ClientTransaction | None) -> None:
        self.responses.append((resp, tx))

    def on_terminated(self, tx: AnyTransaction, reason: TerminationReason) -> None:
        self.ended.append((tx, reason))


def make(
    *, reliable: bool = False
) -> tuple[TransactionLayer, FakeLoop, FakeTransport, RecordingTU]:
    loop = FakeLoop()
    transport = FakeTransport(name="TCP" if reliable else "UDP", reliable=reliable, loop=loop)
    tu = RecordingTU()
    layer = TransactionLayer(
        tu, config=TimerConfig(0.5, 4.0, 5.0), loop=cast(asyncio.AbstractEventLoop, loop)
    )
    return layer, loop, transport, tu


def test_new_invite_gets_100_and_reaches_the_tu_once() -> None:
    layer, _loop, transport, tu = make()
    invite = request("INVITE")
    layer.on_message(invite, SRC, transport)
    layer.on_message(request("INVITE"), SRC, transport)  # retransmission
    assert [(m.status, d) for _, m, d in transport.sent] == [(100, SRC), (100, SRC)]  # type: ignore[union-attr]
    assert len(tu.requests) == 1 and tu.requests[0][1] is not None
    assert layer.server_count == 1


def test_final_response_retransmitted_from_one_heap_handle_until_ack() -> None:
    layer, loop, transport, tu = make()
    layer.on_message(request("INVITE"), SRC, transport)
    tx = tu.requests[0][1]
    assert tx is not None
    tx.respond(build_response(tx.request, 486, "Busy Here", to_tag="uas"))
    assert len(loop.pending()) == 1  # G and H share one loop handle
    loop.advance(4.0)
    times = [t for t, m, _ in transport.sent if isinstance(m, Response) and m.status == 486]
    assert times == [0.0, 0.5, 1.5, 3.5]
    layer.on_message(request("ACK", to_tag="uas"), SRC, transport)
    assert tx.state is TxState.CONFIRMED
    loop.advance(100)
    assert (
        len([m for _, m, _ in transport.sent if isinstance(m, Response) and m.status == 486]) == 4
    )
    assert layer.server_count == 0 and layer.timer_count == 0
    assert tu.ended == [(tx, TerminationReason.NORMAL)]
    assert [r.method for r, _ in tu.requests] == ["INVITE"]  # the non-2xx ACK stays in the layer


def test_timer_h_reports_timeout_to_the_tu() -> None:
    layer, loop, transport, tu = make(reliable=True)
    layer.on_message(request("INVITE", transport="TCP"), SRC, transport)
    tx = tu.requests[0][1]
    assert tx is not None
    tx.respond(build_response(tx.request, 500, "Oops", to_tag="uas"))
    loop.advance(31.9)
    assert tu.ended == []
    loop.advance(32.1)
    assert tu.ended == [(tx, TerminationReason.TIMEOUT)]
    assert layer.server_count == 0


def test_stray_ack_for_2xx_goes_to_the_tu_without_transaction() -> None:
    layer, _loop, transport, tu = make()
    ack = request("ACK", branch="z9hG4bK-new-ack", to_tag="uas")
    layer.on_message(ack, SRC, transport)
    assert tu.requests == [(ack, None)]
    assert transport.sent == [] and layer.server_count == 0


def test_client_invite_retransmits_then_matches_responses_and_strays() -> None:
    layer, loop, transport, tu = make()
    invite = request("INVITE", branch="z9hG4bK-out-1")
    tx = layer.send_request(invite, ("203.0.113.5", 5060), transport)
    loop.advance(1.6)
    assert [t for t, _, _ in transport.sent] == [0.0, 0.5, 1.5]
    ok = response(invite, 200, "OK")
    layer.on_message(ok, ("203.0.113.5", 5060), transport)
    assert tu.responses == [(ok, tx)] and tx.state is TxState.ACCEPTED
    loop.advance(1.6 + 32)
    assert layer.client_count == 0
    layer.on_message(ok, ("203.0.113.5", 5060), transport)  # after Timer M: stray
    assert tu.responses[-1] == (ok, None)
    assert len(transport.sent) == 3


def test_send_request_adds_our_via_with_a_fresh_branch() -> None:
    layer, _loop, transport, _tu = make()
    options = request("OPTIONS")
    options.headers.remove("Via")
    tx = layer.send_request(options, ("203.0.113.5", 5060), transport)
    via = options.top_via
    assert (via.transport, via.host, via.port) == ("UDP", "198.51.100.1", 5060)
    assert via.branch is not None and via.branch.startswith("z9hG4bK") and via.has_rport
    assert tx.key.branch == via.branch
    with pytest.raises(ValueError):
        layer.send_request(request("ACK"), ("203.0.113.5", 5060), transport)


def test_non_invite_client_timeout_and_transport_error_reach_the_tu() -> None:
    layer, loop, transport, tu = make()
    tx = layer.send_request(
        request("OPTIONS", branch="z9hG4bK-o1"), ("203.0.113.5", 5060), transport
    )
    loop.advance(40)
    assert tu.ended == [(tx, TerminationReason.TIMEOUT)]
    transport.fail = True
    tx2 = layer.send_request(
        request("OPTIONS", branch="z9hG4bK-o2"), ("203.0.113.5", 5060), transport
    )
    assert tu.ended[-1] == (tx2, TerminationReason.TRANSPORT_ERROR)
    assert layer.client_count == 0 and layer.timer_count == 0


def test_cancel_gets_its_own_transaction_and_finds_the_invite() -> None:
    layer, _loop, transport, tu = make()
    layer.on_message(request("INVITE", branch="z9hG4bK-c"), SRC, transport)
    layer.on_message(request("CANCEL", branch="z9hG4bK-c"), SRC, transport)
    (_invite, invite_tx), (cancel, cancel_tx) = tu.requests
    assert cancel.method == "CANCEL" and cancel_tx is not None and cancel_tx is not invite_tx
    assert layer.find_invite(cancel) is invite_tx
    assert layer.find_invite(request("CANCEL", branch="z9hG4bK-other")) is None


def test_tu_answering_inside_the_callback_and_heap_compaction() -> None:
    layer, loop, transport, tu = make()
    tu.auto_status = 200
    for i in range(400):
        layer.on_message(request("OPTIONS", branch=f"z9hG4bK-n{i}"), SRC, transport)
    # 400 transactions answered synchronously, each now only waiting out Timer J: kept as
    # records (stack.wait_records), no FSM timer left, one loop handle for their expiry.
    assert layer.server_count == 400 and layer.timer_count == 0
    assert len(loop.pending()) == 1  # the records' sweep; their timers never reached the heap
    loop.advance(33)
    assert layer.server_count == 0 and layer.timer_count == 0 and loop.pending() == []


def test_responses_go_to_rport_source_or_sent_by_port_and_via_is_stamped() -> None:
    layer, _loop, transport, tu = make()
    # rport requested: the source address, and received/rport recorded (RFC 3581 §4).
    layer.on_message(request("INVITE", branch="z9hG4bK-r1"), ("203.0.113.9", 40000), transport)
    _, trying, dest = transport.sent[-1]
    assert dest == ("203.0.113.9", 40000)
    assert trying.top_via.received == "203.0.113.9" and trying.top_via.rport == 40000
    # No rport: the source IP with the sent-by port (RFC 3261 §18.2.2).
    no_rport = request("OPTIONS", branch="z9hG4bK-r2")
    no_rport.headers.replace_first("Via", "SIP/2.0/UDP 192.0.2.10:5070;branch=z9hG4bK-r2")
    tu.auto_status = 200
    layer.on_message(no_rport, ("203.0.113.9", 40000), transport)
    assert transport.sent[-1][2] == ("203.0.113.9", 5070)


def test_reliable_responses_go_back_to_the_connection_peer() -> None:
    layer, _loop, transport, _tu = make(reliable=True)
    invite = request("INVITE", transport="TCP")
    invite.headers.replace_first("Via", "SIP/2.0/TCP 192.0.2.10:5070;branch=z9hG4bK-t1")
    layer.on_message(invite, ("203.0.113.9", 40001), transport)
    assert transport.sent[-1][2] == ("203.0.113.9", 40001)


def test_transport_messages_are_routed_by_name_and_connect_failures_reach_transactions() -> None:
    layer, _loop, transport, tu = make(reliable=True)
    layer.attach(transport)
    layer.on_transport_message(request("OPTIONS", transport="TCP"), SRC, "TCP", object())
    assert len(tu.requests) == 1
    layer.on_transport_message(request("OPTIONS", branch="z9hG4bK-u"), SRC, "SCTP", object())
    assert len(tu.requests) == 1  # no such transport attached: dropped
    tx = layer.send_request(
        request("INVITE", branch="z9hG4bK-cf"), ("203.0.113.5", 5060), transport
    )
    layer.connect_failed(("203.0.113.5", 5060), TransportError("connection refused"))
    assert tu.ended[-1] == (tx, TerminationReason.TRANSPORT_ERROR)
    assert layer.client_count == 0


def test_heap_compaction_while_a_timer_fires_keeps_the_schedule() -> None:
    layer, loop, udp, _tu = make()
    tcp = FakeTransport(name="TCP", reliable=True, loop=loop)
    dest = ("203.0.113.5", 5060)
    watched = layer.send_request(request("OPTIONS", branch="z9hG4bK-w"), dest, udp)
    others = [
        layer.send_request(request("OPTIONS", branch=f"z9hG4bK-t{i}", transport="TCP"), dest, tcp)
        for i in range(299)
    ]
    for tx in others:  # final responses over TCP: Timer K is zero, 299 Timer F entries go stale
        layer.on_message(response(tx.request, 200, "OK"), dest, tcp)
    assert layer.timer_count == 2  # E and F of the watched transaction
    # Timer E fires at 0.5 and re-arms inside the tick, which compacts the heap.
    loop.advance(3.6)
    assert [t for t, m, _ in udp.sent if m is watched.request] == [0.0, 0.5, 1.5, 3.5]


def test_a_failing_tu_is_logged_and_the_transaction_still_runs(caplog) -> None:
    layer, _loop, transport, tu = make()

    def boom(*args: object) -> None:
        raise RuntimeError("TU bug")

    tu.on_request = boom  # type: ignore[method-assign]
    layer.on_message(request("INVITE"), SRC, transport)
    layer.on_message(request("ACK", branch="z9hG4bK-stray", to_tag="x"), SRC, transport)
    assert [r.message for r in caplog.records].count(
        "TU failed handling Request(INVITE sip:bob@198.51.100.1:5060)"
    ) == 1
    assert any("stray" in r.message for r in caplog.records)
    assert layer.server_count == 1  # 100 Trying sent, transaction alive despite the TU error
    assert transport.sent[0][1].status == 100  # type: ignore[union-attr]


def test_at_max_transactions_a_new_request_gets_a_stateless_503_with_retry_after() -> None:
    from sipedge.metrics import LIMIT_CHILDREN, SipLimit

    layer, _loop, transport, tu = make()
    layer.max_transactions = 1
    layer.overload_warning = '399 sipedge "overloaded"'
    hits = LIMIT_CHILDREN[SipLimit.TRANSACTIONS]._value.get()
    layer.on_message(request("INVITE"), SRC, transport)
    assert layer.server_count == 1
    layer.on_message(request("INVITE", branch="z9hG4bK-tx-2", call_id="call-2"), SRC, transport)
    layer.on_message(request("OPTIONS", branch="z9hG4bK-tx-3", call_id="call-3"), SRC, transport)
    busy = [m for _, m, _ in transport.sent if isinstance(m, Response) and m.status == 503]
    assert len(busy) == 2 and all(m.headers.get("Retry-After") == "5" for m in busy)
    assert all(m.headers.get("Warning") == '399 sipedge "overloaded"' for m in busy)
    assert all(m.to.tag for m in busy)
    assert layer.server_count == 1 and len(tu.requests) == 1  # no state, the TU saw nothing
    assert LIMIT_CHILDREN[SipLimit.TRANSACTIONS]._value.get() == hits + 2
    # The live transaction still works (a retransmission is absorbed, not refused) ...
    layer.on_message(request("INVITE"), SRC, transport)
    assert [m.status for _, m, _ in transport.sent if isinstance(m, Response)][-1] == 100
    # ... and an ACK is never answered, even over the cap.
    layer.on_message(
        request("ACK", branch="z9hG4bK-tx-9", call_id="c9", to_tag="x"), SRC, transport
    )
    assert len([m for _, m, _ in transport.sent if isinstance(m, Response)]) == 4


def test_deferred_tu_sees_every_datagram_answered_first_and_callbacks_in_order() -> None:
    """defer_tu (the edge's mode): the 100 Trying of each INVITE leaves inside on_message, the
    TU callbacks wait for the loop's ready queue and run in arrival order."""
    loop = FakeLoop()
    queued: list[tuple[Any, tuple[Any, ...]]] = []
    loop.call_soon = lambda cb, *args: queued.append((cb, args))  # type: ignore[attr-defined]
    transport = FakeTransport(loop=loop)
    tu = RecordingTU()
    layer = TransactionLayer(
        tu, config=TimerConfig(0.5, 4.0, 5.0), loop=cast(asyncio.AbstractEventLoop, loop),
        defer_tu=True,
    )  # fmt: skip
    layer.on_message(request("INVITE", branch="z9hG4bK-d1"), SRC, transport)
    layer.on_message(request("OPTIONS", branch="z9hG4bK-d2"), SRC, transport)
    layer.on_message(request("INVITE", branch="z9hG4bK-d3"), SRC, transport)
    assert [m.status for _, m, _ in transport.sent] == [100, 100]  # type: ignore[union-attr]
    assert tu.requests == [] and len(queued) == 3
    for cb, args in queued:
        cb(*args)
    branches = [r.top_via.branch for r, _ in tu.requests]
    assert branches == ["z9hG4bK-d1", "z9hG4bK-d2", "z9hG4bK-d3"]


def test_a_retired_non_invite_server_answers_retransmissions_from_its_record() -> None:
    layer, loop, transport, tu = make()
    tu.auto_status = 200
    layer.on_message(request("BYE", branch="z9hG4bK-r"), SRC, transport)
    assert tu.ended and tu.ended[-1][1] is TerminationReason.NORMAL  # retired at once
    first = bytes(transport.sent[-1][1])
    loop.advance(10)
    layer.on_message(request("BYE", branch="z9hG4bK-r"), SRC, transport)  # retransmission
    assert len(tu.requests) == 1  # not a new transaction
    assert bytes(transport.sent[-1][1]) == first and transport.sent[-1][0] == 10
    loop.advance(64 * 0.5 + 0.01)  # Timer J: the record is gone
    assert layer.server_count == 0 and loop.pending() == []
    layer.on_message(request("BYE", branch="z9hG4bK-r"), SRC, transport)
    assert len(tu.requests) == 2  # now it is new again


def test_a_retired_accepted_invite_absorbs_invites_and_passes_its_ack_up() -> None:
    layer, _loop, transport, tu = make()
    layer.on_message(request("INVITE", branch="z9hG4bK-a"), SRC, transport)
    _, tx = tu.requests[0]
    assert tx is not None
    tx.respond(build_response(tx.request, 200, "OK", to_tag="uas"))
    sent = len(transport.sent)
    layer.on_message(request("INVITE", branch="z9hG4bK-a"), SRC, transport)
    assert len(transport.sent) == sent and len(tu.requests) == 1  # absorbed (RFC 6026 §8.6)
    ack = request("ACK", branch="z9hG4bK-a", to_tag="uas")
    layer.on_message(ack, SRC, transport)
    assert tu.requests[-1] == (ack, None)  # up to the TU (§8.7), as a stray ACK
    # The TU's own 2xx retransmissions still leave through the object it holds.
    tx.respond(build_response(tx.request, 200, "OK", to_tag="uas"))
    assert len(transport.sent) == sent + 1


def test_a_retired_invite_client_re_sends_its_ack_and_passes_2xx_up() -> None:
    layer, loop, transport, tu = make()
    dest = ("203.0.113.5", 5060)
    rejected = layer.send_request(request("INVITE", branch="z9hG4bK-cl1"), dest, transport)
    busy = response(rejected.request, 486, "Busy")
    layer.on_message(busy, dest, transport)
    ack = bytes(transport.sent[-1][1])
    assert ack.startswith(b"ACK ")
    layer.on_message(busy, dest, transport)  # retransmitted final: the ACK again (§17.1.1.2)
    assert bytes(transport.sent[-1][1]) == ack and len(tu.responses) == 1
    answered = layer.send_request(request("INVITE", branch="z9hG4bK-cl2"), dest, transport)
    ok = response(answered.request, 200, "OK")
    layer.on_message(ok, dest, transport)
    layer.on_message(ok, dest, transport)  # retransmission: to the TU (RFC 6026 §8.4)
    assert tu.responses[-2] == (ok, answered) and tu.responses[-1] == (ok, None)
    assert layer.client_count == 2
    loop.advance(40)
    assert layer.client_count == 0


def test_wait_records_are_swept_in_batches_not_one_wake_up_each() -> None:
    from sipedge.stack.wait_records import WaitRecord, WaitRecords

    loop = FakeLoop()
    records = WaitRecords(cast(asyncio.AbstractEventLoop, loop))
    for i in range(200):  # one every 5 ms, each with its own expiry 32 s later
        loop.now = i * 0.005
        records.add(True, ("z9hG4bK", str(i)), WaitRecord(loop.now + 32, False, None, SRC, "UDP"))
    loop.advance(33.0)
    assert len(records) == 0
    assert len(loop.handles) <= 4  # 200 expiries, a handful of sweeps (0.5 s apart at most)
    loop.now = 40.0
    records.add(False, ("z9hG4bK", "late"), WaitRecord(40.1, True, None, SRC, "UDP"))
    loop.advance(40.2)
    assert ("z9hG4bK", "late") in records.client  # kept up to 0.5 s longer
    loop.advance(40.6)
    assert len(records) == 0
