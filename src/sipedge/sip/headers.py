"""Typed views of the structured SIP header values (RFC 3261 §20, §25.1): name-addr, Via, CSeq.

These are parsed on demand from the raw header text held by ``message.Headers``; each is a value
(never mutated, hashable) whose ``__str__`` renders a canonical form that parses back to an equal
value. The parsers are memoized (``sip.memo``): equal texts share one parsed value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sipedge.sip.errors import SipParseError
from sipedge.sip.memo import memoized
from sipedge.sip.uri import Params, Uri, format_host, parse_hostport, parse_uri

__all__ = [
    "CSeq",
    "NameAddr",
    "Via",
    "parse_cseq",
    "parse_header_params",
    "parse_name_addr",
    "parse_name_addr_list",
    "parse_via",
    "split_comma",
]

_WS = " \t"
# token = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~")
_TOKEN = re.compile(r"[A-Za-z0-9\-.!%*_+`'~]+\Z")
# display-name = *(token LWS) / quoted-string: unquoted names are tokens separated by LWS.
_TOKENS = re.compile(r"[A-Za-z0-9\-.!%*_+`'~]+(?:[ \t]+[A-Za-z0-9\-.!%*_+`'~]+)*\Z")
# via-parm head: sent-protocol LWS sent-by; "SIP / 2.0 / UDP" may carry LWS around each "/".
# The character classes on either side of every \s* are disjoint, so matching is linear.
_VIA_HEAD = re.compile(r"[ \t]*([^ \t/]+)[ \t]*/[ \t]*([^ \t/]+)[ \t]*/[ \t]*([^ \t/;]+)[ \t]+")
# Fast paths for the everyday shapes (one regex match instead of a scan): a name-addr with a
# quoted (no quoted-pairs) or token display name, a Via with a plain sent-by, both with plain
# ;name[=value] params. Anything else falls back to the general code below. Each quantified
# class is followed by a delimiter it excludes, so even a failed match is linear.
_TOK = r"[A-Za-z0-9\-.!%*_+`'~]"
_VAL = r"[A-Za-z0-9\-.!%*_+`'~:@\[\]]"  # token, plus ':' '@' '[]' for hosts and IPv6 received=
_PARAMS = rf"((?:;{_TOK}+(?:={_VAL}+)?)*)"
_NAME_ADDR_FAST = re.compile(
    rf'(?:"([^"\\\r\n]*)" ?|({_TOK}+(?: {_TOK}+)*) ?)?<([^<>"\s]+)>{_PARAMS}\Z'
)
_VIA_FAST = re.compile(
    r"SIP/2\.0/([A-Za-z]+) ([A-Za-z0-9][A-Za-z0-9\-._]*|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?"
    + _PARAMS
    + r"\Z"
)
_MAX_CSEQ = 2**31 - 1


def _fast_params(text: str) -> Params:
    """Params already validated by a fast-path regex: ``;a=1;b`` -> (("a", "1"), ("b", None))."""
    if not text:
        return ()
    out: list[tuple[str, str | None]] = []
    for item in text[1:].split(";"):
        name, eq, value = item.partition("=")
        out.append((name, value if eq else None))
    return tuple(out)  # RFC 3261 §8.1.1.5: CSeq "MUST be expressible as a 32-bit unsigned" < 2**31


def split_comma(value: str) -> list[str]:
    """Split a ``#element`` list on commas that are outside quoted strings and ``<...>``."""
    if "," not in value:
        return [value.strip(_WS)]
    if '"' not in value and "<" not in value:
        return [v.strip(_WS) for v in value.split(",") if v.strip(_WS)]
    out: list[str] = []
    start = 0
    in_quote = in_angle = False
    i, n = 0, len(value)
    while i < n:
        c = value[i]
        if in_quote:
            if c == "\\":
                i += 1  # skip the escaped character (quoted-pair)
            elif c == '"':
                in_quote = False
        elif c == '"':
            in_quote = True
        elif c == "<":
            in_angle = True
        elif c == ">":
            in_angle = False
        elif c == "," and not in_angle:
            out.append(value[start:i])
            start = i + 1
        i += 1
    out.append(value[start:])
    return [v.strip(_WS) for v in out if v.strip(_WS)]


