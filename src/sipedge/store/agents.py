"""Agent repository: create, get, list, replace (PUT), patch, soft delete, status.

Functions flush but never commit: the API commits once per request and then notifies. Every
write bumps `config_version` and sets `agent_status` back to `seeding`; the SIP runtime's snapshot
loader calls `mark_agents_processed` with the versions its routing snapshot holds.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import and_, false, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.agent_config import (
    AgentChanges,
    AgentConfig,
    CallingGuardrails,
    keep_stored_secret,
    with_audio_format,
    with_synthesizer,
)
from sipedge.store.errors import NotFoundError, RejectedError
from sipedge.store.models import Agent
from sipedge.store.ownership import Principal, visible_to
from sipedge.store.types import utcnow

_PROMPT_KEY = re.compile(r"^task_([1-9][0-9]{0,3})$")
_MARK_CHUNK = 400  # (id, version) pairs per UPDATE: well inside both databases' parameter limits


def canonical_uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


async def get_visible_agent(
    session: AsyncSession, *, owner: Principal, agent_id: str, for_update: bool = False
) -> Agent | None:
    """The caller's live agent with this id, else None (a non-UUID id is never an agent)."""
    canonical = canonical_uuid(agent_id)
    if canonical is None:
        return None
    query = select(Agent).where(Agent.id == canonical, visible_to(Agent, owner))
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def get_agent(
    session: AsyncSession, *, owner: Principal, agent_id: str, for_update: bool = False
) -> Agent:
    """The caller's live agent, else `NotFoundError` naming the id (when it is a UUID)."""
    agent = await get_visible_agent(session, owner=owner, agent_id=agent_id, for_update=for_update)
    if agent is None:
        canonical = canonical_uuid(agent_id)
        raise NotFoundError(f"agent {canonical} not found" if canonical else "agent not found")
    return agent


def _check_prompt_keys(prompts: Mapping[str, Any], task_count: int) -> None:
    for key in prompts:
        match = _PROMPT_KEY.match(key)
        if match is None:
            raise RejectedError("agent_prompts keys must be task_<n> (task_1, task_2, ...)")
        if int(match.group(1)) > task_count:
            raise RejectedError("agent_prompts has a prompt for a task that does not exist")


def _guardrail_columns(guardrails: CallingGuardrails | None) -> dict[str, int | None]:
    if guardrails is None:
        return {"call_start_hour": None, "call_end_hour": None}
    return {
        "call_start_hour": guardrails.call_start_hour,
        "call_end_hour": guardrails.call_end_hour,
    }


def _config_columns(config: AgentConfig, *, stored_source: dict[str, Any] | None) -> dict[str, Any]:
    _check_prompt_keys(config.agent_prompts, len(config.tasks))
    return {
        "agent_name": config.agent_name,
        "agent_welcome_message": config.agent_welcome_message,
        "webhook_url": config.webhook_url,
        "agent_type": config.agent_type,
        "telephony_provider": config.telephony_provider,
        "call_summary_enabled": config.call_summary_enabled,
        **_guardrail_columns(config.calling_guardrails),
        "tasks": copy.deepcopy(config.tasks),
        "agent_prompts": copy.deepcopy(config.agent_prompts),
        "ingest_source_config": keep_stored_secret(
            copy.deepcopy(config.ingest_source_config), stored_source
        ),
        "synthesizer": copy.deepcopy(config.synthesizer),
    }


async def create_agent_config(
    session: AsyncSession, *, owner: Principal, config: AgentConfig
) -> Agent:
    """Create an agent owned like `owner` (SPEC §3), status `seeding`, version 1."""
    now = utcnow()
    agent = Agent(
        **_config_columns(config, stored_source=None),
        **owner.owner_columns(),
        agent_status="seeding",
        config_version=1,
        created_at=now,
        updated_at=now,
    )
    session.add(agent)
    await session.flush()
    return agent


async def create_agent(
    session: AsyncSession,
    *,
    owner: Principal,
    agent_name: str,
    telephony_provider: str | None = None,
) -> Agent:
    """A bare agent (no tasks yet): for tests and tools that only need something to route to."""
    config = AgentConfig(
        agent_name=agent_name,
        agent_welcome_message="",
        webhook_url=None,
        tasks=[],
        telephony_provider=telephony_provider,
    )
    return await create_agent_config(session, owner=owner, config=config)


