"""``render_decision``: the one switch from a pipeline decision to response + metric."""

from __future__ import annotations

from sipedge.edge.channels import ChannelLease
from sipedge.edge.decisions import Accept, Drop, MetricReason, Reject
from sipedge.edge.inbound import InboundRoute
from sipedge.edge.snapshot import AgentView, NumberView, TrunkView
from sipedge.metrics import REGISTRY
from sipedge.runtime.handlers import render_decision
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import parse_message

INVITE = (
    b"INVITE sip:+14155550100@192.0.2.1 SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP 203.0.113.7;branch=z9hG4bKr1\r\n"
    b"From: <sip:+1415@203.0.113.7>;tag=a\r\nTo: <sip:+14155550100@192.0.2.1>\r\n"
    b"Call-ID: render-1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
)


class FakeTx:
    def __init__(self) -> None:
        self.sent: list[Response] = []

    def respond(self, response: Response) -> None:
        self.sent.append(response)


def invite() -> Request:
    msg = parse_message(INVITE)
    assert isinstance(msg, Request)
    return msg


def count(action: str, outcome: str) -> float:
    labels = {"action": action, "outcome": outcome}
    return REGISTRY.get_sample_value("sipedge_inbound_invites_total", labels) or 0.0


def test_reject_is_answered_counted_and_tagged() -> None:
    tx, before = FakeTx(), count("rejected", "codecs")
    reject = Reject(488, "no common codec", MetricReason.CODECS, trunk_ids=("t",), trunk_id="t")
    assert render_decision(reject, invite(), tx, "tag9") is None  # type: ignore[arg-type]
    [response] = tx.sent
    assert response.status == 488 and response.to.tag == "tag9"
    assert response.headers.get("Warning") == '399 sipedge "no common codec"'
    assert count("rejected", "codecs") == before + 1


def test_drop_sends_nothing_but_counts() -> None:
    tx = FakeTx()
    before = count("dropped", "unknown_source")
    drops = (
        REGISTRY.get_sample_value("sipedge_inbound_drops_total", {"reason": "unknown_source"})
        or 0.0
    )
    render_decision(Drop(MetricReason.UNKNOWN_SOURCE), invite(), tx, "t")  # type: ignore[arg-type]
    assert tx.sent == []
    assert count("dropped", "unknown_source") == before + 1
    assert (
        REGISTRY.get_sample_value("sipedge_inbound_drops_total", {"reason": "unknown_source"})
        == drops + 1
    )


def test_accept_returns_the_route_without_answering() -> None:
    route = InboundRoute(
        trunk=TrunkView(id="t"),
        number=NumberView("n", "t", "+1415", "1415"),
        agent=AgentView("a"),
        lease=ChannelLease("t", "render-1"),
        sdp=None,
        late_offer=True,
        dialled="1415",
        snapshot_version=1,
    )
    tx, before = FakeTx(), count("accepted", "accepted")
    assert render_decision(Accept(route), invite(), tx, "t") is route  # type: ignore[arg-type]
    assert tx.sent == [] and count("accepted", "accepted") == before + 1
