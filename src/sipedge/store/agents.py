"""Agents, as far as trunks need them (the agent API issue extends this module)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.models import Agent
from sipedge.store.ownership import Principal, visible_to


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


async def create_agent(
    session: AsyncSession,
    *,
    owner: Principal,
    agent_name: str,
    telephony_provider: str | None = None,
) -> Agent:
    agent = Agent(
        agent_name=agent_name, telephony_provider=telephony_provider, **owner.owner_columns()
    )
    session.add(agent)
    await session.flush()
    return agent


async def get_visible_agent(
    session: AsyncSession, *, owner: Principal, agent_id: str
) -> Agent | None:
    """The caller's live agent with this id, else None (a non-UUID id is never an agent)."""
    if not _is_uuid(agent_id):
        return None
    result = await session.execute(
        select(Agent).where(Agent.id == str(uuid.UUID(agent_id)), visible_to(Agent, owner))
    )
    return result.scalar_one_or_none()
