"""The inbound INVITE pipeline (SPEC §5 Inbound, steps 3-8), declared once as data.

``evaluate_invite`` runs ``STEPS`` in order; each step either lets the call through (returns None,
having recorded what it decided) or returns the ``Reject``/``Drop`` that ends it — the first one
wins. Nothing awaits, reads a clock or touches I/O: the input is a small value the runtime fills from
the parsed request, the snapshot in memory and the channel counter. A channel taken at step 7 is
released by the pipeline itself when a later step refuses the call (or a step raises), so a
rejection never leaks one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from sipedge.edge.agents import resolve_agent
from sipedge.edge.carrier_acl import (
    UnknownSourcePolicy,
    candidate_trunks,
    unknown_source_decision,
)
from sipedge.edge.channels import ChannelCounter, ChannelLease, channels_reject
from sipedge.edge.codecs import FilteredSdp, filter_sdp
from sipedge.edge.decisions import Accept, Drop, MetricReason, Reject
from sipedge.edge.numbers import dialled_candidates, match_number
from sipedge.edge.snapshot import AgentView, NumberView, RoutingSnapshot, Transport, TrunkView
from sipedge.edge.transport_policy import split_by_transport, transport_reject

__all__ = [
    "STEPS",
    "InboundDecision",
    "InboundInvite",
    "InboundRoute",
    "OptionsDecision",
    "crossed_trunks",
    "evaluate_invite",
    "evaluate_options",
]


@dataclass(frozen=True, slots=True)
class InboundInvite:
    """What the pipeline reads of an INVITE; the runtime fills it from the parsed request."""

    source_ip: str
    transport: Transport
    call_id: str  # the carrier leg's Call-ID: the channel lease is keyed by it
    request_uri_user: str | None
    request_uri_scheme: str = "sip"
    to_user: str | None = None
    sdp: bytes | None = None


@dataclass(frozen=True, slots=True)
class InboundRoute:
    """Everything the B2BUA needs to place the agent leg."""

    trunk: TrunkView
    number: NumberView
    agent: AgentView
    lease: ChannelLease
    sdp: bytes | None  # the offer filtered to the trunk's codecs; None for a late offer
    late_offer: bool  # True: apply ``codecs.filter_sdp`` to the SDP that arrives later
    dialled: str  # the digits that matched
    snapshot_version: int


InboundDecision = Accept[InboundRoute] | Reject | Drop
OptionsDecision = Accept[tuple[str, ...]] | Reject | Drop


class _Call:
    """Working state of one evaluation (private, lives for one call of ``evaluate_invite``)."""

    __slots__ = (
        "agent",
        "candidates",
        "counter",
        "dialled",
        "invite",
        "lease",
        "number",
        "sdp",
        "snapshot",
        "trunk",
        "unknown_source",
        "wrong_transport",
    )

    def __init__(
        self,
        invite: InboundInvite,
        snapshot: RoutingSnapshot,
        counter: ChannelCounter,
        unknown_source: UnknownSourcePolicy,
    ) -> None:
        self.invite = invite
        self.snapshot = snapshot
        self.counter = counter
        self.unknown_source: UnknownSourcePolicy = unknown_source
        self.candidates: tuple[TrunkView, ...] = ()
        self.wrong_transport: tuple[TrunkView, ...] = ()
        self.trunk: TrunkView | None = None
        self.number: NumberView | None = None
        self.dialled = ""
        self.agent: AgentView | None = None
        self.lease: ChannelLease | None = None  # set only when this evaluation took the channel
        self.sdp: FilteredSdp | None = None

    def reject(self, status: int, reason: str, metric: MetricReason) -> Reject:
        ids = tuple(t.id for t in self.candidates + self.wrong_transport)
        trunk_id = self.trunk.id if self.trunk is not None else (ids[0] if len(ids) == 1 else None)
        return Reject(
            status,
            reason,
            metric,
            trunk_ids=ids,
            trunk_id=trunk_id,
            number_id=self.number.id if self.number is not None else None,
            agent_id=self.agent.id if self.agent is not None else None,
        )


Outcome = Reject | Drop | None
Step = Callable[[_Call], Outcome]


def _carrier_acl(call: _Call) -> Outcome:
    """3. Source IP → live, active, inbound-enabled trunks listing it; none → drop or 403."""
    call.candidates = candidate_trunks(call.snapshot, call.invite.source_ip)
    return None if call.candidates else unknown_source_decision(call.unknown_source)


def _transport(call: _Call) -> Outcome:
    """4. The request must arrive on the trunk's transport; none left → 403."""
    allowed, refused = split_by_transport(call.candidates, call.invite.transport)
    call.candidates, call.wrong_transport = allowed, refused
    if allowed:
        return None
    return transport_reject(refused[0].transport, tuple(t.id for t in refused))


