"""URIs: sip/sips/tel/absolute, escapes, IPv6, parameter case, round trip."""

from __future__ import annotations

import pytest

from sipedge.sip.errors import SipParseError
from sipedge.sip.uri import AbsoluteUri, SipUri, TelUri, parse_uri


def test_full_sip_uri() -> None:
    u = parse_uri(
        "sips:alice:secret@Example.COM:5061;Transport=TLS;lr;maddr=10.0.0.1?Subject=x&P=1"
    )
    assert isinstance(u, SipUri)
    assert (u.scheme, u.user, u.password, u.host, u.port) == (
        "sips", "alice", "secret", "Example.COM", 5061,
    )  # fmt: skip
    assert u.transport == "tls"
    assert u.param("TRANSPORT") == "TLS" and u.param("lr") == "" and u.param("x") is None
    assert u.params[0] == ("Transport", "TLS")  # original spelling kept for output
    assert u.headers == (("Subject", "x"), ("P", "1"))
    assert (
        str(u) == "sips:alice:secret@Example.COM:5061;Transport=TLS;lr;maddr=10.0.0.1?Subject=x&P=1"
    )


def test_scheme_is_case_insensitive() -> None:
    u = parse_uri("SIP:bob@example.com;transport=UDP")
    assert isinstance(u, SipUri) and u.scheme == "sip" and u.transport == "udp"


def test_escapes_kept_raw_and_unescaped_on_request() -> None:
    u = parse_uri("sip:%61lice%20x@example.com;n%61me=v%41")
    assert isinstance(u, SipUri)
    assert u.user == "%61lice%20x" and u.unescaped_user == "alice x"
    assert u.param("name") == "v%41"
    assert str(u) == "sip:%61lice%20x@example.com;n%61me=v%41"


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("sip:[2001:db8::1]", "2001:db8::1", None),
        ("sip:user@[2001:db8::10]:5070;transport=tcp", "2001:db8::10", 5070),
        ("sip:[::ffff:192.0.2.1]:5060", "::ffff:192.0.2.1", 5060),
        ("sip:192.0.2.4:5060", "192.0.2.4", 5060),
    ],
)
def test_hosts(text: str, host: str, port: int | None) -> None:
    u = parse_uri(text)
    assert isinstance(u, SipUri) and (u.host, u.port) == (host, port)
    assert str(u) == text


def test_tel_uri() -> None:
    u = parse_uri("tel:+1-201-555-0123;phone-context=example.com")
    assert isinstance(u, TelUri)
    assert u.number == "+1-201-555-0123" and u.digits == "+12015550123"
    assert u.param("Phone-Context") == "example.com"
    assert str(u) == "tel:+1-201-555-0123;phone-context=example.com"


def test_absolute_uri_verbatim() -> None:
    u = parse_uri("urn:service:sos")
    assert isinstance(u, AbsoluteUri) and str(u) == "urn:service:sos"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "sip:",
        "sip:user@",
        "sip:host:99999",
        "sip:host:5x",
        "sip:[2001:db8::1",
        "sip:[zz]",
        "sip:us er@host",
        "sip:user@host;",
        "sip:user@host;;lr",
        "sip:%4@host",
        "sip:<host>",
        "1sip:host",
        "tel:xyz",
        "sip:host?novalue",
        "nocolon",
    ],
)
def test_malformed_uris_raise_400(bad: str) -> None:
    with pytest.raises(SipParseError) as info:
        parse_uri(bad)
    assert info.value.status == 400
