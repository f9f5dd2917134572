"""Decisions are values (livekit/sip's ``AuthResult``/``DispatchResult`` seam).

Every policy returns ``Accept(route) | Reject(...) | Drop(...)``; the runtime has one switch that
turns a decision into a SIP response, a log line and a metric. ``metric_reason`` comes from the
closed ``MetricReason`` vocabulary, so request data can never become a metric label, and ``reason``
is a fixed phrase chosen here (never an address, a secret or another account's data): it goes on
the wire in ``Warning: 399 sipedge "<reason>"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

__all__ = [
    "Accept",
    "Decision",
    "Drop",
    "MetricReason",
    "Reject",
    "warning_header",
]

R = TypeVar("R")


class MetricReason(StrEnum):
    """Why a request was refused; the only label values the rejection metric ever sees."""

    UNKNOWN_SOURCE = "unknown_source"
    TRANSPORT = "transport"
    NO_NUMBER = "no_number"
    NO_AGENT = "no_agent"
    CHANNELS = "channels"
    CODECS = "codecs"
    MALFORMED_SDP = "malformed_sdp"


@dataclass(frozen=True, slots=True)
class Accept(Generic[R]):
    """The request passes; ``route`` is what the runtime needs to carry it on."""

    route: R


@dataclass(frozen=True, slots=True)
class Reject:
    """Answer ``status`` with a ``Warning`` naming the rule (``reason``).

    ``trunk_ids`` are the trunks that admitted the source (step 3 passed: the runtime keeps a call
    record and marks them as crossed); ``trunk_id``/``number_id``/``agent_id`` are what had been
    decided when the rule fired (``trunk_id`` also when exactly one trunk admitted the source).
    """

    status: int
    reason: str
    metric_reason: MetricReason
    trunk_ids: tuple[str, ...] = ()
    trunk_id: str | None = None
    number_id: str | None = None
    agent_id: str | None = None


@dataclass(frozen=True, slots=True)
class Drop:
    """Send nothing at all (an unknown source under ``security.unknown_source = "drop"``)."""

    metric_reason: MetricReason


Decision = Accept[R] | Reject | Drop


def _quoted(text: str) -> str:
    # quoted-string (RFC 3261 §25.1): escape '"' and '\\'; CR/LF and other controls never belong.
    safe = "".join(ch for ch in text if ch >= " " and ch != "\x7f")
    return safe.replace("\\", "\\\\").replace('"', '\\"')


def warning_header(reject: Reject) -> str:
    """The ``Warning`` header value (RFC 3261 §20.43): ``399 sipedge "<rule>"``."""
    return f'399 sipedge "{_quoted(reject.reason)}"'
