"""The decision -> response renderer and the topology-hiding filter (pure, no sockets)."""

from __future__ import annotations

import pytest

from sipedge.edge.decisions import MetricReason, Reject
from sipedge.runtime.responses import (
    RELAYED_AGENT_FAILURES,
    agent_failure_answer,
    contact_value,
    edge_warning,
    reason_phrase,
    relay_response,
    relayable_headers,
    render_reject,
    respond,
    safe_reason,
)
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import parse_message

CARRIER_INVITE = (
    b"INVITE sip:+14155550100@198.51.100.1 SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP 203.0.113.7:5060;branch=z9hG4bKcarrier1;rport\r\n"
    b"Via: SIP/2.0/UDP 203.0.113.9:5060;branch=z9hG4bKcarrier0\r\n"
    b"From: <sip:+14155550999@203.0.113.7>;tag=c1\r\n"
    b"To: <sip:+14155550100@198.51.100.1>\r\n"
    b"Call-ID: carrier-call-1\r\n"
    b"CSeq: 1 INVITE\r\n"
    b"Contact: <sip:carrier@203.0.113.7>\r\n"
    b"Max-Forwards: 70\r\n"
    b"Content-Length: 0\r\n\r\n"
)

AGENT_OK = (
    b"SIP/2.0 200 Agent OK\r\n"
    b"Via: SIP/2.0/UDP 10.0.0.5:5060;branch=z9hG4bKedge1;received=10.0.0.5;rport=5060\r\n"
    b"From: <sip:+14155550999@10.0.0.5>;tag=e1\r\n"
    b"To: <sip:+14155550100@10.0.0.9>;tag=a1\r\n"
    b"Call-ID: agent-call-1\r\n"
    b"CSeq: 1 INVITE\r\n"
    b"Contact: <sip:agent@10.0.0.9:5090>\r\n"
    b"Record-Route: <sip:10.0.0.8;lr>\r\n"
    b"Server: agent-runtime/1.2\r\n"
    b"User-Agent: agent-runtime/1.2\r\n"
    b"X-Sipedge-Run-Id: 1b4e28ba-2fa1-11d2-883f-0016d3cca427\r\n"
    b"Content-Disposition: session\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 4\r\n\r\nv=0\n"
)


def carrier_invite() -> Request:
    msg = parse_message(CARRIER_INVITE)
    assert isinstance(msg, Request)
    return msg


def agent_ok() -> Response:
    msg = parse_message(AGENT_OK)
    assert isinstance(msg, Response)
    return msg


def test_render_reject_names_the_rule_in_a_warning() -> None:
    reject = Reject(486, "channel limit reached", MetricReason.CHANNELS, trunk_ids=("t1",))
    response = render_reject(carrier_invite(), reject, to_tag="edge1")
    assert (response.status, response.reason) == (486, "Busy Here")
    assert response.headers.get("Warning") == '399 sipedge "channel limit reached"'
    assert response.to.tag == "edge1"
    # RFC 3261 §8.2.6: every Via, in order; From/Call-ID/CSeq copied.
    assert response.headers.get_all("Via") == carrier_invite().headers.get_all("Via")
    assert response.call_id == "carrier-call-1" and response.cseq.method == "INVITE"


def test_rejection_carries_nothing_but_the_rule() -> None:
    reject = Reject(404, "number not found", MetricReason.NO_NUMBER, trunk_id="t-secret-id")
    wire = bytes(render_reject(carrier_invite(), reject, to_tag="x"))
    assert b"t-secret-id" not in wire and b"10.0.0." not in wire
    assert wire.count(b"Warning:") == 1


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("agent unavailable", '399 sipedge "agent unavailable"'),
        ('bad "quote"\\', '399 sipedge "bad quote"'),
        ("line\r\nInjected: 1", '399 sipedge "lineInjected: 1"'),
    ],
)
def test_edge_warning_is_a_safe_quoted_string(rule: str, expected: str) -> None:
    assert edge_warning(rule) == expected


@pytest.mark.parametrize(
    ("agent_status", "expected"),
    [
        (486, (486, "agent busy")),
        (600, (600, "agent busy")),
        (603, (603, "agent declined")),
        (404, (503, "agent unavailable")),
        (480, (503, "agent unavailable")),
        (500, (503, "agent unavailable")),
        (503, (503, "agent unavailable")),
        (None, (503, "agent unavailable")),  # Timer B, ring bound, transport error
    ],
)
def test_agent_failures_map_to_503_except_the_callee_answers(agent_status, expected) -> None:
    assert agent_failure_answer(agent_status) == expected
    assert frozenset({486, 600, 603}) == RELAYED_AGENT_FAILURES


def test_relay_response_hides_the_agent_leg() -> None:
    contact = contact_value("198.51.100.1", 5060, "UDP")
    out = relay_response(
        carrier_invite(), agent_ok(), to_tag="edge1", contact=contact, body=b"v=0\r\n"
    )
    wire = bytes(out)
    for leak in (b"10.0.0.", b"agent-runtime", b"X-Sipedge", b"Record-Route", b"z9hG4bKedge1"):
        assert leak not in wire
    assert out.headers.get_all("Contact") == ["<sip:sipedge@198.51.100.1:5060>"]
    assert out.headers.get_all("Via") == carrier_invite().headers.get_all("Via")
    assert (out.status, out.reason, out.body) == (200, "Agent OK", b"v=0\r\n")
    assert out.headers.get("Content-Type") == "application/sdp"
    assert out.to.tag == "edge1" and out.call_id == "carrier-call-1"


def test_relay_response_without_body_has_no_content_type() -> None:
    out = relay_response(carrier_invite(), agent_ok(), to_tag="t", contact=None, body=None)
    assert "Content-Type" not in out.headers and out.body == b""
    assert "Contact" not in out.headers


def test_relayable_headers_is_an_allow_list() -> None:
    names = [name.lower() for name, _ in relayable_headers(agent_ok())]
    assert names == ["content-disposition", "content-type"]


def test_safe_reason_strips_controls_and_bounds_length() -> None:
    assert safe_reason("OK\r\nX-Evil: 1", 200) == "OKX-Evil: 1"
    assert safe_reason("", 503) == "Service Unavailable"
    assert safe_reason("\x00\x01", 486) == "Busy Here"
    assert len(safe_reason("x" * 500, 200)) == 64


def test_reason_phrases() -> None:
    assert reason_phrase(487) == "Request Terminated"
    assert reason_phrase(499) == "Client Error"
    assert reason_phrase(699) == "Global Failure"


def test_405_lists_allowed_methods() -> None:
    response = respond(carrier_invite(), 405, to_tag="t")
    assert response.headers.get("Allow") == "INVITE, ACK, BYE, CANCEL, OPTIONS, INFO"


def test_contact_value_forms() -> None:
    assert (
        contact_value("2001:db8::1", 5070, "TCP")
        == "<sip:sipedge@[2001:db8::1]:5070;transport=tcp>"
    )
    assert contact_value("192.0.2.1", 5060, "UDP") == "<sip:sipedge@192.0.2.1:5060>"