def _read_quoted(text: str, start: int) -> tuple[str, int]:
    """Read a quoted-string starting at ``text[start] == '"'``; return (content, index after)."""
    end = text.find('"', start + 1)
    if end > 0 and "\\" not in text[start + 1 : end]:
        return text[start + 1 : end], end + 1  # common case: no quoted-pairs
    out: list[str] = []
    i, n = start + 1, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 >= n:
                break
            out.append(text[i + 1])
            i += 2
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise SipParseError("unterminated quoted string", 400)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_header_params(text: str) -> Params:
    """``*( SEMI generic-param )`` where ``text`` is everything from the first ``;`` on.

    LWS is allowed around ``;`` and ``=``; values may be quoted strings (kept with their quotes).
    """
    text = text.strip(_WS)
    if not text:
        return ()
    if text[0] != ";":
        raise SipParseError("malformed header parameters", 400)
    items = _split_semis_quoted(text[1:]) if '"' in text else text[1:].split(";")
    out: list[tuple[str, str | None]] = []
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip(_WS)
        if not _TOKEN.match(name):
            raise SipParseError("malformed header parameter", 400)
        if eq:
            value = value.strip(_WS)
            if not value or (value[0] == '"' and _read_quoted(value, 0)[1] != len(value)):
                raise SipParseError("malformed header parameter", 400)
            out.append((name, value))
        else:
            out.append((name, None))
    return tuple(out)


def _split_semis_quoted(text: str) -> list[str]:
    out: list[str] = []
    start, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = _read_quoted(text, i)[1]
            continue
        if c == ";":
            out.append(text[start:i])
            start = i + 1
        i += 1
    out.append(text[start:])
    return out


def _lookup(params: Params, name: str) -> str | None:
    for key, value in params:
        if key.lower() == name:
            return value if value is not None else ""
    return None


def _format_params(params: Params) -> str:
    return "".join(f";{k}" if v is None else f";{k}={v}" for k, v in params)


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class NameAddr:
    """``[display-name] <uri> *(;param)`` or ``addr-spec *(;param)`` (From, To, Contact, Route)."""

    display_name: str | None
    uri: Uri
    params: Params = ()

    def param(self, name: str) -> str | None:
        return _lookup(self.params, name.lower())

    @property
    def tag(self) -> str | None:
        return _lookup(self.params, "tag")

    def with_tag(self, tag: str) -> NameAddr:
        params = tuple(p for p in self.params if p[0].lower() != "tag")
        # The constructor, not dataclasses.replace (which re-inspects the fields on every call).
        return NameAddr(self.display_name, self.uri, (*params, ("tag", tag)))

    def __str__(self) -> str:
        # Always emit the name-addr form: it is unambiguous whatever the URI contains.
        if self.display_name is None:
            head = f"<{self.uri}>"
        elif _TOKENS.match(self.display_name):
            head = f"{self.display_name} <{self.uri}>"
        else:
            head = f"{_quote(self.display_name)} <{self.uri}>"
        return head + _format_params(self.params)


def _parse_name_addr_uncached(text: str) -> NameAddr:
    """Parse one name-addr / addr-spec with header params. Raises ``SipParseError(400)``."""
    m = _NAME_ADDR_FAST.match(text)
    if m is not None:
        quoted, tokens, uri_text, ptext = m.groups()
        return NameAddr(
            quoted if quoted is not None else tokens, parse_uri(uri_text), _fast_params(ptext)
        )
    text = text.strip(_WS)
    display: str | None = None
    i = 0
    if text.startswith('"'):
        display, i = _read_quoted(text, 0)
        while i < len(text) and text[i] in _WS:
            i += 1
        if i >= len(text) or text[i] != "<":
            raise SipParseError("malformed name-addr", 400)
    lt = text.find("<", i)
    if lt >= 0:
        if display is None:
            name = text[:lt].strip(_WS)
            if name:
                if not _TOKENS.match(name):
                    raise SipParseError("malformed display name", 400)
                display = name
        gt = text.find(">", lt)
        if gt < 0:
            raise SipParseError("malformed name-addr", 400)
        uri = parse_uri(text[lt + 1 : gt])
        return NameAddr(display, uri, parse_header_params(text[gt + 1 :]))
    # addr-spec form: the URI cannot carry params or headers, so the first ';' starts the
    # header params (RFC 3261 §20.10) and a '?' or ',' would be ambiguous.
    uri_text, semi, rest = text.partition(";")
    uri_text = uri_text.rstrip(_WS)
    if not uri_text or "?" in uri_text or "," in uri_text:
        raise SipParseError("malformed addr-spec", 400)
    return NameAddr(None, parse_uri(uri_text), parse_header_params(semi + rest))


