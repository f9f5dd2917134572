"""Finding the caller's live trunk, shared by every trunk repository."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.errors import NotFoundError
from sipedge.store.models import Trunk
from sipedge.store.ownership import Principal, visible_to


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
