"""Digest authentication against the published vectors (RFC 7616 §3.9.1, RFC 2617 §3.5)."""

from __future__ import annotations

import contextlib
import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sipedge.sip.digest import (
    Challenge,
    DigestError,
    build_authorization,
    choose_challenge,
    parse_challenge,
    parse_credentials,
    verify_authorization,
)
from sipedge.sip.errors import SipError

# RFC 7616 §3.9.1 inputs.
R7616_REALM = "http-auth@example.org"
R7616_NONCE = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"
R7616_OPAQUE = "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
R7616_CNONCE = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
R7616_CHALLENGE = (
    f'Digest realm="{R7616_REALM}", qop="auth, auth-int", algorithm={{alg}}, '
    f'nonce="{R7616_NONCE}", opaque="{R7616_OPAQUE}"'
)


def params(header: str) -> dict[str, str]:
    assert header.startswith("Digest ")
    return {
        m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
        for m in re.finditer(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))', header[7:])
    }


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("alg", "expected"),
    [
        # Published in RFC 7616 §3.9.1.
        ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
        ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        # Not published by the RFC: same inputs, -sess variants; agree with an unrelated
        # implementation's known-answer tests.
        ("MD5-sess", "e783283f46242139c486a698fec7211d"),
        ("SHA-256-sess", "2fd51b3a77ad75bad6afad6003e818d767133c46d9e2749e7f5232ae1ea3efd7"),
    ],
)
def test_rfc7616_example(alg: str, expected: str) -> None:
    challenge = parse_challenge(R7616_CHALLENGE.format(alg=alg))
    header = build_authorization(
        challenge,
        method="GET",
        uri="/dir/index.html",
        username="Mufasa",
        password="Circle of Life",
        cnonce=R7616_CNONCE,
        nc=1,
    )
    # The RFC's Authorization header, parameter by parameter.
    assert params(header) == {
        "username": "Mufasa",
        "realm": R7616_REALM,
        "uri": "/dir/index.html",
        "algorithm": alg,
        "nonce": R7616_NONCE,
        "nc": "00000001",
        "cnonce": R7616_CNONCE,
        "qop": "auth",
        "response": expected,
        "opaque": R7616_OPAQUE,
    }
    # qop and nc are tokens, never quoted (RFC 7616 §3.4).
    assert re.search(r"\bqop=auth(,|$)", header)
    assert "nc=00000001" in header and 'nc="' not in header
    # And a server holding the password accepts exactly this.
    creds = parse_credentials(header)
    assert verify_authorization(
        creds,
        method="GET",
        password="Circle of Life",
        realm=R7616_REALM,
        expected_nonce=R7616_NONCE,
    )
    assert not verify_authorization(
        creds, method="GET", password="Circle Of Life", realm=R7616_REALM
    )


RFC2617_CHALLENGE = (
    'Digest realm="testrealm@host.com", qop="auth,auth-int", '
    'nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"'
)
RFC2617_AUTHORIZATION = (
    'Digest username="Mufasa", realm="testrealm@host.com", '
    'nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", uri="/dir/index.html", qop=auth, '
    'nc=00000001, cnonce="0a4f113b", response="6629fae49393a05397450978507c4ef1", '
    'opaque="5ccc069c403ebaf9f0171e9517f40e41"'
)


def test_rfc2617_example_build() -> None:
    header = build_authorization(
        parse_challenge(RFC2617_CHALLENGE),
        method="GET",
        uri="/dir/index.html",
        username="Mufasa",
        password="Circle Of Life",
        cnonce="0a4f113b",
    )
    assert params(header) == params(RFC2617_AUTHORIZATION)
    assert "algorithm" not in header  # the challenge named none, so we echo none


