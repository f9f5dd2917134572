"""Pure transport rules: Via stamping (RFC 3581), response routing (§18.2.2), stateless errors."""

from __future__ import annotations

from sipedge.sip.errors import SipParseError
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import error_response, parse_message
from sipedge.stack.routing import reply_destination, response_destination, stamp_received

REQ = (
    b"INVITE sip:a@198.51.100.1 SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP 10.0.0.5:5070;branch=z9hG4bKa;rport, SIP/2.0/UDP 10.0.0.9;branch=z9hG4bKb\r\n"
    b"Via: SIP/2.0/UDP 10.0.0.10;branch=z9hG4bKc\r\n"
    b"From: <sip:b@x>;tag=1\r\nTo: <sip:a@y>\r\nCall-ID: r1\r\nCSeq: 1 INVITE\r\n"
    b"Content-Length: 0\r\n\r\n"
)


def parse_req(data: bytes) -> Request:
    msg = parse_message(data)
    assert isinstance(msg, Request)
    return msg


def test_stamp_received_with_rport_keeps_other_vias() -> None:
    req = parse_req(REQ)
    via = stamp_received(req, ("203.0.113.9", 40001))
    assert via.received == "203.0.113.9" and via.rport == 40001
    assert [v.branch for v in req.vias] == ["z9hG4bKa", "z9hG4bKb", "z9hG4bKc"]
    assert req.top_via.received == "203.0.113.9"
    again = parse_req(bytes(req))
    assert again.top_via.rport == 40001 and len(again.vias) == 3
    assert req.top_via == again.top_via  # the stamped Via kept, not parsed back, is the same


def test_stamp_received_only_when_host_differs_without_rport() -> None:
    req = parse_req(REQ.replace(b";rport,", b","))
    assert stamp_received(req, ("10.0.0.5", 5070)).received is None
    assert stamp_received(req, ("10.0.0.6", 5070)).received == "10.0.0.6"


def test_response_destination_rules() -> None:
    def resp(via: str) -> Response:
        msg = parse_message(
            f"SIP/2.0 200 OK\r\nVia: {via}\r\nFrom: <sip:b@x>;tag=1\r\nTo: <sip:a@y>;tag=2\r\n"
            f"Call-ID: r\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n".encode()
        )
        assert isinstance(msg, Response)
        return msg

    assert response_destination(resp("SIP/2.0/UDP h.example;branch=z9hG4bK1")) == (
        "h.example",
        5060,
    )
    assert response_destination(resp("SIP/2.0/UDP h:5070;branch=z9hG4bK1;received=192.0.2.1")) == (
        "192.0.2.1",
        5070,
    )
    assert response_destination(
        resp("SIP/2.0/UDP h:5070;branch=z9hG4bK1;received=192.0.2.1;rport=4000")
    ) == ("192.0.2.1", 4000)
    assert response_destination(resp("SIP/2.0/UDP h;maddr=239.1.1.1;branch=z9hG4bK1")) == (
        "239.1.1.1",
        5060,
    )


def test_reply_destination_uses_source_port_only_with_rport() -> None:
    req = parse_req(REQ)
    assert reply_destination(req.top_via, ("203.0.113.9", 40001)) == ("203.0.113.9", 40001)
    plain = parse_req(REQ.replace(b";rport,", b","))
    assert reply_destination(plain.top_via, ("203.0.113.9", 40001)) == ("203.0.113.9", 5070)


def test_error_response_from_raw_request() -> None:
    bad = REQ.replace(b"CSeq: 1 INVITE", b"CSeq: 1 BYE")
    err = SipParseError("CSeq method mismatch", 400)
    resp = error_response(bad, err, to_tag="t1")
    assert resp is not None and (resp.status, resp.reason) == (400, "Bad Request")
    assert resp.to.tag == "t1" and resp.call_id == "r1" and len(resp.vias) == 3
    assert resp.headers.get("Warning") == '399 sipedge "CSeq method mismatch"'
    assert error_response(bad, SipParseError("x", None)) is None  # drop-errors are not answered
    ack = bad.replace(b"INVITE sip:", b"ACK sip:")
    assert error_response(ack, err) is None  # ACK is never answered
    assert error_response(b"SIP/2.0 200 OK\r\n\r\n", err) is None
    no_via = b"\r\n".join(ln for ln in bad.split(b"\r\n") if not ln.startswith(b"Via"))
    assert error_response(no_via, err) is None  # nowhere to send it
    v505 = error_response(REQ.replace(b"SIP/2.0\r\n", b"SIP/3.0\r\n", 1), SipParseError("v", 505))
    assert v505 is not None and v505.reason == "Version Not Supported"
