"""Hard limits on one SIP message, checked by the parser (``parse_message(data, limits)``).

Each breach raises ``SipLimitError`` naming the limit (``LimitKind``, a closed vocabulary the
stack uses as a metric label) and carrying the status to answer a request with: 513 Message Too
Large for the whole message (RFC 3261 §21.5.11), 413 Request Entity Too Large for the body
(§21.4.11), 400 for the header block's shape. Responses over a limit are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["DEFAULT_LIMITS", "LimitKind", "Limits"]


class LimitKind(StrEnum):
    MESSAGE_SIZE = "message_size"
    HEADER_COUNT = "header_count"
    HEADER_LENGTH = "header_length"
    VIA_DEPTH = "via_depth"
    BODY_SIZE = "body_size"


@dataclass(frozen=True, slots=True)
class Limits:
    max_message_bytes: int = 65_536
    max_headers: int = 256
    max_header_line_length: int = 8192
    max_via_depth: int = 100
    max_body_bytes: int = 32_768


DEFAULT_LIMITS = Limits()
