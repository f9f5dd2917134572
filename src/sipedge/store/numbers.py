"""Trunk numbers: a live E.164 number is unique across every trunk of every account."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.agents import get_visible_agent
from sipedge.store.errors import ConflictError, NotYoursError
from sipedge.store.lookup import get_live_child, get_live_trunk, soft_delete_child
from sipedge.store.models import Trunk, TrunkNumber
from sipedge.store.ownership import Principal
from sipedge.store.types import nth_stamp, utcnow

NUMBER_TAKEN = "number_taken"


@dataclass(frozen=True, slots=True)
class NumberSpec:
    """A validated number: `e164` with leading plus, `destination_key` its digits."""

    e164: str
    destination_key: str
    agent_id: str | None = None


async def resolve_agent_id(
    session: AsyncSession, *, owner: Principal, agent_id: str | None, field: str = "agent_id"
) -> str | None:
    """The canonical id of the caller's agent, None for None, else 400 (`NotYoursError`)."""
    if agent_id is None:
        return None
    agent = await get_visible_agent(session, owner=owner, agent_id=agent_id)
    if agent is None:
        raise NotYoursError(f"{field} is not one of your agents")
    return agent.id


async def any_live_number(session: AsyncSession, *, destination_keys: Sequence[str]) -> bool:
    """Whether any of these numbers is live on a trunk (of any account).

    A friendly pre-check: the partial unique index decides races (IntegrityError -> 409)."""
    taken = await session.scalars(
        select(TrunkNumber.id)
        .where(TrunkNumber.destination_key.in_(destination_keys), TrunkNumber.is_deleted.is_(False))
        .limit(1)
    )
    return taken.first() is not None


async def create_numbers(
    session: AsyncSession,
    *,
    owner: Principal,
    trunk: Trunk,
    specs: Sequence[NumberSpec],
    now: datetime,
) -> list[TrunkNumber]:
    keys = [s.destination_key for s in specs]
    if len(set(keys)) != len(keys):
        raise ConflictError(NUMBER_TAKEN, "the same number is listed twice")
    agent_ids = [
        await resolve_agent_id(session, owner=owner, agent_id=spec.agent_id) for spec in specs
    ]
    if await any_live_number(session, destination_keys=keys):
        raise ConflictError(NUMBER_TAKEN, "the number is already live on a trunk")
    rows = []
    for offset, (spec, agent_id) in enumerate(zip(specs, agent_ids, strict=True)):
        stamp = nth_stamp(now, offset)
        row = TrunkNumber(
            trunk_id=trunk.id,
            e164=spec.e164,
            destination_key=spec.destination_key,
            agent_id=agent_id,
            created_at=stamp,
            updated_at=stamp,
        )
        session.add(row)
        rows.append(row)
    await session.flush()
    return rows


async def add_number(
    session: AsyncSession, *, owner: Principal, trunk_id: str, spec: NumberSpec
) -> TrunkNumber:
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id)
    (row,) = await create_numbers(session, owner=owner, trunk=trunk, specs=[spec], now=utcnow())
    return row


async def _live_number(
    session: AsyncSession, *, owner: Principal, trunk_id: str, number_id: str
) -> TrunkNumber:
    return await get_live_child(
        session, TrunkNumber, owner=owner, trunk_id=trunk_id, child_id=number_id, label="number"
    )


async def assign_agent(
    session: AsyncSession,
    *,
    owner: Principal,
    trunk_id: str,
    number_id: str,
    agent_id: str | None,
) -> TrunkNumber:
    """Set the agent answering a number; None hands it back to the trunk's default agent."""
    row = await _live_number(session, owner=owner, trunk_id=trunk_id, number_id=number_id)
    row.agent_id = await resolve_agent_id(session, owner=owner, agent_id=agent_id)
    row.updated_at = utcnow()
    await session.flush()
    return row


async def remove_number(
    session: AsyncSession, *, owner: Principal, trunk_id: str, number_id: str
) -> TrunkNumber:
    row = await _live_number(session, owner=owner, trunk_id=trunk_id, number_id=number_id)
    return await soft_delete_child(session, row)
