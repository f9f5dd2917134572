"""SIP requests and responses (RFC 3261 §7) over an ordered, lazily-interpreted header list.

Headers are stored as the (name, value) text the parser split out; nothing is lower-cased or
parsed per line. Names map to a canonical key through a memo table, so the common spellings
("Via", "v", "VIA") cost one dict lookup. Structured values (Via, CSeq, From, ...) are parsed the
first time they are read and cached against the identity of the raw value they came from, so a
later ``set()`` transparently invalidates them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar, cast

from sipedge.sip.errors import SipParseError
from sipedge.sip.headers import (
    CSeq,
    NameAddr,
    Via,
    parse_cseq,
    parse_name_addr,
    parse_name_addr_list,
    parse_via,
    split_comma,
)
from sipedge.sip.uri import Uri

__all__ = [
    "COMPACT_FORMS",
    "Headers",
    "Message",
    "Request",
    "Response",
    "canonical_name",
    "frozen",
    "request_skeleton",
]

T = TypeVar("T")

# RFC 3261 §7.3.3 compact forms (plus the RFC 3265/3515/3841/4028 ones seen on trunks).
COMPACT_FORMS = {
    "v": "Via",
    "f": "From",
    "t": "To",
    "i": "Call-ID",
    "m": "Contact",
    "l": "Content-Length",
    "c": "Content-Type",
    "k": "Supported",
    "s": "Subject",
    "e": "Content-Encoding",
    "o": "Event",
    "u": "Allow-Events",
    "r": "Refer-To",
    "b": "Referred-By",
    "x": "Session-Expires",
    "j": "Reject-Contact",
    "a": "Accept-Contact",
    "d": "Request-Disposition",
}
_KNOWN = [
    "Accept",
    "Accept-Encoding",
    "Accept-Language",
    "Alert-Info",
    "Allow",
    "Allow-Events",
    "Authentication-Info",
    "Authorization",
    "Call-ID",
    "Call-Info",
    "Contact",
    "Content-Disposition",
    "Content-Encoding",
    "Content-Language",
    "Content-Length",
    "Content-Type",
    "CSeq",
    "Date",
    "Error-Info",
    "Event",
    "Expires",
    "From",
    "History-Info",
    "In-Reply-To",
    "Max-Forwards",
    "MIME-Version",
    "Min-Expires",
    "Min-SE",
    "Organization",
    "P-Asserted-Identity",
    "P-Preferred-Identity",
    "Path",
    "Priority",
    "Privacy",
    "Proxy-Authenticate",
    "Proxy-Authorization",
    "Proxy-Require",
    "RAck",
    "Reason",
    "Record-Route",
    "Refer-To",
    "Referred-By",
    "Reply-To",
    "Require",
    "Retry-After",
    "Route",
    "RSeq",
    "Server",
    "Service-Route",
    "Session-Expires",
    "Subject",
    "Subscription-State",
    "Supported",
    "Timestamp",
    "To",
    "Unsupported",
    "User-Agent",
    "Via",
    "Warning",
    "WWW-Authenticate",
]
# Display spelling for a canonical (lower-case) key.
_DISPLAY = {n.lower(): n for n in _KNOWN}
# Headers defined as comma-separated lists (RFC 3261 §7.3.1: "#" rules). Authorization & co.,
# Date, From/To and unknown headers are never split: commas are part of their values.
_LIST_HEADERS = frozenset(
    k.lower()
    for k in [
        "Via",
        "Route",
        "Record-Route",
        "Contact",
        "Allow",
        "Supported",
        "Require",
        "Proxy-Require",
        "Unsupported",
        "Accept",
        "Accept-Encoding",
        "Accept-Language",
        "Alert-Info",
        "Call-Info",
        "Error-Info",
        "Content-Encoding",
        "Content-Language",
        "In-Reply-To",
        "Allow-Events",
        "Path",
        "Service-Route",
        "P-Asserted-Identity",
        "P-Preferred-Identity",
        "History-Info",
        "Reason",
        "Warning",
    ]
)

_TOKEN = re.compile(r"[A-Za-z0-9\-.!%*_+`'~]+\Z")
# Memo: name as written -> canonical lower-case key. Bounded so hostile traffic with random header
# names cannot grow it without limit; misses beyond the bound are just computed each time.
_CANON: dict[str, str] = {}
_CANON_MAX = 4096
for _k in _DISPLAY:
    _CANON[_k] = _k
    _CANON[_DISPLAY[_k]] = _k
    _CANON[_k.upper()] = _k
for _c, _full in COMPACT_FORMS.items():
    _CANON[_c] = _CANON[_c.upper()] = _full.lower()
    _DISPLAY.setdefault(_full.lower(), _full)


def canonical_name(name: str) -> str:
    """Canonical lookup key for a header name: lower case, compact form expanded."""
    key = _CANON.get(name)
    if key is not None:
        return key
    key = name.lower()
    if len(key) == 1:
        full = COMPACT_FORMS.get(key)
        if full is not None:
            key = full.lower()
    # Only valid tokens are memoised: the parser trusts a memo hit as an already-validated name.
    if len(_CANON) < _CANON_MAX and _TOKEN.match(name):
        _CANON[name] = key
    return key


def display_name(key: str, written: str) -> str:
    return _DISPLAY.get(key, written)


class Headers:
    """Ordered multi-map of header fields; lookups are case-insensitive and compact-form aware.

    Stored as the parser produced it: ``_items`` (name as written, value) tuples (immutable, so
    copies share them, and untracked by the cyclic GC once seen) and a parallel list of
    canonical keys, so lookups are C-level list scans and nothing is copied per line.
    """

    __slots__ = ("_items", "_keys")

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        # [name as written, value] pairs (lists: the parser's str.split output, kept as is).
        self._items: list[tuple[str, str]] = []
        self._keys: list[str] = []
        for name, value in items:
            self.add(name, value)

    @classmethod
    def _from_parsed(cls, items: list[tuple[str, str]], keys: list[str]) -> Headers:
        h = cls.__new__(cls)
        h._items, h._keys = items, keys
        return h

    def get(self, name: str) -> str | None:
        return self.value_of(canonical_name(name))

    def value_of(self, key: str) -> str | None:
        """``get`` for a key that is already canonical (lower case, full form): no name lookup."""
        keys = self._keys
        if key in keys:
            return self._items[keys.index(key)][1]
        return None

    def raw_all_of(self, key: str) -> list[str]:
        """``get_raw_all`` for a canonical key."""
        return [item[1] for k, item in zip(self._keys, self._items, strict=True) if k == key]

    def get_raw_all(self, name: str) -> list[str]:
        """Every header line's value for ``name``, without comma splitting."""
        return self.raw_all_of(canonical_name(name))

    def get_all(self, name: str) -> list[str]:
        key = canonical_name(name)
        values = self.raw_all_of(key)
        if key not in _LIST_HEADERS:
            return values
        out: list[str] = []
        for v in values:
            out.extend(split_comma(v))
        return out

    def count(self, name: str) -> int:
        return self._keys.count(canonical_name(name))

    def add(self, name: str, value: str) -> None:
        key = canonical_name(name)
        self._items.append((display_name(key, name), value))
        self._keys.append(key)

    def prepend(self, name: str, value: str) -> None:
        key = canonical_name(name)
        self._items.insert(0, (display_name(key, name), value))
        self._keys.insert(0, key)

    def set(self, name: str, value: str) -> None:
        """Replace every field named ``name`` by one, at the position of the first (or the end)."""
        key = canonical_name(name)
        if key not in self._keys:
            self.add(name, value)
            return
        first = self._keys.index(key)
        self._items[first] = (self._items[first][0], value)
        self._remove(key, keep=first)

    def replace_first(self, name: str, value: str) -> None:
        """Replace the value of the first field named ``name`` (e.g. to stamp the top Via)."""
        first = self._keys.index(canonical_name(name))
        self._items[first] = (self._items[first][0], value)

    def remove(self, name: str) -> None:
        self._remove(canonical_name(name), keep=-1)

    def _remove(self, key: str, keep: int) -> None:
        keep_idx = [i for i, k in enumerate(self._keys) if k != key or i == keep]
        self._items = [self._items[i] for i in keep_idx]
        self._keys = [self._keys[i] for i in keep_idx]

    def copy(self) -> Headers:
        return Headers._from_parsed(list(self._items), list(self._keys))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and canonical_name(name) in self._keys

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """(canonical display name, value) in wire order."""
        for key, (name, value) in zip(self._keys, self._items, strict=True):
            yield display_name(key, name), value

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"Headers({list(self)!r})"

    def _serialise(self, out: list[str], content_length: int) -> None:
        """Append ``Name: value`` lines; Content-Length is written (once) as ``content_length``."""
        keys = self._keys
        lines = [f"{n}: {v}\r\n" for n, v in self._items]
        if "content-length" in keys:
            first = keys.index("content-length")
            lines[first] = f"{self._items[first][0]}: {content_length}\r\n"
            if keys.count("content-length") > 1:  # duplicates were equal; keep one
                lines = [
                    ln for i, ln in enumerate(lines) if i == first or keys[i] != "content-length"
                ]
        else:
            lines.append(f"Content-Length: {content_length}\r\n")
        out.extend(lines)


