"""Stream framing for SIP over TCP (RFC 3261 §18.3).

On a stream the only message boundary is Content-Length, so it is mandatory there. The framer is
sans-IO: feed it whatever bytes arrived, get back every complete message; it keeps the remainder.
CRLFs between messages are skipped (RFC 3261 §7.5, and RFC 5626 §3.5.1 keep-alives: a
double-CRLF "ping" sets ``pong_due`` so the transport can answer with a single CRLF "pong").

Anything unframeable — no or a bad Content-Length, a header block beyond ``max_size`` — raises
``SipError(status=None)``: the caller must close the connection, because there is no way to find
the next message boundary. A complete header block announcing a message beyond ``max_size``
raises ``SipLimitError`` (513 for a request, None for a response) and keeps that header block in
``rejected_head``, so the caller can answer 513 Message Too Large before closing.
"""

from __future__ import annotations

import re

from sipedge.sip.errors import SipLimitError, SipParseError
from sipedge.sip.limits import LimitKind

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "StreamFramer"]

DEFAULT_MAX_MESSAGE_SIZE = 65536
# Content-Length or its compact form "l" at the start of a header line, any case, optional LWS
# before the colon. Anchored alternation over disjoint classes: linear time.
_CONTENT_LENGTH = re.compile(rb"\r\n(?:content-length|l)[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)


class StreamFramer:
    __slots__ = ("_buf", "_need", "_scan_from", "max_size", "pong_due", "rejected_head")

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_size = max_size
        self.pong_due = False
        self.rejected_head: bytes | None = None
        self._buf = bytearray()
        self._need = 0  # total length of the message at the head of the buffer, once known
        self._scan_from = 0  # where the header-end search resumes (avoids rescanning)

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the complete messages now available, in order."""
        buf = self._buf
        buf += data
        out: list[bytes] = []
        while buf:
            if not self._need:
                if buf[0] in (13, 10):
                    self._skip_crlf()
                    continue
                end = buf.find(b"\r\n\r\n", self._scan_from)
                if end < 0:
                    if len(buf) > self.max_size:
                        raise SipLimitError("header block too large", None, LimitKind.MESSAGE_SIZE)
                    self._scan_from = max(0, len(buf) - 3)
                    break
                self._scan_from = 0
                self._need = end + 4 + self._content_length(end)
                if self._need > self.max_size:
                    self.rejected_head = bytes(buf[: end + 4])
                    status = None if buf.startswith(b"SIP/") else 513
                    raise SipLimitError("message too large", status, LimitKind.MESSAGE_SIZE)
            if len(buf) < self._need:
                break
            out.append(bytes(buf[: self._need]))
            del buf[: self._need]
            self._need = 0
        return out

    def _skip_crlf(self) -> None:
        buf = self._buf
        i, n = 0, len(buf)
        while i < n and buf[i] in (13, 10):
            i += 1
        if buf.startswith(b"\r\n\r\n"):
            self.pong_due = True
        del buf[:i]

    def _content_length(self, end: int) -> int:
        # Search from the start line's CRLF up to the blank line; include the CRLF ending the
        # last header line so its "\r\n" anchor matches.
        values = _CONTENT_LENGTH.findall(self._buf, 0, end + 2)
        if not values:
            raise SipParseError("missing Content-Length on stream", None)
        first = values[0].strip()
        if any(v.strip() != first for v in values[1:]):
            raise SipParseError("conflicting Content-Length", None)
        if not first.isdigit() or len(first) > 10:
            raise SipParseError("malformed Content-Length", None)
        return int(first)
