"""Finding the caller's live trunk and its live gateways, carrier IPs and numbers."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.errors import NotFoundError
from sipedge.store.models import CarrierIp, Gateway, Trunk, TrunkNumber
from sipedge.store.ownership import Principal, visible_to
from sipedge.store.types import utcnow

Child = TypeVar("Child", Gateway, CarrierIp, TrunkNumber)


async def get_live_trunk(
    session: AsyncSession, *, owner: Principal, trunk_id: str, for_update: bool = False
) -> Trunk:
    """The caller's live trunk, else `NotFoundError` naming the id."""
    query = select(Trunk).where(Trunk.id == trunk_id, visible_to(Trunk, owner))
    if for_update:
        query = query.with_for_update()
    trunk = (await session.execute(query)).scalar_one_or_none()
    if trunk is None:
        raise NotFoundError(f"trunk {trunk_id} not found")
    return trunk


async def get_live_child(
    session: AsyncSession,
    model: type[Child],
    *,
    owner: Principal,
    trunk_id: str,
    child_id: str,
    label: str,
) -> Child:
    """A live gateway, carrier IP or number of the caller's live trunk, else `NotFoundError`
    naming the trunk or the `label`led id."""
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id)
    row = (
        await session.execute(
            select(model).where(
                model.id == child_id, model.trunk_id == trunk.id, model.is_deleted.is_(False)
            )
        )
    ).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"{label} {child_id} not found")
    return row


async def soft_delete_child(session: AsyncSession, row: Child) -> Child:
    now = utcnow()
    row.is_deleted, row.deleted_at, row.updated_at = True, now, now
    await session.flush()
    return row
