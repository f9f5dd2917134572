"""Structured header values: name-addr, Via (RFC 3581 rport), CSeq, comma splitting."""

from __future__ import annotations

import pytest

from sipedge.sip.errors import SipParseError
from sipedge.sip.headers import (
    parse_cseq,
    parse_header_params,
    parse_name_addr,
    parse_name_addr_list,
    parse_via,
    split_comma,
)
from sipedge.sip.uri import SipUri


def test_name_addr_forms() -> None:
    na = parse_name_addr('"Alice \\"A\\" Smith" <sip:alice@example.com;transport=tcp>;tag=abc;x')
    assert na.display_name == 'Alice "A" Smith'
    assert isinstance(na.uri, SipUri) and na.uri.transport == "tcp"
    assert na.tag == "abc" and na.param("X") == ""
    assert parse_name_addr(str(na)) == na

    tok = parse_name_addr("Bob  Jones <sip:bob@example.com>")
    assert tok.display_name == "Bob  Jones" and tok.tag is None
    assert str(tok) == "Bob  Jones <sip:bob@example.com>"

    spec = parse_name_addr("sip:carol@example.com;tag=9")
    assert spec.display_name is None and spec.tag == "9"
    assert isinstance(spec.uri, SipUri) and spec.uri.params == ()
    assert str(spec) == "<sip:carol@example.com>;tag=9"


def test_with_tag_replaces() -> None:
    na = parse_name_addr("<sip:a@b>;tag=1").with_tag("2")
    assert na.tag == "2" and str(na) == "<sip:a@b>;tag=2"


def test_quoted_param_value_may_hold_separators() -> None:
    params = parse_header_params(';a="x;y,z" ; b = 2')
    assert params == (("a", '"x;y,z"'), ("b", "2"))


def test_via_with_rport_and_received() -> None:
    (v,) = parse_via("SIP/2.0/udp 192.0.2.1:5062;branch=z9hG4bKabc;rport")
    assert (v.protocol, v.transport, v.host, v.port) == ("SIP/2.0", "UDP", "192.0.2.1", 5062)
    assert v.branch == "z9hG4bKabc" and v.has_rport and v.rport is None and v.received is None
    stamped = v.with_received("198.51.100.7", 40000)
    assert stamped.received == "198.51.100.7" and stamped.rport == 40000
    assert (
        str(stamped)
        == "SIP/2.0/UDP 192.0.2.1:5062;branch=z9hG4bKabc;rport=40000;received=198.51.100.7"
    )
    assert parse_via(str(stamped)) == [stamped]
    # rport is only filled in when the client asked for it (RFC 3581 §4)
    (plain,) = parse_via("SIP/2.0/UDP host.example.com;branch=z9hG4bKx")
    assert not plain.with_received("192.0.2.9", 5060).has_rport


def test_via_ipv6_and_lws() -> None:
    vias = parse_via("SIP / 2.0 / TCP [2001:db8::9]:5070 ; branch = z9hG4bK1, SIP/2.0/UDP h2")
    assert [(v.transport, v.host, v.port) for v in vias] == [
        ("TCP", "2001:db8::9", 5070),
        ("UDP", "h2", None),
    ]
    assert str(vias[0]) == "SIP/2.0/TCP [2001:db8::9]:5070;branch=z9hG4bK1"


@pytest.mark.parametrize(
    "bad", ["", "SIP/2.0", "SIP/2.0/UDP", "SIP/2.0/UDP host:abc", "SIP/2.0/UDP h;;", "garbage"]
)
def test_bad_via(bad: str) -> None:
    with pytest.raises(SipParseError):
        parse_via(bad)


def test_cseq() -> None:
    c = parse_cseq("  0042   INVITE ")
    assert (c.seq, c.method, str(c)) == (42, "INVITE", "42 INVITE")
    for bad in ("INVITE", "1", "x INVITE", "1 INVITE extra", "2147483648 INVITE"):
        with pytest.raises(SipParseError):
            parse_cseq(bad)


def test_split_comma_respects_quotes_and_angles() -> None:
    value = '"Doe, John" <sip:j@x;a=1,2>, <sip:k@y>;q=0.5 , sip:l@z'
    assert split_comma(value) == ['"Doe, John" <sip:j@x;a=1,2>', "<sip:k@y>;q=0.5", "sip:l@z"]
    assert [str(n.uri) for n in parse_name_addr_list(value)] == [
        "sip:j@x;a=1,2",
        "sip:k@y",
        "sip:l@z",
    ]
    assert split_comma("INVITE, ACK ,BYE") == ["INVITE", "ACK", "BYE"]


def test_unterminated_quote_raises_400() -> None:
    with pytest.raises(SipParseError) as info:
        parse_name_addr('"open <sip:a@b>')
    assert info.value.status == 400
