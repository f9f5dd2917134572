"""Datagram / framed-message parser (RFC 3261 §7, §18.3).

The hot path is deliberately flat: find the end of the header block once, decode it once, unfold
continuation lines only when the block contains any, split it into lines once and each line with
``str.split(": ", 1)`` in one comprehension (odd spacing takes a slower path). Header names map
to canonical keys through a memo table (no per-line ``lower()``), and values stay raw text until
someone reads them. Only what every request needs anyway is checked eagerly: the start line, the
mandatory headers, CSeq, the top Via, From/To, Max-Forwards and Content-Length.

Hard limits (``sip.limits.Limits``, ``parse_message(data, limits)``) ride on values the hot path
has anyway: the datagram length, the line count, the header block's length (the per-line length
scan runs only when the whole block is longer than one line may be) and the Via key count (plus
one C-level comma count for lists). A breach raises ``SipLimitError``: 513 for an oversize
request, 413 for its body, 400 for the header block's shape; responses are dropped.

Error policy (``SipParseError.status``): a recognised request that is invalid -> 400 (505 for
another SIP version); anything that is not recognisably a request, and every bad response -> None
(drop: RFC 3261 §16.3/§18.1.2 never answer a response).
"""

from __future__ import annotations

import re

from sipedge.sip.errors import SipError, SipLimitError, SipParseError
from sipedge.sip.headers import parse_cseq, parse_name_addr, parse_via, split_comma
from sipedge.sip.limits import DEFAULT_LIMITS, LimitKind, Limits
from sipedge.sip.message import _CANON, Headers, Message, Request, Response, canonical_name
from sipedge.sip.uri import SipUri, parse_uri

__all__ = [
    "MANDATORY_REQUEST_HEADERS",
    "error_response",
    "parse_message",
    "parse_request_line",
]

# token = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~") (RFC 3261 §25.1)
_TOKEN = re.compile(r"[A-Za-z0-9\-.!%*_+`'~]+\Z")
# header field name is a token too; checked only for spellings not already in the memo table.
_VERSION = re.compile(r"SIP/(\d{1,3})\.(\d{1,3})\Z", re.IGNORECASE)
# A continuation line: CRLF followed by SP/HTAB (RFC 3261 §7.3.1 LWS). Linear: one class, no nesting.
_FOLD = re.compile(r"\r?\n[ \t]+")

MANDATORY_REQUEST_HEADERS = ("to", "from", "call-id", "cseq", "via")
_METHODS = frozenset(
    ("INVITE", "ACK", "BYE", "CANCEL", "OPTIONS", "REGISTER", "PRACK", "UPDATE", "INFO", "REFER",
     "NOTIFY", "SUBSCRIBE", "MESSAGE"),
)  # fmt: skip
# Headers that may appear at most once (RFC 3261 §7.3.1: not comma-list headers). RFC 4475
# §3.3.8 (multi01) expects a 400 for duplicates of these.
_SINGLE = ("to", "from", "call-id", "cseq", "max-forwards", "content-length")


def _drop(reason: str) -> SipParseError:
    return SipParseError(reason, None)


