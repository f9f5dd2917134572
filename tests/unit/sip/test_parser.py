"""parse_message / Headers / bytes(msg): framing of datagrams, header access, round trip."""

from __future__ import annotations

import pytest

from sipedge.sip.errors import SipError
from sipedge.sip.message import Headers, Request, Response
from sipedge.sip.parser import parse_message
from sipedge.sip.uri import SipUri

INVITE = (
    b"INVITE sip:+15551230000@198.51.100.10:5060;transport=udp SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bK-1;rport\r\n"
    b"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-0, SIP/2.0/TCP 10.0.0.2;branch=z9hG4bK-00\r\n"
    b"Max-Forwards: 69\r\n"
    b'From: "Carrier" <sip:+15559870000@203.0.113.5>;tag=abc\r\n'
    b"To: <sip:+15551230000@198.51.100.10>\r\n"
    b"Call-ID: 1234@203.0.113.5\r\n"
    b"CSeq: 101 INVITE\r\n"
    b"Contact: <sip:gw@203.0.113.5:5060>\r\n"
    b"Record-Route: <sip:p1.example.com;lr>, <sip:p2.example.com;lr>\r\n"
    b"Allow: INVITE, ACK, BYE\r\n"
    b"Allow: CANCEL\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 4\r\n"
    b"\r\n"
    b"v=0\n"
)


def parse_req(data: bytes) -> Request:
    m = parse_message(data)
    assert isinstance(m, Request)
    return m


def status_of(data: bytes) -> int | None:
    with pytest.raises(SipError) as info:
        parse_message(data)
    return info.value.status


def test_invite_fields_and_exact_round_trip() -> None:
    m = parse_req(INVITE)
    assert m.method == "INVITE" and isinstance(m.uri, SipUri) and m.uri.transport == "udp"
    assert [v.branch for v in m.vias] == ["z9hG4bK-1", "z9hG4bK-0", "z9hG4bK-00"]
    assert m.top_via.has_rport
    assert m.from_.display_name == "Carrier" and m.from_.tag == "abc"
    assert m.to.tag is None and m.max_forwards == 69
    assert [str(r.uri) for r in m.record_route] == [
        "sip:p1.example.com;lr",
        "sip:p2.example.com;lr",
    ]
    assert m.headers.get_all("Allow") == ["INVITE", "ACK", "BYE", "CANCEL"]
    assert m.body == b"v=0\n"
    assert bytes(m) == INVITE


def test_compact_forms_expand() -> None:
    data = (
        b"OPTIONS sip:a@b SIP/2.0\r\nv: SIP/2.0/UDP h;branch=z9hG4bK1\r\nf: <sip:c@d>;tag=1\r\n"
        b"t: <sip:a@b>\r\ni: cid\r\nCSeq: 1 OPTIONS\r\nm: <sip:c@h>\r\nk: timer\r\n"
        b"s: hi\r\ne: gzip\r\no: dialog\r\nu: refer\r\nc: text/plain\r\nl: 2\r\n\r\nok"
    )
    m = parse_req(data)
    h = m.headers
    assert m.call_id == "cid" and m.from_.tag == "1" and len(m.contact) == 1
    assert h.get("Supported") == "timer" and h.get("SUBJECT") == "hi"
    assert h.get("Content-Encoding") == "gzip" and h.get("Event") == "dialog"
    assert h.get("Allow-Events") == "refer" and h.get("content-type") == "text/plain"
    assert ("Call-ID", "cid") in list(h)  # iteration gives canonical names
    assert bytes(m).startswith(b"OPTIONS sip:a@b SIP/2.0\r\nv: SIP/2.0/UDP")  # wire names kept


def test_folded_lines_unfold() -> None:
    data = INVITE.replace(b"Subject", b"X").replace(
        b"CSeq: 101 INVITE\r\n", b"CSeq: 101\r\n\t INVITE\r\nSubject: a\r\n  b\r\n"
    )
    m = parse_req(data)
    assert m.cseq.method == "INVITE" and m.headers.get("subject") == "a b"


def test_bare_lf_is_tolerated() -> None:
    m = parse_req(INVITE.replace(b"\r\n", b"\n"))
    assert m.call_id == "1234@203.0.113.5" and m.body == b"v=0\n"


def test_leading_crlf_ignored() -> None:
    assert parse_req(b"\r\n\r\n" + INVITE).call_id == "1234@203.0.113.5"


def test_datagram_longer_than_content_length_is_truncated() -> None:
    m = parse_req(INVITE + b"GARBAGE")
    assert m.body == b"v=0\n"


def test_datagram_shorter_than_content_length_is_400() -> None:
    assert status_of(INVITE[:-2]) == 400


def test_missing_content_length_on_udp_takes_the_rest() -> None:
    m = parse_req(INVITE.replace(b"Content-Length: 4\r\n", b""))
    assert m.body == b"v=0\n"


