"""The routing snapshot: an immutable in-memory view of trunks, ranges, numbers and agents.

The runtime's loader reads the store off the hot path, converts rows into the plain views below and
calls ``build_snapshot``; the result is swapped in whole (one reference assignment) and INVITEs only
ever read it. Nothing here touches the database, a socket or a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from sipedge.edge.carrier_acl import CarrierAcl, build_acl
from sipedge.edge.national import national_forms

__all__ = [
    "AgentView",
    "GatewayView",
    "NumberView",
    "RoutingSnapshot",
    "Transport",
    "TrunkView",
    "build_snapshot",
    "empty_snapshot",
    "gateway_order",
]

Transport = Literal["udp", "tcp"]
HealthName = Literal["waiting_for_carrier", "ready", "degraded"]


@dataclass(frozen=True, slots=True)
class GatewayView:
    id: str
    host: str
    port: int = 5060
    priority: int = 0
    resolved_ips: tuple[str, ...] = ()
    created_at: datetime | None = None  # ties in priority go in creation order (then input order)


@dataclass(frozen=True, slots=True)
class TrunkView:
    """What the edge needs of a trunk. Never the password: only whether credentials exist."""

    id: str
    organization_id: str | None = None
    sub_account_id: str | None = None
    user_id: str | None = None
    is_active: bool = True
    inbound_enabled: bool = True
    outbound_enabled: bool = True
    channels: int = 10
    transport: Transport = "udp"
    codecs: tuple[str, ...] = ("PCMU", "PCMA")
    outbound_leading_plus: bool = True
    default_inbound_agent_id: str | None = None
    has_credentials: bool = False
    gateways: tuple[GatewayView, ...] = ()
    cidrs: tuple[str, ...] = ()
    health: HealthName = "waiting_for_carrier"
    is_deleted: bool = False

    @property
    def admits_inbound(self) -> bool:
        return self.is_active and self.inbound_enabled and not self.is_deleted

    @property
    def places_outbound(self) -> bool:
        return self.is_active and self.outbound_enabled and not self.is_deleted


@dataclass(frozen=True, slots=True)
class NumberView:
    id: str
    trunk_id: str
    e164: str
    destination_key: str  # digits only, the unique key of a live number
    agent_id: str | None = None
    is_deleted: bool = False


@dataclass(frozen=True, slots=True)
class AgentView:
    id: str
    organization_id: str | None = None
    sub_account_id: str | None = None
    user_id: str | None = None
    agent_name: str = ""
    telephony_provider: str | None = None
    is_deleted: bool = False
    # Whether the agent has a webhook_url: without one an inbound call's statuses are not even
    # queued (no outbox query per call). Unknown (a view built without it) counts as yes.
    has_webhook: bool = True


@dataclass(frozen=True, slots=True)
class RoutingSnapshot:
    """Read-only after construction (mappings are ``MappingProxyType``)."""

    version: int
    trunks: Mapping[str, TrunkView]
    agents: Mapping[str, AgentView]
    numbers_by_key: Mapping[str, NumberView]
    numbers_by_national: Mapping[str, tuple[NumberView, ...]]
    numbers_by_agent: Mapping[str, tuple[NumberView, ...]]
    acl: CarrierAcl
    problems: tuple[str, ...] = field(default=())  # unreadable rows skipped, for the loader's log


def gateway_order(gateways: tuple[GatewayView, ...]) -> tuple[GatewayView, ...]:
    """Lower priority first; ties in creation order (equal keys keep the given order)."""
    return tuple(
        sorted(gateways, key=lambda g: (g.priority, g.created_at is None, g.created_at or 0))
    )


def build_snapshot(
    trunks: Iterable[TrunkView],
    numbers: Iterable[NumberView],
    agents: Iterable[AgentView],
    version: int,
) -> RoutingSnapshot:
    """Index live rows. Deleted trunks, numbers and agents are skipped (as are numbers of deleted
    trunks); the carrier ranges of inactive or inbound-disabled trunks are withdrawn from the ACL
    (an inbound trunk listing the same addresses still admits them)."""
    live_trunks: dict[str, TrunkView] = {}
    for trunk in trunks:
        if not trunk.is_deleted:
            live_trunks[trunk.id] = _with_sorted_gateways(trunk)
    live_agents = {a.id: a for a in agents if not a.is_deleted}

    by_key: dict[str, NumberView] = {}
    by_national: dict[str, list[NumberView]] = {}
    by_agent: dict[str, list[NumberView]] = {}
    problems: list[str] = []
    for number in numbers:
        if number.is_deleted or number.trunk_id not in live_trunks:
            continue
        key = number.destination_key
        if not key.isascii() or not key.isdigit():
            problems.append(f"number {number.id}: destination_key is not digits")
            continue
        if key in by_key:
            problems.append(f"number {number.id}: duplicate destination_key, ignored")
            continue
        by_key[key] = number
        for form in national_forms(key):
            by_national.setdefault(form, []).append(number)
        if number.agent_id is not None:
            by_agent.setdefault(number.agent_id, []).append(number)

    ranges = ((t.id, cidr) for t in live_trunks.values() if t.admits_inbound for cidr in t.cidrs)
    acl, bad = build_acl(ranges)
    problems.extend(f"carrier ip {cidr!r} not indexed" for cidr in bad)
    return RoutingSnapshot(
        version=version,
        trunks=MappingProxyType(live_trunks),
        agents=MappingProxyType(live_agents),
        numbers_by_key=MappingProxyType(by_key),
        numbers_by_national=MappingProxyType({k: tuple(v) for k, v in by_national.items()}),
        numbers_by_agent=MappingProxyType({k: tuple(v) for k, v in by_agent.items()}),
        acl=acl,
        problems=tuple(problems),
    )


def _with_sorted_gateways(trunk: TrunkView) -> TrunkView:
    ordered = gateway_order(trunk.gateways)
    if ordered == trunk.gateways:
        return trunk
    return replace(trunk, gateways=ordered)


def empty_snapshot() -> RoutingSnapshot:
    """Version 0, admits nobody: what the runtime holds before the first load succeeds."""
    return build_snapshot((), (), (), version=0)
