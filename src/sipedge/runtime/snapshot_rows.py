"""The rows a routing snapshot is built from, read in one transaction and turned into views.

Only the columns the edge needs are selected (never a trunk password: only whether credentials
exist); rows of deleted trunks, gateways, carrier IPs, numbers and agents are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, false, select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.edge.snapshot import (
    AgentView,
    GatewayView,
    HealthName,
    NumberView,
    Transport,
    TrunkView,
)
from sipedge.store.models import Agent, CarrierIp, Gateway, Trunk, TrunkNumber

__all__ = ["RoutingRows", "read_routing_rows"]

_HEALTH_NAMES: dict[str, HealthName] = {
    "waiting_for_carrier": "waiting_for_carrier",
    "ready": "ready",
    "degraded": "degraded",
}
_TRANSPORTS: dict[str, Transport] = {"udp": "udp", "tcp": "tcp"}


@dataclass(slots=True)
class RoutingRows:
    trunks: list[TrunkView] = field(default_factory=list)
    numbers: list[NumberView] = field(default_factory=list)
    agents: list[AgentView] = field(default_factory=list)
    seeding: dict[str, int] = field(default_factory=dict)  # agent id -> config_version


async def read_routing_rows(session: AsyncSession) -> RoutingRows:
    """Every live row the snapshot needs. Run it inside one transaction (`session.begin()`)."""
    bind = session.bind
    if bind is not None and bind.dialect.name == "postgresql":
        # One consistent view of every table for the whole read.
        await session.connection(
            execution_options={"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
        )
    rows = RoutingRows()
    gateways = await _gateways(session)
    cidrs = await _cidrs(session)
    for row in await session.execute(_TRUNKS):
        rows.trunks.append(_trunk_view(row, gateways.get(row.id, ()), cidrs.get(row.id, ())))
    for number in await session.execute(_NUMBERS):
        rows.numbers.append(
            NumberView(
                id=number.id,
                trunk_id=number.trunk_id,
                e164=number.e164,
                destination_key=number.destination_key,
                agent_id=number.agent_id,
            )
        )
    for agent in await session.execute(_AGENTS):
        rows.agents.append(
            AgentView(
                id=agent.id,
                organization_id=agent.organization_id,
                sub_account_id=agent.sub_account_id,
                user_id=agent.user_id,
                agent_name=agent.agent_name,
                telephony_provider=agent.telephony_provider,
                has_webhook=bool(agent.webhook_url),
            )
        )
        if agent.agent_status == "seeding":
            rows.seeding[agent.id] = agent.config_version
    return rows


_LIVE_TRUNK = Trunk.is_deleted == false()
_TRUNKS = select(
    Trunk.id,
    Trunk.organization_id,
    Trunk.sub_account_id,
    Trunk.user_id,
    Trunk.is_active,
    Trunk.inbound_enabled,
    Trunk.outbound_enabled,
    Trunk.channels,
    Trunk.transport,
    Trunk.codecs,
    Trunk.outbound_leading_plus_enabled,
    Trunk.default_inbound_agent_id,
    # Only whether credentials exist: the password never leaves the database here.
    and_(Trunk.auth_username.is_not(None), Trunk.auth_password.is_not(None)).label(
        "has_credentials"
    ),
    Trunk.health_state,
).where(_LIVE_TRUNK)
_NUMBERS = (
    select(
        TrunkNumber.id,
        TrunkNumber.trunk_id,
        TrunkNumber.e164,
        TrunkNumber.destination_key,
        TrunkNumber.agent_id,
    )
    .join(Trunk, Trunk.id == TrunkNumber.trunk_id)
    .where(TrunkNumber.is_deleted == false(), _LIVE_TRUNK)
    .order_by(TrunkNumber.created_at, TrunkNumber.id)
)
_AGENTS = select(
    Agent.id,
    Agent.organization_id,
    Agent.sub_account_id,
    Agent.user_id,
    Agent.agent_name,
    Agent.telephony_provider,
    Agent.webhook_url,
    Agent.agent_status,
    Agent.config_version,
).where(Agent.is_deleted == false())


async def _gateways(session: AsyncSession) -> dict[str, tuple[GatewayView, ...]]:
    query = (
        select(
            Gateway.id,
            Gateway.trunk_id,
            Gateway.host,
            Gateway.port,
            Gateway.priority,
            Gateway.resolved_ips,
            Gateway.created_at,
        )
        .join(Trunk, Trunk.id == Gateway.trunk_id)
        .where(Gateway.is_deleted == false(), _LIVE_TRUNK)
        .order_by(Gateway.priority, Gateway.created_at, Gateway.id)
    )
    by_trunk: dict[str, list[GatewayView]] = {}
    for row in await session.execute(query):
        view = GatewayView(
            id=row.id,
            host=row.host,
            port=row.port,
            priority=row.priority,
            resolved_ips=tuple(row.resolved_ips or ()),
            created_at=row.created_at,
        )
        by_trunk.setdefault(row.trunk_id, []).append(view)
    return {trunk_id: tuple(views) for trunk_id, views in by_trunk.items()}


async def _cidrs(session: AsyncSession) -> dict[str, tuple[str, ...]]:
    query = (
        select(CarrierIp.trunk_id, CarrierIp.cidr)
        .join(Trunk, Trunk.id == CarrierIp.trunk_id)
        .where(CarrierIp.is_deleted == false(), _LIVE_TRUNK)
        .order_by(CarrierIp.created_at, CarrierIp.id)
    )
    by_trunk: dict[str, list[str]] = {}
    for row in await session.execute(query):
        by_trunk.setdefault(row.trunk_id, []).append(row.cidr)
    return {trunk_id: tuple(cidrs) for trunk_id, cidrs in by_trunk.items()}


def _trunk_view(row: Any, gateways: tuple[GatewayView, ...], cidrs: tuple[str, ...]) -> TrunkView:
    transport = _TRANSPORTS.get(row.transport, "udp")
    health = _HEALTH_NAMES.get(row.health_state, "waiting_for_carrier")
    return TrunkView(
        id=row.id,
        organization_id=row.organization_id,
        sub_account_id=row.sub_account_id,
        user_id=row.user_id,
        is_active=bool(row.is_active),
        inbound_enabled=bool(row.inbound_enabled),
        outbound_enabled=bool(row.outbound_enabled),
        channels=int(row.channels),
        transport=transport,
        codecs=tuple(c.strip() for c in row.codecs.split(",") if c.strip()),
        outbound_leading_plus=bool(row.outbound_leading_plus_enabled),
        default_inbound_agent_id=row.default_inbound_agent_id,
        has_credentials=bool(row.has_credentials),
        gateways=gateways,
        cidrs=cidrs,
        health=health,
    )