class _Base:
    __slots__ = ("_cache", "body", "headers", "version")

    headers: Headers
    body: bytes
    version: str
    _cache: dict[str, tuple[object, object]]

    def _cached(self, name: str, raw: object, parse: Callable[[], T]) -> T:
        hit = self._cache.get(name)
        # Identity of the raw text proves it is unchanged; tuples of lines compare by value.
        if hit is not None and (hit[0] is raw or (type(raw) is tuple and hit[0] == raw)):
            return hit[1]  # type: ignore[return-value]
        value = parse()
        self._cache[name] = (raw, value)
        return value

    def _required(self, key: str, name: str) -> str:
        h = self.headers
        keys = h._keys
        if key in keys:
            return h._items[keys.index(key)][1]
        raise SipParseError(f"missing {name}", 400)

    def _parsed(self, key: str, name: str, parse: Callable[[str], T]) -> T:
        # The per-message memo of a single-valued header's parse, flattened: these properties
        # are read dozens of times per call, so no closure and no extra call layer per read.
        h = self.headers
        keys = h._keys
        if key not in keys:
            raise SipParseError(f"missing {name}", 400)
        raw = h._items[keys.index(key)][1]
        hit = self._cache.get(key)
        if hit is not None and hit[0] is raw:  # identity: the header text is unchanged
            return hit[1]  # type: ignore[return-value]
        value = parse(raw)
        self._cache[key] = (raw, value)
        return value

    @property
    def vias(self) -> list[Via]:
        raws = self.headers.raw_all_of("via")
        key = tuple(raws)

        def parse() -> list[Via]:
            out: list[Via] = []
            for raw in raws:
                out.extend(parse_via(raw))
            return out

        return list(self._cached("vias", key, parse)) if raws else []  # callers may mutate

    @property
    def top_via(self) -> Via:
        return self._parsed("via", "Via", _first_via)

    def replace_top_via(self, line: str, top: Via) -> None:
        """Replace the first Via line by ``line``, whose first via-parm is ``top`` (already
        built: the stamped Via of RFC 3261 §18.2.1 is not parsed back)."""
        self.headers.replace_first("Via", line)
        self._cache["via"] = (line, top)

    @property
    def call_id(self) -> str:
        h = self.headers
        keys = h._keys
        if "call-id" in keys:
            return h._items[keys.index("call-id")][1]
        raise SipParseError("missing Call-ID", 400)

    @property
    def cseq(self) -> CSeq:
        return self._parsed("cseq", "CSeq", parse_cseq)

    @property
    def from_(self) -> NameAddr:
        return self._parsed("from", "From", parse_name_addr)

    @property
    def to(self) -> NameAddr:
        return self._parsed("to", "To", parse_name_addr)

    @property
    def contact(self) -> list[NameAddr]:
        """Contact entries; ``[]`` when absent or for the REGISTER wildcard ``*``."""
        raws = self.headers.raw_all_of("contact")
        if not raws or raws == ["*"]:
            return []
        return [na for raw in raws for na in parse_name_addr_list(raw)]

    @property
    def record_route(self) -> list[NameAddr]:
        return [
            na
            for raw in self.headers.get_raw_all("Record-Route")
            for na in parse_name_addr_list(raw)
        ]

    @property
    def route(self) -> list[NameAddr]:
        return [na for raw in self.headers.get_raw_all("Route") for na in parse_name_addr_list(raw)]

    @property
    def content_type(self) -> str | None:
        return self.headers.value_of("content-type")

    def _finish(self, start: str) -> bytes:
        out = [start, "\r\n"]
        self.headers._serialise(out, len(self.body))
        out.append("\r\n")
        return "".join(out).encode("utf-8", "surrogateescape") + self.body


