"""RFC 4475 torture messages, byte for byte (fixtures in ./torture, conventions in sip_wire.py).

Each test states the RFC's expectation. Where the RFC allows either rejecting or being liberal,
the docstring records which one sipedge chose. Not included: §3.1.1.11 (mpart01, a multipart body
whose bit-exact binary content only exists in the RFC's archive; binary bodies are covered in
test_parser.py) and §3.5 (IPv6 torture lives in RFC 5118; IPv6 URIs are in test_uri.py).
"""

from __future__ import annotations

import pytest
from sip_wire import torture

from sipedge.sip.errors import SipError, SipParseError
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import parse_message
from sipedge.sip.uri import AbsoluteUri, SipUri, unescape


def req(name: str) -> Request:
    msg = parse_message(torture(name))
    assert isinstance(msg, Request)
    return msg


def resp(name: str) -> Response:
    msg = parse_message(torture(name))
    assert isinstance(msg, Response)
    return msg


# ---------------------------------------------------------------- §3.1.1 valid messages


def test_wsinv_short_tortuous_invite() -> None:
    """§3.1.1.1: folding, LWS around separators, mixed compact/long names, leading zeros."""
    m = req("wsinv")
    assert m.method == "INVITE"
    assert isinstance(m.uri, SipUri)
    assert m.uri.user == "vivekg" and m.uri.host == "chair-dnrc.example.com"
    assert m.uri.params == (("unknownparam", None),)
    assert m.to.tag == "1918181833n"
    assert str(m.to.uri) == "sip:vivekg@chair-dnrc.example.com"
    assert m.from_.display_name == 'J Rosenberg \\"'
    assert m.from_.tag == "98asjd8"
    assert m.max_forwards == 68
    assert m.call_id == "wsinv.ndaksdj@192.0.2.1"
    assert (m.cseq.seq, m.cseq.method) == (9, "INVITE")
    vias = m.vias
    assert [(v.transport, v.host, v.branch) for v in vias] == [
        ("UDP", "192.0.2.2", "390skdjuw"),
        ("TCP", "spindle.example.com", "z9hG4bK9ikj8"),
        ("UDP", "192.168.255.111", "z9hG4bK30239"),
    ]
    assert m.headers.get("Subject") == ""
    assert m.headers.get("NewFangledHeader") == "newfangled value continued newfangled value"
    assert m.headers.get("unknownheaderwithunusualvalue") == ";;,,;;,;"
    assert m.headers.get("content-type") == "application/sdp"
    (route,) = m.route
    assert isinstance(route.uri, SipUri)
    assert route.uri.has_param("lr") and route.uri.param("unknownwith") == "value"
    (contact,) = m.contact
    assert contact.display_name == 'Quoted string ""'
    assert contact.param("newparam") == "newvalue"
    assert contact.param("secondparam") == ""
    assert contact.param("q") == "0.33"
    assert len(m.body) == 150 and m.body.startswith(b"v=0\r\n")


def test_intmeth_wide_range_of_characters() -> None:
    """§3.1.1.2: unusual but legal token characters everywhere; % is not an escape in a method."""
    m = req("intmeth")
    assert m.method == "!interesting-Method0123456789_*+`.%indeed'~"
    assert m.cseq.method == m.method and m.cseq.seq == 139122385
    assert isinstance(m.uri, SipUri)
    assert m.uri.user == "1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*"
    assert m.uri.password == "&it+has=1,weird!*pas$wo~d_too.(doesn't-it)"
    assert m.uri.host == "example.com"
    assert m.top_via.branch == "z9hG4bK-.!%66*_+`'~"
    assert m.to.display_name == "BEL:\x07 NUL:\x00 DEL:\x7f"
    assert m.from_.display_name == "token1~` token2'+_ token3*%!.-"
    assert m.from_.tag == "_token~1'+`*%!-."
    assert m.from_.param("fromParam''~+*_!.-%") == '"работающий"'
    assert m.call_id == "intmeth.word%ZK-!.*_+'@word`~)(><:\\/\"][?}{"
    assert m.max_forwards == 255
    assert m.headers.get("extensionHeader-!.%*+_`'~") == "\ufeff大停電"


