"""HTTP Digest authentication for SIP (RFC 7616, compatible with RFC 2617 and RFC 2069).

Pure functions: the password, the client nonce and the nonce count are arguments. The edge answers a
carrier's 401/407 once with ``build_authorization`` (SPEC §5: MD5 and SHA-256, qop=auth); a server
side can check an ``Authorization`` value with ``parse_credentials`` + ``verify_authorization``.

Header grammar (RFC 7235 §2.1, RFC 3261 §25.1)::

    challenge   = "Digest" LWS auth-param *( COMMA auth-param )
    auth-param  = token BWS "=" BWS ( token / quoted-string )
    quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sipedge.sip.errors import SipParseError

__all__ = [
    "Challenge",
    "Credentials",
    "DigestError",
    "build_authorization",
    "choose_challenge",
    "parse_challenge",
    "parse_credentials",
    "verify_authorization",
]

# Canonical algorithm name -> hash; "-sess" variants share the hash (RFC 7616 §3.4.2).
_HASHES: dict[str, Callable[[bytes], str]] = {
    "MD5": lambda data: hashlib.md5(data, usedforsecurity=False).hexdigest(),
    "SHA-256": lambda data: hashlib.sha256(data).hexdigest(),
}
ALGORITHMS = ("SHA-256", "SHA-256-sess", "MD5", "MD5-sess")  # our preference, strongest first
_TOKEN_CHARS = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
_MAX_HEADER = 8192  # a challenge is a few hundred bytes; refuse to scan megabytes of garbage


class DigestError(SipParseError, ValueError):
    """A Digest header is malformed or asks for something we cannot do.

    ``status`` is None by default: a bad challenge from a carrier is a carrier failure, not
    something to answer. A server parsing a bad ``Authorization`` answers 400 if it chooses.
    """

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason, status)


def _canonical_algorithm(value: str | None) -> str:
    if value is None:
        return "MD5"  # RFC 7616 §3.3: absent means MD5
    for name in ALGORITHMS:
        if value.lower() == name.lower():
            return name
    raise DigestError("unsupported digest algorithm")


def _parse_params(value: str) -> dict[str, str]:
    """``Digest k=v, k="v"`` -> {lower-case name: unquoted value}; DigestError on anything else."""
    if len(value) > _MAX_HEADER:
        raise DigestError("digest header too long")
    parts = value.strip().split(None, 1)  # the scheme ends at any LWS, not only a space
    scheme, rest = (parts[0], parts[1]) if len(parts) == 2 else ((parts or [""])[0], "")
    if scheme.lower() != "digest":
        raise DigestError("not a Digest header")
    params: dict[str, str] = {}
    i, n = 0, len(rest)
    while True:
        # Skip separators: empty list elements are allowed (RFC 7230 §7).
        while i < n and rest[i] in " \t\r\n,":
            i += 1
        if i >= n:
            break
        start = i
        while i < n and rest[i] in _TOKEN_CHARS:
            i += 1
        name = rest[start:i].lower()
        while i < n and rest[i] in " \t":
            i += 1
        if not name or i >= n or rest[i] != "=":
            raise DigestError("malformed digest parameter")
        i += 1
        while i < n and rest[i] in " \t":
            i += 1
        if i < n and rest[i] == '"':
            i += 1
            chars: list[str] = []
            while i < n and rest[i] != '"':
                if rest[i] == "\\" and i + 1 < n:
                    i += 1  # quoted-pair: the next character stands for itself
                chars.append(rest[i])
                i += 1
            if i >= n:
                raise DigestError("unterminated quoted string in digest header")
            i += 1
            param_value = "".join(chars)
        else:
            start = i
            while i < n and rest[i] in _TOKEN_CHARS:
                i += 1
            param_value = rest[start:i]
            if not param_value:
                raise DigestError("malformed digest parameter value")
        while i < n and rest[i] in " \t":
            i += 1
        if i < n and rest[i] != ",":
            raise DigestError("missing comma between digest parameters")
        if name in params:
            raise DigestError("duplicate digest parameter")  # RFC 7235 §2.1: each name once
        params[name] = param_value
    return params


@dataclass(frozen=True, slots=True)
class Challenge:
    """A ``WWW-Authenticate``/``Proxy-Authenticate`` Digest challenge."""

    realm: str
    nonce: str
    algorithm: str = "MD5"  # canonical spelling, one of ALGORITHMS
    opaque: str | None = None
    qop: tuple[str, ...] = ()  # lower-case tokens, in the server's order
    stale: bool = False
    algorithm_sent: bool = False  # echo algorithm= only when the server named one


def parse_challenge(value: str) -> Challenge:
    """Parse one challenge value; DigestError when malformed or unsupported (never anything else).

    ``userhash``, ``domain`` and ``charset`` are accepted and ignored: we always send the plain
    username, which RFC 7616 §3.4.4 allows.
    """
    params = _parse_params(value)
    realm, nonce = params.get("realm"), params.get("nonce")
    if realm is None or nonce is None:
        raise DigestError("digest challenge without realm or nonce")
    qop = tuple(tok.strip().lower() for tok in params.get("qop", "").split(",") if tok.strip())
    return Challenge(
        realm=realm,
        nonce=nonce,
        algorithm=_canonical_algorithm(params.get("algorithm")),
        opaque=params.get("opaque"),
        qop=qop,
        stale=params.get("stale", "").lower() == "true",
        algorithm_sent="algorithm" in params,
    )


def choose_challenge(values: Iterable[str]) -> Challenge | None:
    """The strongest usable challenge among several headers (RFC 7616 §3.7: the client picks the
    first it supports in its own preference); None when none can be used."""
    usable: list[Challenge] = []
    for value in values:
        try:
            challenge = parse_challenge(value)
            _pick_qop(challenge.qop)
        except DigestError:
            continue  # a server may offer schemes, algorithms or qops we do not speak
        usable.append(challenge)
    usable.sort(key=lambda c: ALGORITHMS.index(c.algorithm))
    return usable[0] if usable else None


def _pick_qop(offered: tuple[str, ...]) -> str | None:
    """ "auth" if offered; "auth-int" only if it is the only choice; None (RFC 2069 form) when no
    qop was offered. DigestError when only qop values we do not know are offered."""
    if not offered:
        return None
    if "auth" in offered:
        return "auth"
    if "auth-int" in offered:
        return "auth-int"
    raise DigestError("no supported qop offered")


def _response(
    algorithm: str,
    *,
    username: str,
    realm: str,
    password: str,
    nonce: str,
    method: str,
    uri: str,
    qop: str | None,
    nc: str,
    cnonce: str,
    body: bytes,
) -> str:
    """RFC 7616 §3.4.1-3.4.3 (RFC 2617 §3.2.2.1-3 for MD5; RFC 2069 when qop is None)."""
    sess = algorithm.endswith("-sess")
    h = _HASHES[algorithm.removesuffix("-sess")]

    def kd(*parts: str) -> str:
        return h(":".join(parts).encode("utf-8"))

    ha1 = kd(username, realm, password)
    if sess:
        ha1 = kd(ha1, nonce, cnonce)
    ha2 = kd(method, uri, h(body)) if qop == "auth-int" else kd(method, uri)
    if qop is None:
        return kd(ha1, nonce, ha2)
    return kd(ha1, nonce, nc, cnonce, qop, ha2)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_authorization(
    challenge: Challenge,
    *,
    method: str,
    uri: str,
    username: str,
    password: str,
    cnonce: str | None = None,
    nc: int = 1,
    body: bytes = b"",
) -> str:
    """The ``Authorization``/``Proxy-Authorization`` value answering ``challenge``.

    ``uri`` must be exactly the Request-URI sent (SPEC §5). ``cnonce`` defaults to 128 random bits.
    """
    for text in (method, uri, username, password, cnonce or ""):
        if any(ch in text for ch in "\r\n\x00"):
            raise DigestError("control character in digest input")  # header injection guard
    if not 1 <= nc <= 0xFFFFFFFF:
        raise DigestError("nonce count out of range")
    qop = _pick_qop(challenge.qop)
    if cnonce is None:
        cnonce = secrets.token_hex(16)
    nc_text = f"{nc:08x}"
    response = _response(
        challenge.algorithm,
        username=username,
        realm=challenge.realm,
        password=password,
        nonce=challenge.nonce,
        method=method,
        uri=uri,
        qop=qop,
        nc=nc_text,
        cnonce=cnonce,
        body=body,
    )
    parts = [
        f"username={_quote(username)}",
        f"realm={_quote(challenge.realm)}",
        f"nonce={_quote(challenge.nonce)}",
        f"uri={_quote(uri)}",
        f"response={_quote(response)}",
    ]
    if challenge.algorithm_sent:
        parts.append(f"algorithm={challenge.algorithm}")
    # -sess hashes the cnonce into HA1 even without qop (RFC 2617 §3.2.2.2), so send it then too.
    if qop is not None or challenge.algorithm.endswith("-sess"):
        parts.append(f"cnonce={_quote(cnonce)}")
    if challenge.opaque is not None:
        parts.append(f"opaque={_quote(challenge.opaque)}")
    if qop is not None:
        # qop and nc are never quoted (RFC 7616 §3.4, "for historical reasons").
        parts += [f"qop={qop}", f"nc={nc_text}"]
    return "Digest " + ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Credentials:
    """A parsed ``Authorization``/``Proxy-Authorization`` Digest value."""

    username: str
    realm: str
    nonce: str
    uri: str
    response: str
    algorithm: str = "MD5"  # canonical spelling
    cnonce: str | None = None
    nc: str | None = None  # the 8 hex digits as sent (they are hashed as text)
    qop: str | None = None
    opaque: str | None = None

    @property
    def nonce_count(self) -> int | None:
        return int(self.nc, 16) if self.nc is not None else None


def parse_credentials(value: str) -> Credentials:
    """Parse an Authorization value; DigestError (status 400) when malformed or unsupported."""
    try:
        params = _parse_params(value)
        algorithm = _canonical_algorithm(params.get("algorithm"))
    except DigestError as exc:
        raise DigestError(exc.reason, status=400) from exc
    required = ("username", "realm", "nonce", "uri", "response")
    if any(name not in params for name in required):
        raise DigestError("digest credentials incomplete", status=400)
    qop = params.get("qop")
    nc = params.get("nc")
    if qop is not None:
        if qop.lower() not in ("auth", "auth-int"):
            raise DigestError("unsupported qop in digest credentials", status=400)
        if "cnonce" not in params or nc is None:
            raise DigestError("digest credentials with qop lack cnonce or nc", status=400)
        if len(nc) != 8 or any(ch not in "0123456789abcdefABCDEF" for ch in nc):
            raise DigestError("malformed nonce count", status=400)
    return Credentials(
        username=params["username"],
        realm=params["realm"],
        nonce=params["nonce"],
        uri=params["uri"],
        response=params["response"],
        algorithm=algorithm,
        cnonce=params.get("cnonce"),
        nc=nc,
        qop=qop.lower() if qop is not None else None,
        opaque=params.get("opaque"),
    )


def verify_authorization(
    credentials: Credentials,
    *,
    method: str,
    password: str,
    realm: str,
    expected_nonce: str | None = None,
    request_uri: str | None = None,
    body: bytes = b"",
) -> bool:
    """True when ``credentials`` prove knowledge of ``password`` for this request.

    ``expected_nonce`` (the nonce we issued) and ``request_uri`` (RFC 7616 §3.4.6: the uri
    parameter must name the request's target) are checked when given. Nonce-count replay
    tracking is the caller's (it needs state). Comparisons are constant-time.
    """
    if credentials.realm != realm:
        return False
    if expected_nonce is not None and not hmac.compare_digest(
        credentials.nonce.encode("utf-8"), expected_nonce.encode("utf-8")
    ):
        return False
    if request_uri is not None and credentials.uri != request_uri:
        return False
    if credentials.algorithm.endswith("-sess") and credentials.cnonce is None:
        return False
    expected = _response(
        credentials.algorithm,
        username=credentials.username,
        realm=credentials.realm,
        password=password,
        nonce=credentials.nonce,
        method=method,
        uri=credentials.uri,
        qop=credentials.qop,
        nc=credentials.nc or "",
        cnonce=credentials.cnonce or "",
        body=body,
    )
    return hmac.compare_digest(
        expected.encode("ascii"), credentials.response.lower().encode("utf-8")
    )
