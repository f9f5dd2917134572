"""Building the agent leg's INVITE and CANCEL (pure)."""

from __future__ import annotations

from sipedge.edge.channels import ChannelLease
from sipedge.edge.inbound import InboundRoute
from sipedge.edge.snapshot import AgentView, NumberView, TrunkView
from sipedge.runtime.messages import (
    build_agent_invite,
    build_cancel,
    caller_number,
    via_value,
)
from sipedge.sip.headers import parse_name_addr
from sipedge.sip.parser import parse_message
from sipedge.sip.uri import SipUri, parse_uri

ROUTE = InboundRoute(
    trunk=TrunkView(id="trunk-9"),
    number=NumberView("number-9", "trunk-9", "+14155550100", "14155550100", agent_id="agent-9"),
    agent=AgentView("agent-9"),
    lease=ChannelLease("trunk-9", "carrier-call"),
    sdp=b"v=0\r\n",
    late_offer=False,
    dialled="14155550100",
    snapshot_version=3,
)


def invite(**changes):
    target = parse_uri("sip:127.0.0.1:5090")
    assert isinstance(target, SipUri)
    args = {
        "route": ROUTE,
        "run_id": "run-1",
        "target": target,
        "via": via_value("UDP", "192.0.2.1", 5060, branch="z9hG4bKabc"),
        "contact": "<sip:sipedge@192.0.2.1:5060>",
        "call_id": "agent-call@sipedge",
        "from_tag": "ft",
        "caller": "+14155550999",
        "local_host": "192.0.2.1",
        "max_forwards": 69,
    }
    args.update(changes)
    return build_agent_invite(**args)


def test_agent_invite_names_run_agent_trunk_and_number() -> None:
    req = invite()
    headers = req.headers
    assert headers.get("X-Sipedge-Run-Id") == "run-1"
    assert headers.get("X-Sipedge-Agent-Id") == "agent-9"
    assert headers.get("X-Sipedge-Trunk-Id") == "trunk-9"
    assert headers.get("X-Sipedge-Number-Id") == "number-9"
    assert str(req.uri) == "sip:+14155550100@127.0.0.1:5090"
    assert str(req.from_.uri) == "sip:+14155550999@192.0.2.1" and req.from_.tag == "ft"
    assert str(req.to.uri) == "sip:+14155550100@127.0.0.1:5090" and req.to.tag is None
    assert req.headers.get("Content-Type") == "application/sdp" and req.body == b"v=0\r\n"
    assert req.top_via.branch == "z9hG4bKabc" and req.top_via.has_rport
    # Round-trips through our own parser: a well-formed request.
    again = parse_message(bytes(req))
    assert again.headers.get("X-Sipedge-Run-Id") == "run-1"


def test_agent_invite_clamps_max_forwards_and_omits_empty_body() -> None:
    late = InboundRoute(**{**{f: getattr(ROUTE, f) for f in ROUTE.__slots__}, "sdp": None})
    req = invite(route=late, max_forwards=200)
    assert req.headers.get("Max-Forwards") == "70"
    assert "Content-Type" not in req.headers and req.body == b""


def test_endpoint_with_a_user_keeps_it() -> None:
    target = parse_uri("sip:agents@10.1.2.3:5090;transport=tcp")
    assert str(invite(target=target).uri) == "sip:agents@10.1.2.3:5090;transport=tcp"


def test_cancel_matches_the_invite_transaction() -> None:
    req = invite()
    cancel = build_cancel(req)
    assert cancel.method == "CANCEL" and cancel.uri == req.uri
    assert cancel.headers.get_all("Via") == [req.headers.get_all("Via")[0]]
    assert (cancel.cseq.seq, cancel.cseq.method) == (1, "CANCEL")
    assert cancel.headers.get("To") == req.headers.get("To")
    assert cancel.headers.get("From") == req.headers.get("From")
    assert cancel.body == b""


def test_caller_number_normalises_or_hides() -> None:
    assert caller_number(parse_name_addr('"Bob" <sip:+1-415-555-0999@x>')) == "+14155550999"
    assert caller_number(parse_name_addr("<tel:+44-20-7946-0958>")) == "+442079460958"
    assert caller_number(parse_name_addr("<sip:alice@example.com>")) == "anonymous"
    assert caller_number(parse_name_addr("<sip:example.com>")) == "anonymous"


def test_via_value_brackets_ipv6() -> None:
    assert via_value("TCP", "2001:db8::1", 5060, branch="z9hG4bK1") == (
        "SIP/2.0/TCP [2001:db8::1]:5060;branch=z9hG4bK1;rport"
    )
