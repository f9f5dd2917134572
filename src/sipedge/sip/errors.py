"""SIP error tree.

Every error carries the status a server should answer with (h11's ``error_status_hint`` idea):
``status`` is an int when the peer should get a stateless response, ``None`` when the input is to be
dropped silently (garbage, responses, unframeable streams). ``reason`` is a fixed, safe phrase chosen
by us; it never echoes bytes from the wire, so it can go into a reason phrase or a Warning header.
"""

from __future__ import annotations

__all__ = ["SipError", "SipLimitError", "SipParseError", "TransportError"]


class SipError(Exception):
    """Base of every error the SIP core raises."""

    status: int | None
    reason: str

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reason={self.reason!r}, status={self.status!r})"


class SipParseError(SipError):
    """The bytes are not a valid SIP message (or element).

    ``status`` is 400 when a request was recognised but is invalid, ``None`` when not even a request
    could be recognised or the message is a response (responses are never answered).
    """


class SipLimitError(SipParseError):
    """The message breaks a hard limit (``sip.limits``); ``limit`` names which (a metric label)."""

    limit: str

    def __init__(self, reason: str, status: int | None, limit: str) -> None:
        super().__init__(reason, status)
        self.limit = limit


class TransportError(SipError):
    """A socket-level failure (``OSError`` translated in ``sipedge.stack``); never answered."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason, status)