class Request(_Base):
    __slots__ = ("method", "uri")

    method: str
    uri: Uri

    def __init__(
        self,
        method: str,
        uri: Uri,
        headers: Headers,
        body: bytes = b"",
        version: str = "SIP/2.0",
    ) -> None:
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
        self.version = version
        self._cache = {}

    @property
    def max_forwards(self) -> int:
        """Max-Forwards; an absent header counts as 70 (RFC 3261 §8.1.1.6 default, be liberal)."""
        raw = self.headers.value_of("max-forwards")
        if raw is None:
            return 70
        return self._cached("max_forwards", raw, lambda: _parse_max_forwards(raw))

    def __bytes__(self) -> bytes:
        return self._finish(f"{self.method} {self.uri} {self.version}")

    def __repr__(self) -> str:
        return f"Request({self.method} {self.uri})"


class Response(_Base):
    __slots__ = ("reason", "status")

    status: int
    reason: str

    def __init__(
        self,
        status: int,
        reason: str,
        headers: Headers,
        body: bytes = b"",
        version: str = "SIP/2.0",
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.version = version
        self._cache = {}

    def __bytes__(self) -> bytes:
        return self._finish(f"{self.version} {self.status} {self.reason}")

    def __repr__(self) -> str:
        return f"Response({self.status} {self.reason})"


Message = Request | Response

# What a request's finished transaction (and its dialog's later needs: the 2xx's ACK, an orphan
# clean-up, RFC 3261 §12.1.2) can still ask of it: its ids, Via, Contact and Route.
_SKELETON_KEYS = frozenset({"via", "from", "to", "call-id", "cseq", "contact", "route"})

M = TypeVar("M", Request, Response)


def _frozen_headers(items: list[tuple[str, str]], keys: list[str]) -> Headers:
    # Tuples of strings, not lists: the cyclic GC untracks them, so the thousands of transactions
    # waiting out Timer J/K/L/M (32 s each) cost the collector a few objects each, not dozens.
    # Read-only by contract (nothing adds headers to a message that was already sent).
    return Headers._from_parsed(
        cast(list[tuple[str, str]], tuple(items)), cast(list[str], tuple(keys))
    )


def frozen(msg: M) -> M:
    """A read-only copy of a sent message, for a transaction that may only re-send it."""
    src = msg.headers
    headers = _frozen_headers(src._items, src._keys)
    if isinstance(msg, Request):
        return Request(msg.method, msg.uri, headers, msg.body, msg.version)
    return Response(msg.status, msg.reason, headers, msg.body, msg.version)


def request_skeleton(request: Request) -> Request:
    """``request`` without its body and other headers, read-only: what a transaction keeps once
    nothing is re-sent from it (RFC 6026 Accepted, Timer J/K), so that a held call does not hold
    the whole offer for 64*T1.

    Values are shared with ``request``, nothing is re-parsed; names become the one shared
    display string (the parser's split made a string per line)."""
    src = request.headers
    keys: list[str] = []
    items: list[tuple[str, str]] = []
    for key, (name, value) in zip(src._keys, src._items, strict=True):
        if key in _SKELETON_KEYS:
            keys.append(key)
            items.append((display_name(key, name), value))
    return Request(request.method, request.uri, _frozen_headers(items, keys), b"", request.version)


def _first_via(raw: str) -> Via:
    return parse_via(raw)[0]


def _parse_max_forwards(raw: str) -> int:
    value = raw.strip()
    # 1*DIGIT, 0-255 (RFC 3261 §20.22 limits it in practice; RFC 4475 §3.1.2.4 expects 400).
    if not value.isdigit() or not value.isascii() or len(value) > 10 or int(value) > 255:
        raise SipParseError("malformed Max-Forwards", 400)
    return int(value)