parse_name_addr = memoized(_parse_name_addr_uncached)


def parse_name_addr_list(value: str) -> list[NameAddr]:
    return [parse_name_addr(v) for v in split_comma(value)]


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class Via:
    """One via-parm (RFC 3261 §20.42) with RFC 3581 rport."""

    transport: str
    host: str
    port: int | None = None
    params: Params = ()
    protocol: str = "SIP/2.0"

    def param(self, name: str) -> str | None:
        return _lookup(self.params, name.lower())

    @property
    def branch(self) -> str | None:
        return _lookup(self.params, "branch")

    @property
    def received(self) -> str | None:
        return _lookup(self.params, "received")

    @property
    def has_rport(self) -> bool:
        return _lookup(self.params, "rport") is not None

    @property
    def rport(self) -> int | None:
        """The rport value if it has one; ``None`` when absent or valueless (see ``has_rport``)."""
        value = _lookup(self.params, "rport")
        return int(value) if value and value.isdigit() and len(value) <= 5 else None

    @property
    def sent_by(self) -> tuple[str, int | None]:
        return self.host, self.port

    def with_received(self, received: str | None, rport: int | None = None) -> Via:
        """RFC 3581 §4 / RFC 3261 §18.2.1: set ``received`` and fill a requested ``rport``."""
        params: list[tuple[str, str | None]] = []
        for key, value in self.params:
            lkey = key.lower()
            if lkey == "received":
                continue
            if lkey == "rport" and rport is not None:
                value = str(rport)
            params.append((key, value))
        if received is not None:
            params.append(("received", received))
        return Via(self.transport, self.host, self.port, tuple(params), self.protocol)

    def __str__(self) -> str:
        host = format_host(self.host)
        if self.port is not None:
            host = f"{host}:{self.port}"
        return f"{self.protocol}/{self.transport} {host}{_format_params(self.params)}"


def parse_via(value: str) -> list[Via]:
    """Every via-parm of one Via header value (which may be a comma list)."""
    return [_parse_one_via(v) for v in split_comma(value)]


def _parse_one_via(text: str) -> Via:
    fast = _VIA_FAST.match(text)
    if fast is not None:
        transport, host, port, ptext = fast.groups()
        if host[0] == "[":
            host = host[1:-1]
            if ":" not in host:
                raise SipParseError("malformed IPv6 host", 400)
        number = None
        if port is not None:
            number = int(port)
            if number > 65535:
                raise SipParseError("port out of range", 400)
        return Via(transport.upper(), host, number, _fast_params(ptext))
    m = _VIA_HEAD.match(text)
    if m is None:
        raise SipParseError("malformed Via", 400)
    name, version, transport = m.groups()
    if not _TOKEN.match(name) or not _TOKEN.match(version) or not _TOKEN.match(transport):
        raise SipParseError("malformed Via", 400)
    rest = text[m.end() :]
    semi = rest.find(";")
    sent_by = (rest if semi < 0 else rest[:semi]).strip(_WS)
    params = parse_header_params(rest[semi:]) if semi >= 0 else ()
    # LWS is allowed around the ':' of sent-by (RFC 3261 §25.1 "sent-by = host [ COLON port ]").
    if " " in sent_by or "\t" in sent_by:
        sent_by = "".join(sent_by.split())
    host, port = parse_hostport(sent_by)
    return Via(transport.upper(), host, port, params, f"{name.upper()}/{version}")


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class CSeq:
    seq: int
    method: str

    def __str__(self) -> str:
        return f"{self.seq} {self.method}"


def _parse_cseq_uncached(value: str) -> CSeq:
    parts = value.split()
    if len(parts) != 2:
        raise SipParseError("malformed CSeq", 400)
    seq, method = parts
    if not seq.isdigit() or not seq.isascii() or len(seq) > 10 or not _TOKEN.match(method):
        raise SipParseError("malformed CSeq", 400)
    number = int(seq)
    if number > _MAX_CSEQ:
        raise SipParseError("CSeq out of range", 400)
    return CSeq(number, method)


parse_cseq = memoized(_parse_cseq_uncached)
