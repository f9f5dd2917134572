"""A trunk with its live children, loaded in a fixed number of queries for responses."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.models import CarrierIp, Gateway, Trunk, TrunkNumber


@dataclass(slots=True)
class TrunkView:
    trunk: Trunk
    gateways: list[Gateway] = field(default_factory=list)
    ip_acls: list[CarrierIp] = field(default_factory=list)
    numbers: list[TrunkNumber] = field(default_factory=list)


async def load_views(session: AsyncSession, *, trunks: Sequence[Trunk]) -> list[TrunkView]:
    """Attach live children to each trunk, in order: gateways by priority then creation,
    carrier IPs and numbers oldest first."""
    if not trunks:
        return []
    ids = [t.id for t in trunks]
    gateways: dict[str, list[Gateway]] = defaultdict(list)
    ips: dict[str, list[CarrierIp]] = defaultdict(list)
    numbers: dict[str, list[TrunkNumber]] = defaultdict(list)

    gw_query = select(Gateway).where(Gateway.trunk_id.in_(ids), Gateway.is_deleted.is_(False))
    ip_query = select(CarrierIp).where(CarrierIp.trunk_id.in_(ids), CarrierIp.is_deleted.is_(False))
    num_query = select(TrunkNumber).where(
        TrunkNumber.trunk_id.in_(ids), TrunkNumber.is_deleted.is_(False)
    )

    gw_rows = await session.scalars(
        gw_query.order_by(Gateway.priority, Gateway.created_at, Gateway.id)
    )
    for gateway in gw_rows:
        gateways[gateway.trunk_id].append(gateway)
    for ip in await session.scalars(ip_query.order_by(CarrierIp.created_at, CarrierIp.id)):
        ips[ip.trunk_id].append(ip)
    for number in await session.scalars(num_query.order_by(TrunkNumber.created_at, TrunkNumber.id)):
        numbers[number.trunk_id].append(number)
    return [TrunkView(t, gateways[t.id], ips[t.id], numbers[t.id]) for t in trunks]
