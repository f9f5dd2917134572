"""The carrier INVITE of an outbound call, built from values (no sockets)."""

from __future__ import annotations

import pytest

from sipedge.runtime.outbound_messages import (
    build_carrier_invite,
    carrier_offer,
    carrier_request_uri,
    rewrite_origin,
)


@pytest.mark.parametrize(("plus", "user"), [(True, "+12125550123"), (False, "12125550123")])
def test_request_uri_to_and_from_follow_the_leading_plus_rule(plus: bool, user: str) -> None:
    uri = carrier_request_uri("+12125550123", "sip.carrier.example", 5080, "udp", plus)
    assert str(uri) == f"sip:{user}@sip.carrier.example:5080"
    invite = build_carrier_invite(
        request_uri=uri, from_number="+14155550100", plus=plus, local_host="192.0.2.1",
        via="SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKx;rport", contact="<sip:sipedge@192.0.2.1>",
        call_id="c1", from_tag="t1", cseq=1, body=b"v=0\r\n",
        authorization=("Proxy-Authorization", 'Digest username="u"'),
    )  # fmt: skip
    assert invite.headers.get("To") == f"<sip:{user}@sip.carrier.example>"
    assert invite.headers.get("From") == f"<sip:{'+' if plus else ''}14155550100@192.0.2.1>;tag=t1"
    assert invite.headers.get("Proxy-Authorization") == 'Digest username="u"'
    assert invite.headers.get("CSeq") == "1 INVITE"


def test_tcp_request_uri() -> None:
    assert str(carrier_request_uri("+1", "10.0.0.1", 5060, "tcp", True)).endswith(";transport=tcp")


def test_offer_lists_the_trunk_codecs_in_order_then_telephone_event() -> None:
    offer = carrier_offer("192.0.2.1", ("PCMA", "PCMU"), 42).decode()
    assert "m=audio 9 RTP/AVP 8 0 101\r\n" in offer
    assert "a=rtpmap:101 telephone-event/8000" in offer
    assert "o=sipedge 42 1 IN IP4 192.0.2.1" in offer


def test_rewrite_origin_keeps_our_session_and_bumps_the_version() -> None:
    answer = b"v=0\r\no=agent 7 7 IN IP4 10.1.1.1\r\ns=-\r\nc=IN IP4 10.1.1.1\r\n"
    out = rewrite_origin(answer, "192.0.2.1", 42, 2)
    assert out == b"v=0\r\no=sipedge 42 2 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 10.1.1.1\r\n"


def test_store_refusal_texts_equal_the_edge_ones() -> None:
    from sipedge.edge.outbound import OutboundRefusal, Refused
    from sipedge.store.outbound_calls import REFUSALS

    assert {reason.value: Refused(reason).message for reason in OutboundRefusal} == REFUSALS