def parse_message(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Message:
    """Parse one datagram or one framed stream message. Raises only ``SipError``.

    A message over one of ``limits`` raises ``SipLimitError`` (see ``sip.limits``); the checks
    cost O(1) per message on the common path (a length compare or a count already at hand).
    """
    try:
        return _parse(data, limits)
    except SipError:
        raise
    except (ValueError, IndexError, UnicodeError, OverflowError) as exc:
        # Defensive: any oversight in the grammar code surfaces as "drop", never as a crash.
        raise _drop("unparseable message") from exc


def _parse(data: bytes, limits: Limits) -> Message:
    # RFC 3261 §7.5: ignore CRLFs before the start line (keep-alives, sloppy senders).
    if data[:1] in (b"\r", b"\n"):
        data = data.lstrip(b"\r\n")
    if len(data) > limits.max_message_bytes:
        # RFC 3261 §21.5.11: 513 Message Too Large for a request; a response is dropped.
        status = None if data[:4] == b"SIP/" else 513
        raise SipLimitError("message too large", status, LimitKind.MESSAGE_SIZE)
    end = data.find(b"\r\n\r\n")
    if end >= 0:
        body_start = end + 4
    else:
        # Be liberal: bare-LF senders, or a datagram whose header block runs to the end.
        end = data.find(b"\n\n")
        if end >= 0:
            body_start = end + 2
        else:
            end = body_start = len(data)
    head = data[:end].decode("utf-8", "surrogateescape")
    if head.count("\n") != head.count("\r\n"):
        head = head.replace("\r\n", "\n").replace("\n", "\r\n")  # bare-LF sender (liberal)
    if "\n " in head or "\n\t" in head:
        head = _FOLD.sub(" ", head)
    lines = head.split("\r\n")
    if (
        " \r\n" in head
        or "\t\r\n" in head
        or head[-1:] in (" ", "\t")
        or ":  " in head
        or ": \t" in head
    ):
        # Trailing LWS, or more than one SP after a colon: rare, so only then pay per line.
        lines = [lines[0].rstrip(" \t"), *(_strip_value(ln) for ln in lines[1:])]
    start = lines[0]
    if start.startswith("SIP/"):
        return _parse_response(start, lines, data, body_start, head, limits)
    return _parse_request(start, lines, data, body_start, head, limits)


def _check_shape(lines: list[str], head: str, limits: Limits, status: int | None) -> None:
    """Header count and line length: O(1) unless the whole block exceeds the line limit."""
    if len(lines) - 1 > limits.max_headers:
        raise SipLimitError("too many header fields", status, LimitKind.HEADER_COUNT)
    limit = limits.max_header_line_length
    if len(head) > limit and max(map(len, lines)) > limit:
        raise SipLimitError("header line too long", status, LimitKind.HEADER_LENGTH)


def _check_via_depth(
    keys: list[str], items: list[tuple[str, str]], head: str, limits: Limits, status: int | None
) -> None:
    """Via values in the message; exact counting only when lines + commas could exceed it."""
    limit = limits.max_via_depth
    lines = keys.count("via")
    if lines + head.count(",") <= limit:
        return
    depth = lines
    if lines <= limit:
        depth = sum(
            len(split_comma(item[1])) for k, item in zip(keys, items, strict=True) if k == "via"
        )
    if depth > limit:
        raise SipLimitError("too many Via values", status, LimitKind.VIA_DEPTH)


def _strip_value(line: str) -> str:
    """``Name:   value  `` -> ``Name: value`` so the fast split applies."""
    line = line.rstrip(" \t")
    name, colon, value = line.partition(":")
    if colon and value[:1] in (" ", "\t"):
        return name + ": " + value.lstrip(" \t")
    return line


def parse_request_line(start: str) -> tuple[str, str, str]:
    """``Method SP Request-URI SP SIP-Version`` -> (method, uri text, version)."""
    # RFC 4475 §3.1.2.10 (trws): trailing SP after the version is tolerated (liberal), but
    # multiple SP between elements (§3.1.2.9) or LWS inside the URI (§3.1.2.8) are 400.
    parts = start.rstrip(" \t").split(" ")
    if len(parts) == 3 and parts[2] == "SIP/2.0" and parts[0] in _METHODS:
        return parts[0], parts[1], "SIP/2.0"  # the everyday case: no regex
    if len(parts) != 3 or not _TOKEN.match(parts[0]):
        if parts and _TOKEN.match(parts[0]) and len(parts) >= 2 and _VERSION.match(parts[-1]):
            raise SipParseError("malformed Request-Line", 400)
        raise _drop("not a SIP request")
    method, uri, version = parts
    m = _VERSION.match(version)
    if m is None:
        raise _drop("not a SIP request")
    if m.group(1) != "2" or m.group(2) != "0":
        raise SipParseError("Version Not Supported", 505)
    return method, uri, "SIP/2.0"


def _split_headers(lines: list[str], status: int | None) -> Headers:
    """Split header lines into (name, value) pairs.

    Fast path: ``line.split(": ", 1)`` per line in one comprehension, and the name is accepted
    only if the memo table knows it (a validated token, so it holds no ':' and the split point is
    right). Any other line (odd spacing, unknown spelling, no ": ") is redone by ``_slow_line``.
    """
    parts = [ln.split(": ", 1) for ln in lines]
    get = _CANON.get
    keys: list[str | None] = [get(part[0]) if len(part) == 2 else None for part in parts]
    items: list[tuple[str, ...]] = list(map(tuple, parts))
    if None in keys:
        for i, key in enumerate(keys):
            if key is None:
                items[i], keys[i] = _slow_line(lines[i], status)
    return Headers._from_parsed(items, keys)  # type: ignore[arg-type]  # no None left


def _slow_line(line: str, status: int | None) -> tuple[tuple[str, str], str]:
    name, colon, value = line.partition(":")
    name = name.rstrip(" \t")  # HCOLON = *( SP / HTAB ) ":" SWS
    if not colon or not _TOKEN.match(name):
        raise SipParseError("malformed header line", status)
    return (name, value.strip(" \t")), canonical_name(name)


def _body(
    keys: list[str],
    items: list[tuple[str, str]],
    data: bytes,
    body_start: int,
    status: int | None,
    limits: Limits,
) -> bytes:
    if "content-length" not in keys:
        # RFC 3261 §18.3: over UDP a missing Content-Length means "to the end of the datagram".
        if len(data) - body_start > limits.max_body_bytes:
            raise _body_too_large(status)
        return data[body_start:]
    value = items[keys.index("content-length")][1]
    if keys.count("content-length") > 1 and any(
        v != value for k, (_, v) in zip(keys, items, strict=True) if k == "content-length"
    ):
        raise SipParseError("conflicting Content-Length", status)
    if not value.isdigit() or not value.isascii() or len(value) > 10:
        raise SipParseError("malformed Content-Length", status)
    length = int(value)
    if length > limits.max_body_bytes:
        raise _body_too_large(status)
    available = len(data) - body_start
    if length > available:
        # §18.3: fewer bytes than Content-Length on a datagram -> 400 (drop for responses).
        raise SipParseError("Content-Length exceeds message", status)
    # More bytes than Content-Length: the excess is not part of this message (truncate).
    return data[body_start : body_start + length]


def _body_too_large(status: int | None) -> SipLimitError:
    # RFC 3261 §21.4.11: 413 Request Entity Too Large (a response is dropped).
    return SipLimitError("body too large", 413 if status is not None else None, LimitKind.BODY_SIZE)


def _check_single(keys: list[str], status: int | None) -> None:
    for key in _SINGLE:
        if keys.count(key) > 1:
            raise SipParseError("duplicate header", status)


def _parse_request(
    start: str, lines: list[str], data: bytes, body_start: int, head: str, limits: Limits
) -> Request:
    method, uri_text, version = parse_request_line(start)
    _check_shape(lines, head, limits, 400)
    headers = _split_headers(lines[1:], 400)
    keys, items = headers._keys, headers._items
    for key in MANDATORY_REQUEST_HEADERS:
        if key not in keys:
            raise SipParseError("Missing mandatory header", 400)
    _check_single(keys, 400)
    _check_via_depth(keys, items, head, limits, 400)
    uri = parse_uri(uri_text)  # raises 400
    if isinstance(uri, SipUri) and uri.headers:
        # RFC 3261 §19.1.1 table: headers are not allowed in a Request-URI (RFC 4475 §3.1.2.11).
        raise SipParseError("headers in Request-URI", 400)
    body = _body(keys, items, data, body_start, 400, limits)
    request = Request(method, uri, headers, body, version)
    # Validate (400) what the core reads for every request, and seed the message's cache with
    # the parsed values (same (raw, value) entries the lazy properties would create).
    cache = request._cache
    raw = items[keys.index("cseq")][1]
    cseq = parse_cseq(raw)
    if cseq.method != method:
        raise SipParseError("CSeq method mismatch", 400)
    cache["cseq"] = (raw, cseq)
    if not items[keys.index("call-id")][1]:
        raise SipParseError("empty Call-ID", 400)
    raw = items[keys.index("via")][1]
    cache["via"] = (raw, parse_via(raw)[0])
    raw = items[keys.index("from")][1]
    cache["from"] = (raw, parse_name_addr(raw))
    raw = items[keys.index("to")][1]
    cache["to"] = (raw, parse_name_addr(raw))
    if "max-forwards" in keys:
        _ = request.max_forwards
    return request


def _parse_response(
    start: str, lines: list[str], data: bytes, body_start: int, head: str, limits: Limits
) -> Response:
    parts = start.split(" ", 2)
    if len(parts) < 2 or _VERSION.match(parts[0]) is None:
        raise _drop("malformed Status-Line")
    if parts[0].upper() != "SIP/2.0":
        raise _drop("unsupported version")
    code = parts[1]
    if len(code) != 3 or not code.isdigit() or not code.isascii() or not "1" <= code[0] <= "6":
        raise _drop("malformed status code")
    reason = parts[2] if len(parts) == 3 else ""
    _check_shape(lines, head, limits, None)
    headers = _split_headers(lines[1:], None)
    keys, items = headers._keys, headers._items
    for key in MANDATORY_REQUEST_HEADERS:
        if key not in keys:
            raise _drop("missing mandatory header")
    _check_single(keys, None)
    _check_via_depth(keys, items, head, limits, None)
    body = _body(keys, items, data, body_start, None, limits)
    response = Response(int(code), reason, headers, body, "SIP/2.0")
    try:
        # The transaction layer matches on these; a response it cannot match is dropped.
        _ = response.cseq, response.top_via
    except SipParseError as exc:
        raise _drop("malformed response") from exc
    return response


def error_response(data: bytes, error: SipError, to_tag: str | None = None) -> Response | None:
    """Build the stateless answer to an invalid request from its raw bytes (RFC 3261 §8.2.6).

    Copies every Via, From, To (adding ``to_tag`` if it has none), Call-ID and CSeq the raw text
    offers, and explains ``error.reason`` in a Warning header (RFC 3261 §20.43, code 399). Returns
    None when nothing should be sent: the error says drop, the input is a response or an ACK
    (§17.1.1.3: never answered), or the headers needed to route the answer are missing.
    """
    status = error.status
    if status is None:
        return None
    try:
        end = data.find(b"\r\n\r\n")
        head = data[: end if end >= 0 else len(data)].decode("utf-8", "surrogateescape")
        head = _FOLD.sub(" ", head)
        lines = [ln.rstrip("\r") for ln in head.split("\n")]
        start = lines[0].split(" ", 1)[0]
        if not start or start.startswith("SIP/") or start == "ACK":
            return None
        wanted: dict[str, list[str]] = {"via": [], "from": [], "to": [], "call-id": [], "cseq": []}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            key = canonical_name(name.strip(" \t"))
            if colon and key in wanted:
                wanted[key].append(value.strip(" \t"))
        if not wanted["via"] or not all(wanted[k] for k in ("from", "to", "call-id", "cseq")):
            return None
        headers = Headers()
        for via in wanted["via"]:
            headers.add("Via", via)
        to = wanted["to"][0]
        if to_tag and ";tag=" not in to.replace(" ", "").lower():
            to = f"{to};tag={to_tag}"
        headers.add("From", wanted["from"][0])
        headers.add("To", to)
        headers.add("Call-ID", wanted["call-id"][0])
        headers.add("CSeq", wanted["cseq"][0])
        headers.add("Warning", f'399 sipedge "{error.reason}"')
        response = Response(status, _REASONS.get(status, "Bad Request"), headers)
        _ = response.top_via  # must be routable
        return response
    except (SipError, ValueError, IndexError):
        return None


_REASONS = {
    400: "Bad Request",
    413: "Request Entity Too Large",
    414: "Request-URI Too Long",
    416: "Unsupported URI Scheme",
    483: "Too Many Hops",
    505: "Version Not Supported",
    513: "Message Too Large",
}