def _number(call: _Call) -> Outcome:
    """5. The dialled number among the candidates' numbers; its owner is the call's trunk → 404.

    A number that belongs to a candidate refused at step 4 gets that step's 403, which names the
    rule a carrier's engineer actually has to fix.
    """
    invite = call.invite
    dialled = dialled_candidates(invite.request_uri_user, invite.request_uri_scheme, invite.to_user)
    by_id = {t.id: t for t in call.candidates}
    for digits in dialled:
        number = match_number(call.snapshot, digits, by_id)
        if number is not None:
            call.number, call.trunk, call.dialled = number, by_id[number.trunk_id], digits
            return None
    if call.wrong_transport:
        refused = {t.id: t for t in call.wrong_transport}
        for digits in dialled:
            number = match_number(call.snapshot, digits, refused)
            if number is not None:
                trunk = refused[number.trunk_id]
                return replace(transport_reject(trunk.transport, (trunk.id,)), number_id=number.id)
    return call.reject(404, "number not found", MetricReason.NO_NUMBER)


def _agent(call: _Call) -> Outcome:
    """6. The number's agent, else the trunk's default; none (or deleted) → 480."""
    assert call.trunk is not None and call.number is not None
    call.agent = resolve_agent(call.snapshot, call.trunk, call.number)
    if call.agent is None:
        return call.reject(480, "no agent for number", MetricReason.NO_AGENT)
    return None


def _channels(call: _Call) -> Outcome:
    """7. Take one of the trunk's channels atomically; all in use → 486."""
    trunk = call.trunk
    assert trunk is not None and call.number is not None and call.agent is not None
    call_id = call.invite.call_id
    already_held = call.counter.holder(call_id) == trunk.id
    if not call.counter.try_acquire(trunk.id, trunk.channels, call_id):
        return channels_reject(trunk.id, number_id=call.number.id, agent_id=call.agent.id)
    if not already_held:
        call.lease = ChannelLease(trunk.id, call_id)
    return None


def _codecs(call: _Call) -> Outcome:
    """8. The offer restricted to the trunk's codecs in its order; none in common → 488."""
    assert call.trunk is not None
    result = filter_sdp(call.invite.sdp, call.trunk.codecs)
    if isinstance(result, Reject):
        return call.reject(result.status, result.reason, result.metric_reason)
    call.sdp = result
    return None


STEPS: tuple[tuple[str, Step], ...] = (
    ("carrier_acl", _carrier_acl),
    ("transport", _transport),
    ("number", _number),
    ("agent", _agent),
    ("channels", _channels),
    ("codecs", _codecs),
)


def evaluate_invite(
    invite: InboundInvite,
    snapshot: RoutingSnapshot,
    limiter: ChannelCounter,
    *,
    unknown_source: UnknownSourcePolicy = "drop",
) -> InboundDecision:
    """Run ``STEPS``; the first refusal wins, else ``Accept(InboundRoute)`` holding a channel."""
    call = _Call(invite, snapshot, limiter, unknown_source)
    try:
        for _name, step in STEPS:
            outcome = step(call)
            if outcome is not None:
                _give_back(call)
                return outcome
    except BaseException:
        _give_back(call)
        raise
    trunk, number, agent, sdp = call.trunk, call.number, call.agent, call.sdp
    assert trunk is not None and number is not None and agent is not None and sdp is not None
    lease = call.lease or ChannelLease(trunk.id, invite.call_id)
    return Accept(
        InboundRoute(
            trunk=trunk,
            number=number,
            agent=agent,
            lease=lease,
            sdp=sdp.body,
            late_offer=sdp.late_offer,
            dialled=call.dialled,
            snapshot_version=snapshot.version,
        )
    )


def _give_back(call: _Call) -> None:
    if call.lease is not None:
        call.counter.release(call.lease.call_id)
        call.lease = None


def evaluate_options(
    source_ip: str,
    snapshot: RoutingSnapshot,
    *,
    unknown_source: UnknownSourcePolicy = "drop",
) -> OptionsDecision:
    """OPTIONS (and any other out-of-dialog request) screened by step 3: from a carrier → Accept
    with the admitting trunk ids (answer 200 to OPTIONS); otherwise drop or 403."""
    trunk_ids = snapshot.acl.trunks_for(source_ip)
    if trunk_ids:
        return Accept(trunk_ids)
    return unknown_source_decision(unknown_source)


def crossed_trunks(decision: InboundDecision) -> tuple[str, ...]:
    """Trunks an INVITE crossed (it passed step 3): for health and the call record."""
    if isinstance(decision, Accept):
        return (decision.route.trunk.id,)
    if isinstance(decision, Reject):
        return (decision.trunk_id,) if decision.trunk_id is not None else decision.trunk_ids
    return ()