def test_rfc2617_example_verify() -> None:
    creds = parse_credentials(RFC2617_AUTHORIZATION)
    assert (creds.username, creds.qop, creds.nc, creds.nonce_count) == (
        "Mufasa",
        "auth",
        "00000001",
        1,
    )

    def check(
        method: str = "GET",
        realm: str = "testrealm@host.com",
        expected_nonce: str | None = None,
        request_uri: str | None = None,
    ) -> bool:
        return verify_authorization(
            creds,
            method=method,
            password="Circle Of Life",
            realm=realm,
            expected_nonce=expected_nonce,
            request_uri=request_uri,
        )

    assert check()
    assert check(request_uri="/dir/index.html")
    assert check(expected_nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093")
    assert not check(expected_nonce="other")
    assert not check(request_uri="/elsewhere")
    assert not check(method="POST")
    assert not check(realm="other")


# ---------------------------------------------------------------------------------------------
# SIP-flavoured: the response is recomputed here from the RFC formulas, written out by hand.

SIP_URI = "sip:+15551234567@carrier.example.net;transport=udp"


def test_sip_invite_md5_qop_auth() -> None:
    challenge = parse_challenge(
        'Digest realm="carrier.example.net", nonce="abc123", algorithm=MD5, qop="auth"'
    )
    header = build_authorization(
        challenge,
        method="INVITE",
        uri=SIP_URI,
        username="trunk7",
        password="s3cret",
        cnonce="c1",
        nc=2,
    )
    ha1 = md5("trunk7:carrier.example.net:s3cret")
    ha2 = md5(f"INVITE:{SIP_URI}")
    p = params(header)
    assert p["response"] == md5(f"{ha1}:abc123:00000002:c1:auth:{ha2}")
    assert p["uri"] == SIP_URI and p["nc"] == "00000002" and "opaque" not in p


def test_sip_invite_md5_sess() -> None:
    challenge = parse_challenge(
        'Digest realm="r.example", nonce="n0nce", algorithm=md5-sess, qop="auth", opaque="op"'
    )
    assert challenge.algorithm == "MD5-sess"
    header = build_authorization(
        challenge,
        method="INVITE",
        uri="sip:bob@r.example",
        username="alice",
        password="pw",
        cnonce="cn",
    )
    ha1 = md5(f"{md5('alice:r.example:pw')}:n0nce:cn")
    ha2 = md5("INVITE:sip:bob@r.example")
    p = params(header)
    assert p["response"] == md5(f"{ha1}:n0nce:00000001:cn:auth:{ha2}")
    assert p["algorithm"] == "MD5-sess" and p["opaque"] == "op"
    creds = parse_credentials(header)
    assert verify_authorization(creds, method="INVITE", password="pw", realm="r.example")


def test_no_qop_uses_rfc2069_form_without_cnonce_or_nc() -> None:
    challenge = parse_challenge('Digest realm="biloxi.com", nonce="n"')
    header = build_authorization(
        challenge,
        method="REGISTER",
        uri="sip:biloxi.com",
        username="bob",
        password="zanzibar",
        cnonce="x",
    )
    ha1, ha2 = md5("bob:biloxi.com:zanzibar"), md5("REGISTER:sip:biloxi.com")
    p = params(header)
    assert p["response"] == md5(f"{ha1}:n:{ha2}")
    assert not {"cnonce", "nc", "qop", "algorithm"} & p.keys()
    assert verify_authorization(
        parse_credentials(header), method="REGISTER", password="zanzibar", realm="biloxi.com"
    )


def test_md5_sess_without_qop_still_sends_cnonce() -> None:
    challenge = parse_challenge('Digest realm="r", nonce="n", algorithm=MD5-sess')
    header = build_authorization(
        challenge, method="BYE", uri="sip:r", username="u", password="p", cnonce="cn"
    )
    p = params(header)
    assert p["cnonce"] == "cn" and "qop" not in p
    assert p["response"] == md5(f"{md5(md5('u:r:p') + ':n:cn')}:n:{md5('BYE:sip:r')}")


def test_auth_int_only_when_it_is_the_only_qop() -> None:
    body = b"v=0\r\n"
    only_int = parse_challenge('Digest realm="r", nonce="n", qop="auth-int"')
    header = build_authorization(
        only_int, method="INVITE", uri="sip:x@r", username="u", password="p", cnonce="c", body=body
    )
    ha2 = md5(f"INVITE:sip:x@r:{hashlib.md5(body).hexdigest()}")
    assert params(header)["qop"] == "auth-int"
    assert params(header)["response"] == md5(f"{md5('u:r:p')}:n:00000001:c:auth-int:{ha2}")
    creds = parse_credentials(header)
    assert verify_authorization(creds, method="INVITE", password="p", realm="r", body=body)
    assert not verify_authorization(creds, method="INVITE", password="p", realm="r", body=b"x")
    both = parse_challenge('Digest realm="r", nonce="n", qop="auth-int,auth"')
    assert (
        params(build_authorization(both, method="INVITE", uri="u", username="u", password="p"))[
            "qop"
        ]
        == "auth"
    )


def test_default_cnonce_is_random_and_quoting_escapes() -> None:
    challenge = parse_challenge(r'Digest realm="a \"quoted\" realm", nonce="n\\1", qop=auth')
    assert (challenge.realm, challenge.nonce) == ('a "quoted" realm', "n\\1")
    first = build_authorization(
        challenge, method="INVITE", uri="sip:a", username='x"y', password="p"
    )
    second = build_authorization(
        challenge, method="INVITE", uri="sip:a", username='x"y', password="p"
    )
    assert params(first)["cnonce"] != params(second)["cnonce"]
    assert len(params(first)["cnonce"]) == 32
    creds = parse_credentials(first)
    assert (creds.username, creds.realm, creds.nonce) == ('x"y', 'a "quoted" realm', "n\\1")
    assert verify_authorization(creds, method="INVITE", password="p", realm='a "quoted" realm')


# ---------------------------------------------------------------------------------------------
# Challenge parsing


def test_parse_challenge_fields() -> None:
    c = parse_challenge(
        'digest\t realm="sip.example" ,nonce = "N", opaque="O", algorithm=sha-256, '
        'qop="auth,auth-int", stale=TRUE, userhash=true, domain="sip:a sip:b", charset=UTF-8,,'
    )
    assert c == Challenge(
        realm="sip.example",
        nonce="N",
        algorithm="SHA-256",
        opaque="O",
        qop=("auth", "auth-int"),
        stale=True,
        algorithm_sent=True,
    )
    assert parse_challenge('Digest realm="r", nonce="n", stale=false').stale is False


@pytest.mark.parametrize(
    "value",
    [
        "",
        "Digest",
        'Basic realm="r"',
        'Digest realm="r"',  # no nonce
        'Digest nonce="n"',  # no realm
        'Digest realm="r", nonce="n", algorithm=SHA-512',
        'Digest realm="r, nonce="n"',  # unterminated quote
        'Digest realm="r" nonce="n"',  # missing comma
        'Digest realm="r", realm="s", nonce="n"',  # duplicate
        'Digest realm=, nonce="n"',
        'Digest ="r", nonce="n"',
        'Digest realm="r", nonce="n", @bad',
        'Digest realm="r", nonce="n", qop',
        "Digest " + "a=b, " * 5000,
    ],
)
def test_malformed_challenges_raise_typed_error(value: str) -> None:
    with pytest.raises(DigestError) as info:
        parse_challenge(value)
    assert isinstance(info.value, SipError) and info.value.status is None


def test_unknown_qop_only_cannot_be_answered() -> None:
    challenge = parse_challenge('Digest realm="r", nonce="n", qop="auth-conf"')
    with pytest.raises(DigestError):
        build_authorization(challenge, method="INVITE", uri="sip:a", username="u", password="p")


@pytest.mark.parametrize(
    "kwargs",
    [{"uri": "sip:a\r\nVia: x"}, {"username": "u\n"}, {"nc": 0}, {"nc": 2**32}],
)
def test_build_rejects_injection_and_bad_nc(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"method": "INVITE", "uri": "sip:a", "username": "u", "password": "p"}
    args.update(kwargs)
    with pytest.raises(DigestError):
        build_authorization(parse_challenge('Digest realm="r", nonce="n"'), **args)  # type: ignore[arg-type]


def test_choose_challenge_prefers_sha256_and_skips_unusable() -> None:
    values = [
        'Basic realm="x"',
        'Digest realm="r", nonce="1", algorithm=MD5, qop="auth"',
        'Digest realm="r", nonce="2", algorithm=SHA-512-256, qop="auth"',
        'Digest realm="r", nonce="3", algorithm=SHA-256, qop="auth-conf"',
        'Digest realm="r", nonce="4", algorithm=SHA-256, qop="auth"',
        "garbage",
    ]
    chosen = choose_challenge(values)
    assert chosen is not None and chosen.nonce == "4"
    assert choose_challenge(values[:2]) is not None and choose_challenge(values[:2]).nonce == "1"  # type: ignore[union-attr]
    assert choose_challenge(["garbage", 'Basic realm="x"']) is None


# ---------------------------------------------------------------------------------------------
# Credentials parsing


@pytest.mark.parametrize(
    "value",
    [
        'Digest realm="r", nonce="n", uri="u", response="x"',  # no username
        'Digest username="u", realm="r", nonce="n", uri="u"',  # no response
        'Digest username="u", realm="r", nonce="n", uri="u", response="x", qop=auth',  # no nc
        'Digest username="u", realm="r", nonce="n", uri="u", response="x", qop=auth, nc=1, cnonce="c"',
        'Digest username="u", realm="r", nonce="n", uri="u", response="x", qop=auth, nc=0000000g, cnonce="c"',
        'Digest username="u", realm="r", nonce="n", uri="u", response="x", qop=auth-conf, nc=00000001, cnonce="c"',
        'Digest username="u", realm="r", nonce="n", uri="u", response="x", algorithm=SHA-1',
        'Digest username="u", realm="r"  nonce="n"',
    ],
)
def test_malformed_credentials_answer_400(value: str) -> None:
    with pytest.raises(DigestError) as info:
        parse_credentials(value)
    assert info.value.status == 400


def test_sess_credentials_without_cnonce_never_verify() -> None:
    creds = parse_credentials(
        'Digest username="u", realm="r", nonce="n", uri="u", response="x", algorithm=MD5-sess'
    )
    assert not verify_authorization(creds, method="INVITE", password="p", realm="r")


def test_uppercase_response_hex_is_accepted() -> None:
    upper = RFC2617_AUTHORIZATION.replace(
        "6629fae49393a05397450978507c4ef1", "6629FAE49393A05397450978507C4EF1"
    )
    assert verify_authorization(
        parse_credentials(upper),
        method="GET",
        password="Circle Of Life",
        realm="testrealm@host.com",
    )


@given(st.text(max_size=300))
def test_challenge_parser_never_crashes(value: str) -> None:
    for candidate in (value, "Digest " + value):
        with contextlib.suppress(DigestError):
            parse_challenge(candidate)
        with contextlib.suppress(DigestError):
            parse_credentials(candidate)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["realm", "nonce", "qop", "algorithm", "opaque", "x"]),
            st.text(max_size=20),
        ),
        max_size=6,
    )
)
def test_structured_fuzz_never_crashes(pairs: list[tuple[str, str]]) -> None:
    def quote(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"')

    value = "Digest " + ", ".join(f'{k}="{quote(v)}"' for k, v in pairs)
    with contextlib.suppress(DigestError):
        challenge = parse_challenge(value)
        # Whatever parsed must be what was sent: quoted-pairs undone, nothing else altered.
        sent = dict(pairs)
        assert (challenge.realm, challenge.nonce) == (sent["realm"], sent["nonce"])