async def list_agents(
    session: AsyncSession, *, owner: Principal, limit: int, offset: int
) -> tuple[list[Agent], int]:
    """One page of the caller's live agents, oldest first, and the total count."""
    total = await session.scalar(
        select(func.count()).select_from(Agent).where(visible_to(Agent, owner))
    )
    page = await session.scalars(
        select(Agent)
        .where(visible_to(Agent, owner))
        .order_by(Agent.created_at, Agent.id)
        .limit(limit)
        .offset(offset)
    )
    return list(page), int(total or 0)


def _touch(agent: Agent) -> None:
    agent.config_version += 1
    agent.agent_status = "seeding"
    agent.updated_at = utcnow()


async def replace_agent(
    session: AsyncSession, *, owner: Principal, agent_id: str, config: AgentConfig
) -> Agent:
    """PUT: the whole configuration is replaced (a masked token keeps the stored one)."""
    agent = await get_agent(session, owner=owner, agent_id=agent_id, for_update=True)
    for key, value in _config_columns(config, stored_source=agent.ingest_source_config).items():
        setattr(agent, key, value)
    _touch(agent)
    await session.flush()
    return agent


async def update_agent(
    session: AsyncSession, *, owner: Principal, agent_id: str, changes: AgentChanges
) -> Agent:
    """PATCH (seed rules 1-5): only the given attributes change. Returns the agent; nothing is
    written (and the version stays) when `changes` is empty."""
    agent = await get_agent(session, owner=owner, agent_id=agent_id, for_update=True)
    values = dict(changes.values)
    if not values:
        return agent
    tasks = agent.tasks
    if "telephony_provider" in values:
        agent.telephony_provider = values.pop("telephony_provider")
        tasks = with_audio_format(tasks, agent.telephony_provider or "default")
    if "synthesizer" in values:
        agent.synthesizer = copy.deepcopy(values.pop("synthesizer"))
        tasks = with_synthesizer(tasks, agent.synthesizer or {})
    if tasks is not agent.tasks:
        agent.tasks = tasks
    if "calling_guardrails" in values:
        for key, hour in _guardrail_columns(values.pop("calling_guardrails")).items():
            setattr(agent, key, hour)
    if "ingest_source_config" in values:
        agent.ingest_source_config = keep_stored_secret(
            copy.deepcopy(values.pop("ingest_source_config")), agent.ingest_source_config
        )
    if "agent_prompts" in values:
        prompts = values.pop("agent_prompts")
        _check_prompt_keys(prompts, len(agent.tasks))
        agent.agent_prompts = {**agent.agent_prompts, **copy.deepcopy(prompts)}
    for key, value in values.items():  # agent_name, welcome message, webhook_url, summary flag
        setattr(agent, key, value)
    _touch(agent)
    await session.flush()
    return agent


async def delete_agent(session: AsyncSession, *, owner: Principal, agent_id: str) -> Agent:
    """Soft delete. Trunks and numbers keep pointing at it: their inbound calls get 480."""
    agent = await get_agent(session, owner=owner, agent_id=agent_id, for_update=True)
    now = utcnow()
    agent.is_deleted, agent.deleted_at, agent.updated_at = True, now, now
    await session.flush()
    return agent


async def mark_agents_processed(session: AsyncSession, *, versions: Mapping[str, int]) -> int:
    """Record that the SIP edge's routing snapshot now holds these agents' configurations.

    `versions` maps agent ids to the `config_version` the snapshot was built from. An agent turns
    `processed` only if it is live, still `seeding` and still at that version: a write committed
    after the loader read the row keeps it `seeding` until the next snapshot. Returns how many
    agents changed; the caller commits.
    """
    pairs = [(agent_id, version) for agent_id, version in versions.items()]
    changed = 0
    for start in range(0, len(pairs), _MARK_CHUNK):
        chunk = pairs[start : start + _MARK_CHUNK]
        result = await session.execute(
            update(Agent)
            .where(
                and_(
                    Agent.agent_status == "seeding",
                    Agent.is_deleted == false(),
                    tuple_(Agent.id, Agent.config_version).in_(chunk),
                )
            )
            .values(agent_status="processed")
            .execution_options(synchronize_session=False)
        )
        changed += int(getattr(result, "rowcount", 0) or 0)
    return changed