def test_esc01_escaped_uris() -> None:
    """§3.1.1.3: escapes in URIs must be kept and compare unescaped."""
    m = req("esc01")
    assert isinstance(m.uri, SipUri)
    assert m.uri.user == "sips%3Auser%40example.com"
    assert m.uri.unescaped_user == "sips:user@example.com"
    assert m.uri.host == "example.net"
    to_uri = m.to.uri
    assert isinstance(to_uri, SipUri) and to_uri.unescaped_user == "user"
    from_uri = m.from_.uri
    assert isinstance(from_uri, SipUri) and from_uri.unescaped_user == "I have spaces"
    assert m.call_id == "esc01.239409asdfakjkn23onasd0-3234"  # compact "i"
    assert m.headers.get("Content-Type") == "application/sdp"  # compact "C", upper case
    (contact,) = m.contact
    assert isinstance(contact.uri, SipUri)
    assert contact.uri.unescaped_user == "caller"
    assert contact.uri.has_param("lr")  # ;%6C%72
    assert contact.uri.param("name") == "v%61lue%25%34%31"
    assert unescape(contact.uri.param("name") or "") == "value%41"


def test_escnull_escaped_nulls() -> None:
    """§3.1.1.4: %00 in a URI user part is legal."""
    m = req("escnull")
    assert isinstance(m.to.uri, SipUri) and m.to.uri.unescaped_user == "null-\x00-null"
    users = [c.uri.unescaped_user for c in m.contact if isinstance(c.uri, SipUri)]
    assert users == ["\x00", "\x00\x00"]
    assert m.body == b""


def test_esc02_percent_is_not_an_escape_in_method_or_header_names() -> None:
    """§3.1.1.5: RE%47IST%45R is an unknown method; C%6Fntact is an unknown header."""
    m = req("esc02")
    assert m.method == "RE%47IST%45R" and m.cseq.method == "RE%47IST%45R"
    assert m.to.display_name == "%Z%45"
    assert [str(c.uri) for c in m.contact] == [
        "sip:alias1@host1.example.com",
        "sip:alias3@host3.example.com",
    ]
    assert m.headers.get("C%6Fntact") == "<sip:alias2@host2.example.com>"
    assert m.top_via.branch == "z9hG4bK209%fzsnel234"


def test_lwsdisp_no_lws_between_display_name_and_laquot() -> None:
    """§3.1.1.6."""
    m = req("lwsdisp")
    assert m.from_.display_name == "caller"
    assert m.from_.tag == "323"


def test_longreq_long_values() -> None:
    """§3.1.1.7: very long values; Via spelled in every case, compact and with LWS before ':'."""
    m = req("longreq")
    assert m.to.display_name is not None and "extreme" * 10 in m.to.display_name
    assert isinstance(m.to.uri, SipUri) and m.to.uri.port == 6000
    assert m.from_.tag == "12" + "982" * 50 + "424"
    assert len(m.vias) == 34
    assert m.vias[0].host == "sip33.example.com"
    assert m.vias[-1].branch == "very" + "long" * 50 + "branchvalue"
    assert m.vias[-1].received == "192.0.2.5"
    assert len(m.body) == 150


def test_dblreq_only_the_first_message_of_a_datagram() -> None:
    """§3.1.1.8: Content-Length 0 frames the REGISTER; the INVITE behind it is not part of it."""
    m = req("dblreq")
    assert m.method == "REGISTER"
    assert m.call_id == "dblreq.0ha0isndaksdj99sdfafnl3lk233412"  # compact "I", upper case
    assert m.body == b""


def test_semiuri_semicolon_in_user_part() -> None:
    """§3.1.1.9: the user part may contain ';' - it is not a URI parameter."""
    m = req("semiuri")
    assert isinstance(m.uri, SipUri)
    assert m.uri.user == "user;par=u%40example.net"
    assert m.uri.host == "example.com" and m.uri.params == ()
    assert m.headers.get_all("Accept") == [
        "application/sdp",
        "application/pkcs7-mime",
        "multipart/mixed",
        "multipart/signed",
        "message/sip",
        "message/sipfrag",
    ]


def test_transports_varied_and_unknown() -> None:
    """§3.1.1.10."""
    m = req("transports")
    assert [v.transport for v in m.vias] == ["UDP", "SCTP", "TLS", "UNKNOWN", "TCP"]
    assert m.call_id == "transports.kijh4akdnaqjkwendsasfdj"


