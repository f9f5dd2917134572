"""The outbound dial plan (SPEC §5 Outbound), as pure functions and one small state machine.

``choose_trunk`` picks the trunk that owns the calling number; ``format_dialled`` applies the
leading-``+`` rule; ``DialAttempt`` walks the trunk's gateways in priority order and decides, for
every carrier outcome, what the dialer does next: answer a challenge once, move to the next gateway
(timeout, transport error, 408, 5xx, 403, a failed challenge) or stop on the callee's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sipedge.edge.agents import same_owner
from sipedge.edge.numbers import dialled_digits
from sipedge.edge.snapshot import (
    AgentView,
    GatewayView,
    NumberView,
    RoutingSnapshot,
    TrunkView,
    gateway_order,
)

__all__ = [
    "SIP_TRUNK_PROVIDER",
    "AnswerChallenge",
    "DialAction",
    "DialAttempt",
    "DialOutcome",
    "FinalClass",
    "Finish",
    "OutboundPlan",
    "OutboundRefusal",
    "Refused",
    "Response",
    "SendInvite",
    "Timeout",
    "TransportFailure",
    "Wait",
    "choose_trunk",
    "classify_final",
    "format_dialled",
    "gateway_order",
]

SIP_TRUNK_PROVIDER = "sip-trunk"


class OutboundRefusal(StrEnum):
    """Why ``POST /call`` cannot be placed (400 ``{message}``)."""

    AGENT_NOT_FOUND = "agent_not_found"
    AGENT_NOT_SIP_TRUNK = "agent_not_sip_trunk"
    NUMBER_NOT_FOUND = "number_not_found"
    TRUNK_INACTIVE = "trunk_inactive"
    OUTBOUND_DISABLED = "outbound_disabled"
    NO_GATEWAY = "no_gateway"


_MESSAGES = {
    OutboundRefusal.AGENT_NOT_FOUND: "agent not found",
    OutboundRefusal.AGENT_NOT_SIP_TRUNK: "agent does not use telephony_provider sip-trunk",
    OutboundRefusal.NUMBER_NOT_FOUND: "from_phone_number is not a number of a live trunk",
    OutboundRefusal.TRUNK_INACTIVE: "trunk is not active",
    OutboundRefusal.OUTBOUND_DISABLED: "trunk has outbound calls disabled",
    OutboundRefusal.NO_GATEWAY: "trunk has no gateway",
}


@dataclass(frozen=True, slots=True)
class Refused:
    reason: OutboundRefusal

    @property
    def message(self) -> str:
        return _MESSAGES[self.reason]


@dataclass(frozen=True, slots=True)
class OutboundPlan:
    trunk: TrunkView
    number: NumberView  # the calling number (From)
    gateways: tuple[GatewayView, ...]  # in the order to try


def choose_trunk(
    snapshot: RoutingSnapshot, from_number_key: str | None, *, agent_id: str | None = None
) -> OutboundPlan | Refused:
    """The live, active, outbound-enabled trunk owning the calling number.

    ``from_number_key`` may be digits or any dialled form (``+1 415…``); when None, the agent's
    oldest number is used. With ``agent_id``, the agent must be live, on ``sip-trunk`` and of the
    trunk's account (another account's number is reported as not found).
    """
    agent: AgentView | None = None
    if agent_id is not None:
        agent = snapshot.agents.get(agent_id)
        if agent is None:
            return Refused(OutboundRefusal.AGENT_NOT_FOUND)
        if agent.telephony_provider != SIP_TRUNK_PROVIDER:
            return Refused(OutboundRefusal.AGENT_NOT_SIP_TRUNK)
    number: NumberView | None = None
    if from_number_key is not None:
        digits = dialled_digits(from_number_key)
        number = snapshot.numbers_by_key.get(digits) if digits is not None else None
    elif agent_id is not None:
        owned = snapshot.numbers_by_agent.get(agent_id, ())
        number = owned[0] if owned else None
    trunk = snapshot.trunks.get(number.trunk_id) if number is not None else None
    if number is None or trunk is None or (agent is not None and not same_owner(trunk, agent)):
        return Refused(OutboundRefusal.NUMBER_NOT_FOUND)
    if not trunk.is_active:
        return Refused(OutboundRefusal.TRUNK_INACTIVE)
    if not trunk.outbound_enabled:
        return Refused(OutboundRefusal.OUTBOUND_DISABLED)
    if not trunk.gateways:
        return Refused(OutboundRefusal.NO_GATEWAY)
    return OutboundPlan(trunk, number, gateway_order(trunk.gateways))


def format_dialled(digits: str, leading_plus: bool) -> str:
    """Request-URI/To/From user: ``+digits`` iff the trunk's ``outbound_leading_plus_enabled``."""
    bare = digits.lstrip("+")
    return f"+{bare}" if leading_plus else bare


