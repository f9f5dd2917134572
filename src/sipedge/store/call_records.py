"""Call records of a trunk, for the listing endpoint (newest first)."""

from __future__ import annotations

from sqlalchemy import false, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.lookup import get_live_trunk
from sipedge.store.models import CallRecord
from sipedge.store.ownership import Principal


async def list_call_records(
    session: AsyncSession, *, owner: Principal, trunk_id: str, limit: int, offset: int
) -> tuple[list[CallRecord], int]:
    """One page of the calls of the caller's live trunk, newest first (`started_at` descending,
    then id), and the total count. `NotFoundError` naming the id when the trunk is not the
    caller's or is deleted."""
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id)
    where = (CallRecord.trunk_id == trunk.id, CallRecord.is_deleted == false())
    total = await session.scalar(select(func.count()).select_from(CallRecord).where(*where))
    page = await session.scalars(
        select(CallRecord)
        .where(*where)
        .order_by(CallRecord.started_at.desc(), CallRecord.id)
        .limit(limit)
        .offset(offset)
    )
    return list(page), int(total or 0)