def test_unreason_utf8_reason_phrase() -> None:
    """§3.1.1.12."""
    m = resp("unreason")
    assert m.status == 200
    assert m.reason == "= 2**3 * 5**2 но сто девяносто девять - простое"
    assert len(m.body) == 154
    assert bytes(m) == torture("unreason")


def test_noreason_empty_reason_phrase() -> None:
    """§3.1.1.13."""
    m = resp("noreason")
    assert (m.status, m.reason) == (100, "")
    assert bytes(m) == torture("noreason")


# ---------------------------------------------------------------- §3.1.2 invalid messages

INVALID = [
    # (fixture, status, RFC section) ; status None = drop silently
    ("badinv01", 400, "3.1.2.1 extraneous header field separators"),
    ("clerr", 400, "3.1.2.2 Content-Length larger than message"),
    ("ncl", 400, "3.1.2.3 negative Content-Length"),
    ("scalar02", 400, "3.1.2.4 overlarge request scalars (CSeq, Max-Forwards)"),
    ("scalarlg", None, "3.1.2.5 overlarge response scalars: responses are dropped"),
    ("quotbal", 400, "3.1.2.6 unterminated quoted string"),
    ("ltgtruri", 400, "3.1.2.7 <> around the Request-URI"),
    ("lwsruri", 400, "3.1.2.8 LWS inside the Request-URI"),
    ("lwsstart", 400, "3.1.2.9 multiple SP in the Request-Line"),
    ("escruri", 400, "3.1.2.11 escaped headers in the Request-URI"),
    ("badaspec", 400, "3.1.2.14 spaces inside <addr-spec>: we take the strict reading"),
    ("baddn", 400, "3.1.2.15 non-token characters in an unquoted display name"),
    ("badvers", 505, "3.1.2.16 unknown SIP version"),
    ("mismatch01", 400, "3.1.2.17 CSeq method differs from the Request-Line"),
    ("mismatch02", 400, "3.1.2.18 unknown method with CSeq mismatch"),
    ("bigcode", None, "3.1.2.19 overlarge status code: responses are dropped"),
    ("insuf", 400, "3.3.1 missing Call-ID, From, To"),
    ("multi01", 400, "3.3.8 multiple values in single-value headers"),
    ("mcl01", 400, "3.3.9 multiple conflicting Content-Length"),
]


@pytest.mark.parametrize(("name", "status", "section"), INVALID, ids=[i[0] for i in INVALID])
def test_invalid_messages(name: str, status: int | None, section: str) -> None:
    with pytest.raises(SipError) as info:
        parse_message(torture(name))
    assert isinstance(info.value, SipParseError)
    assert info.value.status == status, section


def test_trws_trailing_space_on_request_line_is_tolerated() -> None:
    """§3.1.2.10: the RFC lets an element be liberal here; sipedge strips the trailing SP."""
    m = req("trws")
    assert m.method == "OPTIONS" and m.version == "SIP/2.0"


def test_baddate_is_accepted() -> None:
    """§3.1.2.12: a non-GMT Date is not our concern (we never interpret Date): accepted."""
    m = req("baddate")
    assert m.headers.get("Date") == "Fri, 01 Jan 2010 16:00:00 EST"


def test_regbadct_contact_with_headers_outside_angle_brackets() -> None:
    """§3.1.2.13: parse_message accepts it (Contact is parsed lazily); reading .contact gives 400."""
    m = req("regbadct")
    with pytest.raises(SipParseError) as info:
        _ = m.contact
    assert info.value.status == 400


# ---------------------------------------------------------------- §3.2 - §3.4


def test_badbranch_magic_cookie_only() -> None:
    """§3.2.1: branch "z9hG4bK" alone is syntactically fine; the transaction layer copes."""
    assert req("badbranch").top_via.branch == "z9hG4bK"


@pytest.mark.parametrize(
    ("name", "scheme"), [("unkscm", "nobodyKnowsThisScheme"), ("novelsc", "soap.beep")]
)
def test_unknown_request_uri_scheme_parses_for_a_416(name: str, scheme: str) -> None:
    """§3.3.2/§3.3.3: the core answers 416; the parser keeps the URI as an AbsoluteUri."""
    m = req(name)
    assert isinstance(m.uri, AbsoluteUri) and m.uri.scheme == scheme