def test_binary_body_round_trips() -> None:
    body = bytes(range(256))
    data = INVITE.replace(b"Content-Length: 4", b"Content-Length: 256")[:-4] + body
    m = parse_req(data)
    assert m.body == body and bytes(m) == data


def test_missing_max_forwards_defaults_to_70() -> None:
    assert parse_req(INVITE.replace(b"Max-Forwards: 69\r\n", b"")).max_forwards == 70


@pytest.mark.parametrize("header", [b"Via", b"From", b"To", b"Call-ID", b"CSeq"])
def test_missing_mandatory_header_is_400(header: bytes) -> None:
    lines = [ln for ln in INVITE.split(b"\r\n") if not ln.startswith(header + b":")]
    assert status_of(b"\r\n".join(lines)) == 400


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"", None),
        (b"\r\n\r\n", None),
        (b"hello world", None),
        (b"\x00\x01\x02", None),
        (INVITE.replace(b"SIP/2.0\r\n", b"SIP/3.0\r\n", 1), 505),
        (INVITE.replace(b"Max-Forwards: 69", b"Max-Forwards: x"), 400),
        (INVITE.replace(b"CSeq: 101 INVITE", b"CSeq: 101 BYE"), 400),
        (INVITE.replace(b"Call-ID: 1234@203.0.113.5", b"Call-ID: "), 400),
        (INVITE.replace(b"Content-Length: 4", b"Content-Length: 4x"), 400),
        (INVITE.replace(b"Allow: CANCEL", b"Bad Header: x"), 400),
        (INVITE.replace(b"Allow: CANCEL", b"NoColonHere"), 400),
        (INVITE.replace(b"Via: SIP/2.0/UDP 203.0.113.5:5060", b"Via: junk"), 400),
    ],
)
def test_error_statuses(data: bytes, status: int | None) -> None:
    assert status_of(data) == status


RESPONSE = (
    b"SIP/2.0 180 Ringing\r\nVia: SIP/2.0/UDP 198.51.100.10;branch=z9hG4bKr\r\n"
    b"From: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\nCall-ID: x\r\nCSeq: 1 INVITE\r\n"
    b"Content-Length: 0\r\n\r\n"
)


def test_response_parses_and_round_trips() -> None:
    m = parse_message(RESPONSE)
    assert isinstance(m, Response)
    assert (m.status, m.reason, m.to.tag, m.cseq.method) == (180, "Ringing", "2", "INVITE")
    assert bytes(m) == RESPONSE


@pytest.mark.parametrize(
    "bad",
    [
        RESPONSE.replace(b"180", b"18"),
        RESPONSE.replace(b"180", b"999"),
        RESPONSE.replace(b"SIP/2.0 180", b"SIP/3.0 180"),
        RESPONSE.replace(b"CSeq: 1 INVITE", b"CSeq: x"),
        RESPONSE.replace(b"Call-ID: x\r\n", b""),
        RESPONSE.replace(b"Content-Length: 0", b"Content-Length: 10"),
    ],
)
def test_malformed_responses_are_dropped(bad: bytes) -> None:
    assert status_of(bad) is None


def test_headers_api_and_cache_invalidation() -> None:
    m = parse_req(INVITE)
    assert m.to.tag is None
    m.headers.set("To", "<sip:+15551230000@198.51.100.10>;tag=xyz")
    assert m.to.tag == "xyz"  # the cached value follows the new raw text
    m.headers.prepend("Via", "SIP/2.0/UDP 192.0.2.99;branch=z9hG4bKnew")
    assert m.top_via.host == "192.0.2.99" and len(m.vias) == 4
    m.headers.remove("Allow")
    assert "allow" not in m.headers and m.headers.get_all("Allow") == []
    m.headers.add("X-Custom", "1")
    m.headers.add("x-custom", "2")
    assert m.headers.get_all("X-CUSTOM") == ["1", "2"] and m.headers.count("X-Custom") == 2
    m.body = b"longer body"
    again = parse_req(bytes(m))
    assert again.body == b"longer body" and again.headers.get("Content-Length") == "11"
    assert again.to.tag == "xyz" and again.top_via.branch == "z9hG4bKnew"


def test_build_request_from_scratch() -> None:
    h = Headers(
        [
            ("Via", "SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKz"),
            ("From", "<sip:a@b>;tag=1"),
            ("To", "<sip:c@d>"),
            ("call-id", "abc"),
            ("CSeq", "1 OPTIONS"),
        ]
    )
    r = Request("OPTIONS", SipUri(user="c", host="d"), h)
    wire = bytes(r)
    assert wire.endswith(b"Call-ID: abc\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n")
    assert parse_req(wire).call_id == "abc"
