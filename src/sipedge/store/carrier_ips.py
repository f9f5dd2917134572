"""Carrier IPs: CIDR ranges accepted for inbound calls (already normalised by the API)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.errors import ConflictError
from sipedge.store.lookup import get_live_child, get_live_trunk, soft_delete_child
from sipedge.store.models import CarrierIp, Trunk
from sipedge.store.ownership import Principal
from sipedge.store.types import nth_stamp, utcnow

DUPLICATE_CIDR = "the trunk already lists this CIDR"


async def live_cidrs(session: AsyncSession, *, trunk_id: str) -> set[str]:
    """The trunk's live CIDRs (a friendly pre-check; the partial unique index decides races)."""
    rows = await session.scalars(
        select(CarrierIp.cidr).where(
            CarrierIp.trunk_id == trunk_id, CarrierIp.is_deleted.is_(False)
        )
    )
    return set(rows)


async def create_carrier_ips(
    session: AsyncSession, *, trunk: Trunk, cidrs: Sequence[str], now: datetime
) -> list[CarrierIp]:
    """Insert `cidrs` on `trunk`; the same CIDR twice on one trunk is 409 `conflict`."""
    existing = await live_cidrs(session, trunk_id=trunk.id)
    rows = []
    for offset, cidr in enumerate(cidrs):
        if cidr in existing:
            raise ConflictError("conflict", DUPLICATE_CIDR)
        existing.add(cidr)
        stamp = nth_stamp(now, offset)
        row = CarrierIp(trunk_id=trunk.id, cidr=cidr, created_at=stamp, updated_at=stamp)
        session.add(row)
        rows.append(row)
    await session.flush()
    return rows


async def add_carrier_ip(
    session: AsyncSession, *, owner: Principal, trunk_id: str, cidr: str
) -> CarrierIp:
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id)
    (row,) = await create_carrier_ips(session, trunk=trunk, cidrs=[cidr], now=utcnow())
    return row


async def remove_carrier_ip(
    session: AsyncSession, *, owner: Principal, trunk_id: str, ip_acl_id: str
) -> CarrierIp:
    row = await get_live_child(
        session, CarrierIp, owner=owner, trunk_id=trunk_id, child_id=ip_acl_id, label="carrier IP"
    )
    return await soft_delete_child(session, row)