def test_unksm2_unknown_schemes_in_header_fields() -> None:
    """§3.3.4."""
    m = req("unksm2")
    assert isinstance(m.to.uri, AbsoluteUri) and str(m.to.uri) == "isbn:2983792873"
    assert str(m.from_.uri) == "http://www.example.com" and m.from_.tag == "3234233"
    assert str(m.contact[0].uri) == "name:John_Smith"


def test_bext01_require_lists_split() -> None:
    """§3.3.5: the core answers 420 listing these."""
    m = req("bext01")
    assert m.headers.get_all("Require") == ["nothingSupportsThis", "nothingSupportsThisEither"]
    assert m.top_via.transport == "TLS"


def test_invut_unknown_body_type() -> None:
    """§3.3.6: the core answers 415; the body is framed by Content-Length."""
    m = req("invut")
    assert m.content_type == "application/unknownformat"
    assert m.body == b'<audio>\r\n <pcmu port="443"/>\r\n</audio>\r\n'


def test_regaut01_unknown_auth_scheme_not_split() -> None:
    """§3.3.7: Authorization is never comma-split."""
    m = req("regaut01")
    assert m.headers.get_all("Authorization") == ["NoOneKnowsThisScheme opaque-data=here"]


def test_bcast_response_parses() -> None:
    """§3.3.10: dropping a 200 with a broadcast Via is the transaction layer's decision."""
    m = resp("bcast")
    assert [v.host for v in m.vias] == ["192.0.2.198", "255.255.255.255"]


def test_zeromf_max_forwards_zero() -> None:
    """§3.3.11: the core answers 483 (OPTIONS may be answered by the UAS instead)."""
    assert req("zeromf").max_forwards == 0


def test_cparam01_addr_spec_params_belong_to_the_header() -> None:
    """§3.3.12: without <>, ';unknownparam' is a Contact parameter, not a URI parameter."""
    (c,) = req("cparam01").contact
    assert isinstance(c.uri, SipUri) and c.uri.params == ()
    assert c.param("unknownparam") == ""


def test_cparam02_name_addr_params_belong_to_the_uri() -> None:
    """§3.3.13."""
    (c,) = req("cparam02").contact
    assert isinstance(c.uri, SipUri) and c.uri.has_param("unknownparam")
    assert c.params == ()


def test_regescrt_escaped_route_in_contact_uri() -> None:
    """§3.3.14."""
    (c,) = req("regescrt").contact
    assert isinstance(c.uri, SipUri)
    assert c.uri.headers == (("Route", "%3Csip:sip.example.com%3E"),)
    assert unescape(c.uri.headers[0][1]) == "<sip:sip.example.com>"


def test_sdp01_accept_is_kept() -> None:
    """§3.3.15: the core answers 406/415."""
    assert req("sdp01").headers.get("Accept") == "text/nobodyKnowsThis"


def test_inv2543_rfc2543_style_request() -> None:
    """§3.4.1: no branch, no From tag, no Max-Forwards (taken as 70), no Content-Length (UDP)."""
    m = req("inv2543")
    assert m.top_via.branch is None
    assert m.from_.tag is None
    assert m.max_forwards == 70
    assert m.body.endswith(b"m=audio 49217 RTP/AVP 0\r\n")
    assert m.record_route[0].uri.param("maddr") == "ss1.example.com"  # type: ignore[union-attr]


# ---------------------------------------------------------------- round trip


VALID = [
    "wsinv", "intmeth", "esc01", "escnull", "esc02", "lwsdisp", "longreq", "dblreq", "semiuri",
    "transports", "unreason", "noreason", "trws", "baddate", "badbranch", "unkscm", "novelsc",
    "unksm2", "bext01", "invut", "regaut01", "bcast", "zeromf", "cparam01", "cparam02",
    "regescrt", "sdp01", "inv2543",
]  # fmt: skip


@pytest.mark.parametrize("name", VALID)
def test_round_trip_is_stable(name: str) -> None:
    """bytes(parse(x)) parses back to the same start line, headers and body, and is a fixpoint."""
    first = parse_message(torture(name))
    wire = bytes(first)
    second = parse_message(wire)
    expected = [(n, str(len(first.body)) if n == "Content-Length" else v) for n, v in first.headers]
    if "Content-Length" not in first.headers:
        expected.append(("Content-Length", str(len(first.body))))
    assert list(second.headers) == expected
    assert second.body == first.body
    assert bytes(second) == wire
