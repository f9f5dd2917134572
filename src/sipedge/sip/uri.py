"""SIP, SIPS and tel URIs (RFC 3261 §19.1 and §25.1, RFC 3966).

Components are kept exactly as they appear on the wire (still %-escaped, original case) so that
``str(parse_uri(s)) == s`` for every URI we accept; the ``unescaped_*`` helpers and ``param()``
give the comparison-ready values. Only the scheme is normalised to lower case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from sipedge.sip.errors import SipParseError
from sipedge.sip.memo import memoized

__all__ = [
    "AbsoluteUri",
    "SipUri",
    "TelUri",
    "Uri",
    "format_host",
    "parse_uri",
    "unescape",
]

Params = tuple[tuple[str, str | None], ...]

# Characters never allowed unescaped anywhere in a URI: controls, SP, DEL and the delimiters that
# frame a URI inside a header (RFC 3261 §25.1: only unreserved / reserved / escaped may appear).
_FORBIDDEN = re.compile(r'[\x00-\x20\x7f<>"\\^`{|}]')
# An escape is "%" HEXDIG HEXDIG; a lone "%" is malformed.
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*\Z")
# hostname / IPv4address: alphanum, "-", "." (we also accept "_", seen in the wild).
_HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-._]*\Z")
# IPv6reference = "[" IPv6address "]": hex digits, colons, optional dotted IPv4 tail.
_IPV6 = re.compile(r"[0-9A-Fa-f:.]+\Z")
# tel: global-number-digits / local-number-digits (RFC 3966 §3), visual separators allowed.
_TEL_NUMBER = re.compile(r"\+?[0-9A-Fa-f*#\-.()]+\Z")


def unescape(text: str) -> str:
    """Decode %-escapes (RFC 3261 §19.1.4 compares URIs unescaped)."""
    return unquote(text, errors="surrogateescape") if "%" in text else text


def format_host(host: str) -> str:
    """Bracket an IPv6 literal for output (hosts are stored without brackets)."""
    return f"[{host}]" if ":" in host else host


def _param_lookup(params: Params, name: str) -> str | None:
    lname = name.lower()
    for key, value in params:
        # Names compare unescaped and case-insensitively (RFC 3261 §19.1.4; RFC 4475 §3.1.1.3).
        if (unescape(key) if "%" in key else key).lower() == lname:
            return value if value is not None else ""
    return None


def _format_params(params: Params) -> str:
    return "".join(f";{k}" if v is None else f";{k}={v}" for k, v in params)


def _parse_params(text: str, *, what: str) -> Params:
    """``;name[=value]`` list as it appears after the host (text starts after the first ';')."""
    out: list[tuple[str, str | None]] = []
    for item in text.split(";"):
        name, eq, value = item.partition("=")
        if not name:
            raise SipParseError(f"empty {what} parameter", 400)
        out.append((name, value if eq else None))
    return tuple(out)


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class SipUri:
    """``sip:`` / ``sips:`` URI; ``user``/``password``/params hold the escaped wire text."""

    scheme: str = "sip"
    user: str | None = None
    password: str | None = None
    host: str = ""
    port: int | None = None
    params: Params = ()
    headers: tuple[tuple[str, str], ...] = ()

    def param(self, name: str) -> str | None:
        """Value of a URI parameter, case-insensitive name; ``""`` for a valueless one."""
        return _param_lookup(self.params, name)

    def has_param(self, name: str) -> bool:
        return _param_lookup(self.params, name) is not None

    @property
    def transport(self) -> str | None:
        value = _param_lookup(self.params, "transport")
        return value.lower() if value else None

    @property
    def unescaped_user(self) -> str | None:
        return None if self.user is None else unescape(self.user)

    @property
    def hostport(self) -> str:
        host = format_host(self.host)
        return host if self.port is None else f"{host}:{self.port}"

    def __str__(self) -> str:
        parts = [self.scheme, ":"]
        if self.user is not None:
            parts.append(self.user)
            if self.password is not None:
                parts.append(":" + self.password)
            parts.append("@")
        parts.append(self.hostport)
        if self.params:
            parts.append(_format_params(self.params))
        if self.headers:
            parts.append("?" + "&".join(f"{k}={v}" for k, v in self.headers))
        return "".join(parts)


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class TelUri:
    """``tel:`` URI (RFC 3966): ``number`` as written (visual separators kept) plus params."""

    number: str
    params: Params = ()

    @property
    def scheme(self) -> str:
        return "tel"

    def param(self, name: str) -> str | None:
        return _param_lookup(self.params, name)

    @property
    def digits(self) -> str:
        """The number without visual separators (RFC 3966 §5.1.1), for comparison/routing."""
        return "".join(c for c in self.number if c not in "-.()")

    def __str__(self) -> str:
        return f"tel:{self.number}{_format_params(self.params)}"


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class AbsoluteUri:
    """Any other scheme (RFC 3261 absoluteURI), kept verbatim; the core answers 416 for it."""

    scheme: str
    opaque: str

    def __str__(self) -> str:
        return f"{self.scheme}:{self.opaque}"


Uri = SipUri | TelUri | AbsoluteUri


# Fast path for the everyday SIP URI: user without ';?/' (RFC 3261 user-unreserved minus those),
# optional password, hostname / IPv4 / [IPv6], port, params, no headers. Every quantified class
# is followed by a delimiter the class excludes, so a failed match costs linear time; anything
# else (escaped '@' users, headers, odd characters) falls through to the general parser.
_UCHARS = r"A-Za-z0-9\-_.!~*'()&=+$,%"
_PCHARS = r"A-Za-z0-9\-_.!~*'()\[\]/:&+$%"
_FAST_SIP = re.compile(
    rf"(sips?):(?:([{_UCHARS}]+)(?::([{_UCHARS}]*))?@)?"
    r"([A-Za-z0-9][A-Za-z0-9\-._]*|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?"
    rf"((?:;[{_PCHARS}]+(?:=[{_PCHARS}]*)?)*)\Z"
)


def _parse_uri_uncached(text: str) -> Uri:
    """Parse a URI (no surrounding ``<>`` or whitespace). Raises ``SipParseError(400)``."""
    m = _FAST_SIP.match(text)
    if m is not None and ("%" not in text or not _BAD_ESCAPE.search(text)):
        scheme, user, password, host, port, ptext = m.groups()
        if host[0] == "[":
            host = host[1:-1]
            if ":" not in host:
                raise SipParseError("malformed IPv6 host", 400)
        number = None
        if port is not None:
            number = int(port)
            if number > 65535:
                raise SipParseError("port out of range", 400)
        params = _parse_params(ptext[1:], what="URI") if ptext else ()
        return SipUri(scheme, user, password, host, number, params)
    scheme, colon, rest = text.partition(":")
    if not colon or not _SCHEME.match(scheme):
        raise SipParseError("malformed URI", 400)
    if _FORBIDDEN.search(text) or _BAD_ESCAPE.search(text):
        raise SipParseError("malformed URI", 400)
    lscheme = scheme.lower()
    if lscheme in ("sip", "sips"):
        return _parse_sip(lscheme, rest)
    if lscheme == "tel":
        return _parse_tel(rest)
    if not rest:
        raise SipParseError("malformed URI", 400)
    return AbsoluteUri(scheme, rest)


parse_uri = memoized(_parse_uri_uncached)


def _parse_sip(scheme: str, rest: str) -> SipUri:
    # '@' may appear neither in host, params nor (unescaped) headers, so the first one ends the
    # userinfo; user itself may contain ';', '?', '/' (RFC 3261 §25.1 user-unreserved).
    user: str | None = None
    password: str | None = None
    at = rest.find("@")
    if at >= 0:
        userinfo, rest = rest[:at], rest[at + 1 :]
        user, colon, pw = userinfo.partition(":")
        if colon:
            password = pw
        if not user:
            raise SipParseError("malformed URI user", 400)
    rest, qmark, hdrs = rest.partition("?")
    headers: tuple[tuple[str, str], ...] = ()
    if qmark:
        pairs = []
        for item in hdrs.split("&"):
            name, eq, value = item.partition("=")
            if not name or not eq:
                raise SipParseError("malformed URI header", 400)
            pairs.append((name, value))
        headers = tuple(pairs)
    hostport, semi, ptext = rest.partition(";")
    params = _parse_params(ptext, what="URI") if semi else ()
    host, port = _parse_hostport(hostport)
    return SipUri(scheme, user, password, host, port, params, headers)


def _parse_hostport(text: str) -> tuple[str, int | None]:
    """``host [":" port]`` with IPv6 references in brackets; returns the host without brackets."""
    if text.startswith("["):
        end = text.find("]")
        host = text[1:end]
        if end < 0 or not _IPV6.match(host) or ":" not in host:
            raise SipParseError("malformed IPv6 host", 400)
        tail = text[end + 1 :]
        if not tail:
            return host, None
        if tail[0] != ":":
            raise SipParseError("malformed host", 400)
        return host, parse_port(tail[1:])
    host, colon, port = text.partition(":")
    if not _HOSTNAME.match(host):
        raise SipParseError("malformed host", 400)
    return host, parse_port(port) if colon else None


def parse_hostport(text: str) -> tuple[str, int | None]:
    """Public wrapper used by Via sent-by parsing."""
    return _parse_hostport(text)


def parse_port(text: str) -> int:
    if not text.isdigit() or not text.isascii() or len(text) > 5:
        raise SipParseError("malformed port", 400)
    port = int(text)
    if port > 65535:
        raise SipParseError("port out of range", 400)
    return port


def _parse_tel(rest: str) -> TelUri:
    number, semi, ptext = rest.partition(";")
    if not _TEL_NUMBER.match(number):
        raise SipParseError("malformed tel URI", 400)
    params = _parse_params(ptext, what="tel URI") if semi else ()
    return TelUri(number, params)
