"""Dialogs (RFC 3261 §12) driven from wire-level messages."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sipedge.sip.dialog import Dialog, DialogError, DialogId, default_branch, dialog_id
from sipedge.sip.headers import Via
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import parse_message
from sipedge.sip.uri import SipUri


def wire(*lines: str, body: str = "") -> bytes:
    return ("\r\n".join(lines) + f"\r\nContent-Length: {len(body)}\r\n\r\n" + body).encode()


def req(data: bytes) -> Request:
    msg = parse_message(data)
    assert isinstance(msg, Request)
    return msg


def resp(data: bytes) -> Response:
    msg = parse_message(data)
    assert isinstance(msg, Response)
    return msg


def branches() -> Iterator[str]:
    n = 0
    while True:
        n += 1
        yield f"z9hG4bK-test-{n}"


def counter() -> Callable[[], str]:
    it = branches()
    return lambda: next(it)


# ---------------------------------------------------------------------------------------------
# UAC: we (the edge) call out through two loose-routing proxies of the carrier.

OUR_INVITE = wire(
    "INVITE sip:+15551230000@carrier.example.net SIP/2.0",
    "Via: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bKinv1;rport",
    "Max-Forwards: 70",
    "From: <sip:+15559990000@203.0.113.5>;tag=ours",
    "To: <sip:+15551230000@carrier.example.net>",
    "Call-ID: out-1@203.0.113.5",
    "CSeq: 314159 INVITE",
    "Contact: <sip:edge@203.0.113.5:5060>",
)


def carrier_response(
    status: str, *, to_tag: str | None = "theirs", contact: str = "sip:gw@198.51.100.7:5070"
) -> bytes:
    tag = f";tag={to_tag}" if to_tag else ""
    return wire(
        f"SIP/2.0 {status}",
        "Via: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bKinv1;rport=5060;received=203.0.113.5",
        # Proxies record-route top-down as the request travels: p2 is the one next to the callee.
        "Record-Route: <sip:p2.carrier.example.net;lr>",
        'Record-Route: "edge proxy" <sip:p1.carrier.example.net;lr;transport=udp>;x=1',
        "From: <sip:+15559990000@203.0.113.5>;tag=ours",
        f"To: <sip:+15551230000@carrier.example.net>{tag}",
        "Call-ID: out-1@203.0.113.5",
        "CSeq: 314159 INVITE",
        f"Contact: <{contact}>",
    )


def uac_dialog(status: str = "200 OK") -> Dialog:
    return Dialog.uac(req(OUR_INVITE), resp(carrier_response(status)), new_branch=counter())


def test_uac_dialog_state_from_2xx() -> None:
    d = uac_dialog()
    assert d.id == DialogId("out-1@203.0.113.5", "ours", "theirs")
    assert str(d.remote_target) == "sip:gw@198.51.100.7:5070"
    # Record-Route reversed: the proxy next to us comes first.
    assert [str(r) for r in d.route_set] == [
        "edge proxy <sip:p1.carrier.example.net;lr;transport=udp>;x=1",
        "<sip:p2.carrier.example.net;lr>",
    ]
    assert (d.local_seq, d.remote_seq, d.invite_seq) == (314159, None, 314159)
    assert (d.secure, d.early) == (False, False)
    assert str(d.local_uri) == "<sip:+15559990000@203.0.113.5>;tag=ours"


def test_uac_ack_for_2xx_exact_bytes() -> None:
    d = uac_dialog()
    ack = d.create_request("ACK")
    assert bytes(ack) == wire(
        "ACK sip:gw@198.51.100.7:5070 SIP/2.0",
        "Via: SIP/2.0/UDP 203.0.113.5:5060;rport;branch=z9hG4bK-test-1",
        "Max-Forwards: 70",
        "Route: edge proxy <sip:p1.carrier.example.net;lr;transport=udp>;x=1",
        "Route: <sip:p2.carrier.example.net;lr>",
        "From: <sip:+15559990000@203.0.113.5>;tag=ours",
        "To: <sip:+15551230000@carrier.example.net>;tag=theirs",
        "Call-ID: out-1@203.0.113.5",
        "CSeq: 314159 ACK",
    )
    assert d.local_seq == 314159  # an ACK never consumes a sequence number


def test_uac_bye_then_reinvite_and_its_ack() -> None:
    d = uac_dialog()
    bye = d.create_request("BYE")
    assert (bye.cseq.seq, bye.cseq.method, str(bye.uri)) == (
        314160,
        "BYE",
        "sip:gw@198.51.100.7:5070",
    )
    assert "Contact" not in bye.headers  # not a target refresh
    reinvite = d.create_request("INVITE", body=b"v=0\r\n", content_type="application/sdp")
    assert reinvite.cseq.seq == 314161
    assert [str(c) for c in reinvite.contact] == ["<sip:edge@203.0.113.5:5060>"]
    assert reinvite.headers.get("Content-Type") == "application/sdp"
    assert bytes(reinvite).endswith(b"Content-Length: 5\r\n\r\nv=0\r\n")
    ack = d.create_request("ACK")
    assert ack.cseq.seq == 314161  # the re-INVITE's number (§13.2.2.4)
    info = d.create_request("INFO", headers=[("Content-Type", "application/dtmf-relay")])
    assert info.cseq.seq == 314162 and info.headers.get("Content-Type") == "application/dtmf-relay"
    # Fresh branch on every request, the dialog ids everywhere.
    vias = [m.top_via.branch for m in (bye, reinvite, ack, info)]
    assert vias == ["z9hG4bK-test-1", "z9hG4bK-test-2", "z9hG4bK-test-3", "z9hG4bK-test-4"]
    for m in (bye, reinvite, ack, info):
        assert (m.call_id, m.from_.tag, m.to.tag, m.max_forwards) == (
            "out-1@203.0.113.5",
            "ours",
            "theirs",
            70,
        )


def test_created_requests_round_trip_through_the_parser() -> None:
    d = uac_dialog()
    for method in ("BYE", "INVITE", "ACK", "UPDATE", "INFO"):
        sent = d.create_request(method)
        again = req(bytes(sent))
        assert bytes(again) == bytes(sent)
        assert dialog_id(again) == DialogId(
            d.call_id, d.remote_tag, d.local_tag
        )  # seen by the peer


def test_strict_router_gets_the_request_uri() -> None:
    response = resp(
        carrier_response("200 OK").replace(
            b'"edge proxy" <sip:p1.carrier.example.net;lr;transport=udp>;x=1',
            b"<sip:strict.carrier.example.net;transport=tcp?X-H=1>",
        )
    )
    d = Dialog.uac(req(OUR_INVITE), response, new_branch=default_branch)
    bye = d.create_request("BYE")
    # §12.2.1.1: R-URI = first route (URI headers removed), Route = the rest + remote target.
    assert str(bye.uri) == "sip:strict.carrier.example.net;transport=tcp"
    assert bye.headers.get_all("Route") == [
        "<sip:p2.carrier.example.net;lr>",
        "<sip:gw@198.51.100.7:5070>",
    ]
    assert bye.top_via.branch is not None and bye.top_via.branch.startswith("z9hG4bK")
    assert len(bye.top_via.branch) > len("z9hG4bK") + 8


def test_no_route_set_uses_remote_target_and_no_route_header() -> None:
    plain = carrier_response("200 OK").replace(b"Record-Route", b"X-Record-Route")
    d = Dialog.uac(req(OUR_INVITE), resp(plain))
    bye = d.create_request("BYE")
    assert str(bye.uri) == "sip:gw@198.51.100.7:5070" and "Route" not in bye.headers


def test_early_dialog_from_tagged_180_then_confirmed_by_200() -> None:
    ringing = carrier_response("180 Ringing", contact="sip:early@198.51.100.8").replace(
        b"Record-Route: <sip:p2.carrier.example.net;lr>\r\n", b""
    )
    d = Dialog.uac(req(OUR_INVITE), resp(ringing))
    assert d.early and len(d.route_set) == 1 and str(d.remote_target) == "sip:early@198.51.100.8"
    assert dialog_id(resp(carrier_response("200 OK"))) == d.id
    d.receive_response(resp(carrier_response("200 OK")))
    assert not d.early
    assert len(d.route_set) == 2  # recomputed from the 2xx (§13.2.2.4)
    assert str(d.remote_target) == "sip:gw@198.51.100.7:5070"


@pytest.mark.parametrize(
    ("status", "to_tag"),
    [("180 Ringing", None), ("100 Trying", "x"), ("486 Busy Here", "x"), ("302 Moved", "x")],
)
def test_responses_that_create_no_dialog(status: str, to_tag: str | None) -> None:
    with pytest.raises(DialogError):
        Dialog.uac(req(OUR_INVITE), resp(carrier_response(status, to_tag=to_tag)))


def test_2xx_without_to_tag_is_an_rfc2543_dialog_with_empty_remote_tag() -> None:
    d = Dialog.uac(req(OUR_INVITE), resp(carrier_response("200 OK", to_tag=None)))
    assert d.remote_tag == ""
    assert d.create_request("BYE").to.tag is None


def test_2xx_to_reinvite_refreshes_remote_target_but_bye_response_does_not() -> None:
    d = uac_dialog()
    d.create_request("INVITE")
    moved = carrier_response("200 OK", contact="sip:moved@198.51.100.9").replace(
        b"314159 INVITE", b"314160 INVITE"
    )
    d.receive_response(resp(moved))
    assert str(d.remote_target) == "sip:moved@198.51.100.9"
    bye_ok = carrier_response("200 OK", contact="sip:other@198.51.100.10").replace(
        b"314159 INVITE", b"314161 BYE"
    )
    d.receive_response(resp(bye_ok))
    assert str(d.remote_target) == "sip:moved@198.51.100.9"
    d.create_request("INVITE")
    two = carrier_response("200 OK", contact="sip:x@192.0.2.1>, <sip:y@192.0.2.2")
    d.receive_response(resp(two.replace(b"314159 INVITE", b"314162 INVITE")))
    assert str(d.remote_target) == "sip:moved@198.51.100.9"


def test_cancel_and_bad_branch_generators_are_refused() -> None:
    d = uac_dialog()
    with pytest.raises(DialogError):
        d.create_request("CANCEL")
    bad = Dialog.uac(
        req(OUR_INVITE), resp(carrier_response("200 OK")), new_branch=lambda: "nocookie"
    )
    with pytest.raises(DialogError):
        bad.create_request("BYE")


# ---------------------------------------------------------------------------------------------
# UAS: a carrier calls in; we answer 200.

CARRIER_INVITE = wire(
    "INVITE sips:+15559990000@edge.example.com SIP/2.0",
    "Via: SIP/2.0/TLS 198.51.100.20:5061;branch=z9hG4bKc1",
    "Record-Route: <sips:sbc2.carrier.example.net;lr>, <sips:sbc1.carrier.example.net;lr>",
    "Max-Forwards: 69",
    '"Caller" <sips:+15551230000@carrier.example.net>;tag=c-tag'.join(["From: ", ""]),
    "To: <sips:+15559990000@edge.example.com>",
    "Call-ID: in-1@carrier",
    "CSeq: 10 INVITE",
    "Contact: <sips:caller@198.51.100.20:5061;transport=tls>",
)
OUR_200 = wire(
    "SIP/2.0 200 OK",
    "Via: SIP/2.0/TLS 198.51.100.20:5061;branch=z9hG4bKc1",
    "Record-Route: <sips:sbc2.carrier.example.net;lr>, <sips:sbc1.carrier.example.net;lr>",
    '"Caller" <sips:+15551230000@carrier.example.net>;tag=c-tag'.join(["From: ", ""]),
    "To: <sips:+15559990000@edge.example.com>;tag=e-tag",
    "Call-ID: in-1@carrier",
    "CSeq: 10 INVITE",
    "Contact: <sips:edge@203.0.113.5:5061;transport=tls>",
)
EDGE_VIA = Via("TLS", "203.0.113.5", 5061, (("branch", "z9hG4bKstale"),))


def uas_dialog(initial: int = 1) -> Dialog:
    return Dialog.uas(
        req(CARRIER_INVITE),
        resp(OUR_200),
        local_via=EDGE_VIA,
        initial_local_seq=initial,
        new_branch=counter(),
    )


def in_dialog_request(method: str, cseq: int, contact: str | None = None) -> Request:
    lines = [
        f"{method} sips:edge@203.0.113.5:5061;transport=tls SIP/2.0",
        "Via: SIP/2.0/TLS 198.51.100.20:5061;branch=z9hG4bKc" + str(cseq),
        '"Caller" <sips:+15551230000@carrier.example.net>;tag=c-tag'.join(["From: ", ""]),
        "To: <sips:+15559990000@edge.example.com>;tag=e-tag",
        "Call-ID: in-1@carrier",
        f"CSeq: {cseq} {method}",
    ]
    if contact:
        lines.append(f"Contact: <{contact}>")
    return req(wire(*lines))


def test_uas_dialog_state() -> None:
    d = uas_dialog()
    assert d.id == DialogId("in-1@carrier", "e-tag", "c-tag")
    assert [str(r) for r in d.route_set] == [
        "<sips:sbc2.carrier.example.net;lr>",
        "<sips:sbc1.carrier.example.net;lr>",
    ]  # in order, not reversed
    assert str(d.remote_target) == "sips:caller@198.51.100.20:5061;transport=tls"
    assert (d.remote_seq, d.secure, d.early) == (10, True, False)
    assert dialog_id(in_dialog_request("BYE", 11)) == d.id


def test_uas_bye_exact_bytes() -> None:
    d = uas_dialog(initial=500)
    assert bytes(d.create_request("BYE")) == wire(
        "BYE sips:caller@198.51.100.20:5061;transport=tls SIP/2.0",
        "Via: SIP/2.0/TLS 203.0.113.5:5061;branch=z9hG4bK-test-1",
        "Max-Forwards: 70",
        "Route: <sips:sbc2.carrier.example.net;lr>",
        "Route: <sips:sbc1.carrier.example.net;lr>",
        "From: <sips:+15559990000@edge.example.com>;tag=e-tag",
        "To: Caller <sips:+15551230000@carrier.example.net>;tag=c-tag",
        "Call-ID: in-1@carrier",
        "CSeq: 500 BYE",
    )
    assert d.create_request("INFO").cseq.seq == 501


def test_uas_cannot_ack_before_sending_an_invite() -> None:
    d = uas_dialog()
    with pytest.raises(DialogError):
        d.create_request("ACK")
    d.create_request("INVITE")
    assert d.create_request("ACK").cseq.seq == 1


@pytest.mark.parametrize(
    ("method", "cseq", "expected", "remote_seq_after"),
    [
        ("BYE", 11, None, 11),
        ("INFO", 10, None, 10),  # equal is not lower
        ("INFO", 9, 500, 10),  # out of order (§12.2.2)
        ("UPDATE", 1, 500, 10),
        ("ACK", 10, None, 10),  # the ACK for our 2xx reuses the INVITE's number
        ("CANCEL", 3, None, 10),
    ],
)
def test_remote_cseq_check(
    method: str, cseq: int, expected: int | None, remote_seq_after: int
) -> None:
    d = uas_dialog()
    assert d.receive_request(in_dialog_request(method, cseq)) == expected
    assert d.remote_seq == remote_seq_after


def test_target_refresh_from_peer_reinvite() -> None:
    d = uas_dialog()
    reinvite = in_dialog_request("INVITE", 11, contact="sips:caller@198.51.100.21:5061")
    assert d.receive_request(reinvite) is None
    d.accept_target_refresh(reinvite)
    assert str(d.remote_target) == "sips:caller@198.51.100.21:5061"
    d.accept_target_refresh(in_dialog_request("INFO", 12, contact="sips:nope@192.0.2.1"))
    assert str(d.remote_target) == "sips:caller@198.51.100.21:5061"
    two = in_dialog_request("INVITE", 13, contact="sips:a@192.0.2.1>, <sips:b@192.0.2.2")
    d.accept_target_refresh(two)
    assert str(d.remote_target) == "sips:caller@198.51.100.21:5061"


def test_secure_needs_both_sips_and_tls() -> None:
    over_tcp = CARRIER_INVITE.replace(b"SIP/2.0/TLS", b"SIP/2.0/TCP")
    assert not Dialog.uas(req(over_tcp), resp(OUR_200), local_via=EDGE_VIA).secure
    sip_uri = CARRIER_INVITE.replace(b"INVITE sips:", b"INVITE sip:")
    assert not Dialog.uas(req(sip_uri), resp(OUR_200), local_via=EDGE_VIA).secure


@pytest.mark.parametrize(
    ("invite", "response"),
    [
        (
            CARRIER_INVITE.replace(b"Contact: <sips:caller", b"Contact: <sips:a@h>, <sips:caller"),
            OUR_200,
        ),
        (CARRIER_INVITE.replace(b"Contact:", b"X-Contact:"), OUR_200),
        (CARRIER_INVITE, OUR_200.replace(b";tag=e-tag", b"")),
        (CARRIER_INVITE, OUR_200.replace(b"200 OK", b"100 Trying")),
    ],
)
def test_uas_refuses_messages_that_cannot_create_a_dialog(invite: bytes, response: bytes) -> None:
    with pytest.raises(DialogError):
        Dialog.uas(req(invite), resp(response), local_via=EDGE_VIA)


def test_uas_contact_error_answers_400() -> None:
    bad = CARRIER_INVITE.replace(b"Contact:", b"X-Contact:")
    with pytest.raises(DialogError) as info:
        Dialog.uas(req(bad), resp(OUR_200), local_via=EDGE_VIA)
    assert info.value.status == 400


def test_default_branch_is_fresh_and_cookied() -> None:
    a, b = default_branch(), default_branch()
    assert a != b and a.startswith("z9hG4bK") and b.startswith("z9hG4bK")


def test_local_via_template_drops_stale_branch() -> None:
    d = uas_dialog()
    via = d.create_request("BYE").top_via
    assert via.branch == "z9hG4bK-test-1"
    assert [k for k, _ in via.params] == ["branch"]
    assert isinstance(d.remote_target, SipUri)
