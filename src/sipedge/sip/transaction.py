"""RFC 3261 §17 transactions: the events, actions and shared machinery of the four FSMs.

The FSMs themselves live in ``transaction_client.py`` (§17.1) and ``transaction_server.py`` (§17.2).
Every FSM is sans-IO: ``handle(event, now) -> list[Action]``. It never reads a clock, never sends
and never arms a timer itself; it returns ``Send``/``StartTimer``/``CancelTimer``/``Deliver``/
``Terminated`` values that ``sipedge.stack.transactions`` carries out. Timers come back as
``TimerFired(name)`` events. An input that the current state does not expect (a stale timer, a
response to a server transaction, anything after Terminated) returns ``[]``: a no-op, never an
exception, because the network may deliver anything at any time.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeAlias

from sipedge.sip.message import Headers, Message, Request, Response, display_name
from sipedge.sip.timers import TimerConfig

__all__ = [
    "Action",
    "Address",
    "CancelSent",
    "CancelTimer",
    "Deliver",
    "Event",
    "Received",
    "Send",
    "SendResponse",
    "Start",
    "StartTimer",
    "Terminated",
    "TerminationReason",
    "TimerFired",
    "TransactionBase",
    "TransportFailed",
    "TxState",
    "build_response",
]

# Where a message goes: (host, port). The stack maps it to a socket or a TCP connection.
Address: TypeAlias = tuple[str, int]


# --- events (inputs) ---------------------------------------------------------------------------
# Events and actions are short-lived values built for every message; they are plain slotted
# dataclasses, not frozen ones, because a frozen dataclass's __init__ costs an object.__setattr__
# call per field (measured: the largest self-time entry of the call path). Treat them as immutable.


@dataclass(slots=True)
class Start:
    """The TU hands a client transaction its request: send it and arm the timers."""


@dataclass(slots=True)
class Received:
    """A message from the transport that matched this transaction (or created a server one)."""

    msg: Message


@dataclass(slots=True)
class SendResponse:
    """The TU answers the request of a server transaction."""

    response: Response


@dataclass(slots=True)
class TimerFired:
    name: str


@dataclass(slots=True)
class TransportFailed:
    """A fatal transport error while sending (ICMP unreachable, TCP connect/write failure)."""

    reason: str = "transport error"


@dataclass(slots=True)
class CancelSent:
    """The TU sent a CANCEL for this INVITE (RFC 3261 §9.1): without a final response within
    64*T1 the INVITE client transaction is considered cancelled and destroyed."""


Event: TypeAlias = Start | Received | SendResponse | TimerFired | TransportFailed | CancelSent


# --- actions (outputs) -------------------------------------------------------------------------


@dataclass(slots=True)
class Send:
    msg: Message
    dest: Address


@dataclass(slots=True)
class StartTimer:
    """(Re)arm timer ``name`` to fire at the absolute time ``at``; replaces an armed one."""

    name: str
    at: float


@dataclass(slots=True)
class CancelTimer:
    name: str


@dataclass(slots=True)
class Deliver:
    """Pass a message up to the TU (a new request, an ACK for a 2xx, or a response)."""

    msg: Message


class TerminationReason(enum.Enum):
    NORMAL = "normal"  # the transaction ran its course
    TIMEOUT = "timeout"  # Timer B/F (no final response) or Timer H (no ACK): the TU must know
    TRANSPORT_ERROR = "transport_error"  # the TU must know (RFC 3261 §17.1.1.2, §17.2.4)


@dataclass(slots=True)
class Terminated:
    """The transaction is over; the stack forgets it and its timers."""

    reason: TerminationReason = TerminationReason.NORMAL


Action: TypeAlias = Send | StartTimer | CancelTimer | Deliver | Terminated


class TxState(enum.Enum):
    INIT = "init"  # created, not yet started (not an RFC state)
    CALLING = "calling"
    TRYING = "trying"
    PROCEEDING = "proceeding"
    ACCEPTED = "accepted"  # RFC 6026 §7.1/§7.2
    COMPLETED = "completed"
    CONFIRMED = "confirmed"
    TERMINATED = "terminated"


@dataclass(slots=True)
class TransactionBase:
    """What all four FSMs share: the request, its peer, the transport kind and armed timers.

    ``_armed`` lets the FSM ignore a ``TimerFired`` for a timer it cancelled or never armed (the
    stack may race a cancel) and cancel everything on termination.
    """

    request: Request
    dest: Address
    reliable: bool
    config: TimerConfig = field(default_factory=TimerConfig)
    state: TxState = TxState.INIT
    # A tuple, not a set: at most three names, and a set costs 216 bytes per transaction.
    _armed: tuple[str, ...] = ()

    @property
    def terminated(self) -> bool:
        return self.state is TxState.TERMINATED

    def retirement(self) -> tuple[bool, bytes | None] | None:
        """When only a wait for the last timer is left (nothing more is sent on its own):
        ``(passes_up, resend)`` -- whether an ACK / 2xx retransmission still goes to the TU, and
        the bytes every matching retransmission is answered with (None: absorbed). None while
        the transaction still has work of its own."""
        return None

    def _start_timer(self, name: str, now: float, delay: float) -> StartTimer:
        if name not in self._armed:
            self._armed = (*self._armed, name)
        return StartTimer(name, now + delay)

    def _cancel_timers(self, *names: str) -> list[Action]:
        out: list[Action] = []
        for name in names:
            if name in self._armed:
                self._armed = tuple(n for n in self._armed if n != name)
                out.append(CancelTimer(name))
        return out

    def _fired(self, event: TimerFired) -> bool:
        """True when ``event`` is a live timer of ours (and mark it consumed)."""
        if event.name not in self._armed:
            return False
        self._armed = tuple(n for n in self._armed if n != event.name)
        return True

    def _terminate(self, reason: TerminationReason = TerminationReason.NORMAL) -> list[Action]:
        out = self._cancel_timers(*sorted(self._armed))
        self.state = TxState.TERMINATED
        out.append(Terminated(reason))
        return out

    def _transport_failed(self) -> list[Action]:
        # RFC 3261 §17.1.1.2, §17.1.2.2, §17.2.4: a fatal transport error ends the transaction and
        # the TU is told (the stack reports Terminated(TRANSPORT_ERROR) to it).
        if self.terminated:
            return []
        return self._terminate(TerminationReason.TRANSPORT_ERROR)


# Headers a response copies from its request (RFC 3261 §8.2.6.2), by canonical key.
_COPIED_TO_RESPONSE = frozenset({"via", "from", "to", "call-id", "cseq"})


def build_response(
    request: Request, status: int, reason: str, *, to_tag: str | None = None
) -> Response:
    """A response to ``request`` per RFC 3261 §8.2.6: Via (all, in order), From, To, Call-ID and
    CSeq copied verbatim; Timestamp too on a 100 (§8.2.6.1).

    ``to_tag`` is added to To when given and To has none (§8.2.6.2). One pass over the request's
    header lines, no value parsed except To when a tag is to be added.
    """
    add_tag = to_tag is not None and request.to.tag is None
    src = request.headers
    items: list[tuple[str, str]] = []
    keys: list[str] = []
    # Straight over the parsed (name, value) lists: the names are already canonical-keyed.
    for key, item in zip(src._keys, src._items, strict=True):
        if key in _COPIED_TO_RESPONSE or (status == 100 and key == "timestamp"):
            name = display_name(key, item[0])  # "Via" for a compact "v", as Headers.add does
            if add_tag and key == "to":
                item = (name, f"{item[1]};tag={to_tag}")
            elif name != item[0]:
                item = (name, item[1])
            items.append(item)  # an immutable pair: shared with the request
            keys.append(key)
    return Response(status, reason, Headers._from_parsed(items, keys))