class FinalClass(StrEnum):
    ANSWERED = "answered"
    CARRIER_FAILURE = "carrier_failure"
    BUSY = "busy"
    NO_ANSWER = "no_answer"
    DECLINED = "declined"
    FAILED = "failed"


_BY_STATUS = {
    403: FinalClass.CARRIER_FAILURE,
    401: FinalClass.CARRIER_FAILURE,  # only ever final after the one answered challenge
    407: FinalClass.CARRIER_FAILURE,
    408: FinalClass.CARRIER_FAILURE,
    486: FinalClass.BUSY,
    600: FinalClass.BUSY,
    480: FinalClass.NO_ANSWER,
    487: FinalClass.NO_ANSWER,
    603: FinalClass.DECLINED,
    607: FinalClass.DECLINED,
    608: FinalClass.DECLINED,
}


def classify_final(status: int) -> FinalClass:
    """A final response's meaning: 2xx answered; 5xx, 403, 408 (and an unanswerable 401/407) the
    carrier failing; otherwise the callee's answer. Raises ValueError for a non-final status."""
    if not 200 <= status <= 699:
        raise ValueError("not a final SIP status")
    if status < 300:
        return FinalClass.ANSWERED
    if 500 <= status <= 599:
        return FinalClass.CARRIER_FAILURE
    return _BY_STATUS.get(status, FinalClass.FAILED)


# Carrier outcomes fed to ``DialAttempt.handle``.
@dataclass(frozen=True, slots=True)
class Response:
    status: int


@dataclass(frozen=True, slots=True)
class Timeout:
    """The INVITE client transaction timed out (Timer B) without a final response."""


@dataclass(frozen=True, slots=True)
class TransportFailure:
    """The gateway could not be reached (resolution or socket error)."""


DialOutcome = Response | Timeout | TransportFailure


# What the dialer does next.
@dataclass(frozen=True, slots=True)
class SendInvite:
    gateway: GatewayView
    attempt: int  # 0-based index into the plan's gateways


@dataclass(frozen=True, slots=True)
class AnswerChallenge:
    """Re-send the INVITE to the same gateway with digest credentials for this 401/407."""

    gateway: GatewayView
    status: int


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to send (a provisional response, or an input the machine ignores)."""


@dataclass(frozen=True, slots=True)
class Finish:
    result: FinalClass
    status: int | None  # the final response that decided it; None after timeouts/transport errors
    gateway: GatewayView | None


DialAction = SendInvite | AnswerChallenge | Wait | Finish
_WAIT = Wait()


class DialAttempt:
    """Gateway failover for one outbound call. ``start()`` then ``handle(outcome)`` per outcome;
    after ``Finish`` every input is ignored (``Wait``)."""

    __slots__ = (
        "_challenged",
        "_done",
        "_index",
        "_last_status",
        "crossed",
        "gateways",
        "has_credentials",
    )

    def __init__(self, gateways: tuple[GatewayView, ...], *, has_credentials: bool) -> None:
        self.gateways = gateways
        self.has_credentials = has_credentials
        self.crossed = False  # a response came from the carrier (trunk health)
        self._index = -1
        self._challenged = False
        self._done = False
        self._last_status: int | None = None

    @property
    def done(self) -> bool:
        return self._done

    def start(self) -> DialAction:
        if self._index >= 0 or self._done:
            return _WAIT
        return self._next_gateway()

    def handle(self, outcome: DialOutcome) -> DialAction:
        if self._done or self._index < 0:
            return _WAIT
        gateway = self.gateways[self._index]
        if not isinstance(outcome, Response):
            self._last_status = None
            return self._next_gateway()
        self.crossed = True
        status = outcome.status
        if status < 200:
            return _WAIT
        if status in (401, 407) and self.has_credentials and not self._challenged:
            self._challenged = True
            return AnswerChallenge(gateway, status)
        result = classify_final(status) if status <= 699 else FinalClass.CARRIER_FAILURE
        if result is FinalClass.CARRIER_FAILURE:
            self._last_status = status
            return self._next_gateway()
        self._done = True
        return Finish(result, status, gateway)

    def _next_gateway(self) -> DialAction:
        self._index += 1
        self._challenged = False
        if self._index >= len(self.gateways):
            self._done = True
            return Finish(FinalClass.CARRIER_FAILURE, self._last_status, None)
        return SendInvite(self.gateways[self._index], self._index)
