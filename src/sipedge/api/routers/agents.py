"""/v2/agent: create, get, list, PUT (replace), PATCH (seed rules 1-5), delete.

Every failure here is the seed's Agent error `{error, message}` (api/errors.py); bodies are
checked by api/agent_validation.py, so a bad body is HTTP 400, never 422.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from sipedge.api.agent_validation import parse_changes, parse_config
from sipedge.api.deps import PrincipalDep, ServicesDep, SessionDep
from sipedge.api.schemas.agents import (
    AgentCreated,
    AgentDeleted,
    AgentErrorBody,
    AgentOut,
    AgentPage,
    AgentPatched,
    AgentReplaced,
)
from sipedge.store import agents as repo

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": AgentErrorBody, "description": description}
    for status, description in (
        (400, "Invalid body (the seed's create errors and every other validation failure)"),
        (401, "Missing, invalid or revoked bearer token"),
        (404, "No live agent with this id for the caller"),
        (409, "Conflict with existing data"),
        (413, "Request body too large"),
        (429, "Too many requests for this token (see the Retry-After header)"),
        # Also keeps FastAPI from declaring its 422 body: validation failures are 400 here.
        ("4XX", "Any other client error"),
    )
}
_ERRORS[429]["headers"] = {
    "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}
}
router = APIRouter(prefix="/v2/agent", tags=["agents"], responses=_ERRORS)

AgentBody = Annotated[
    Any,
    Body(description="`{agent_config: {...}, agent_prompts: {task_1: {system_prompt}}}`"),
]
Limit = Annotated[int, Query(ge=1, le=200)]
Offset = Annotated[int, Query(ge=0, le=2_000_000_000)]


@router.post("", status_code=201, response_model=AgentCreated)
async def create_agent(
    body: AgentBody, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> AgentCreated:
    config = parse_config(
        body, allow_private_webhooks=services.settings.security.allow_private_webhooks
    )
    agent = await repo.create_agent_config(session, owner=principal, config=config)
    await services.commit(session, kind="agent.created", trunk_id=None, agent_id=agent.id)
    return AgentCreated(agent_id=agent.id)


async def _page(session: SessionDep, principal: PrincipalDep, limit: int, offset: int) -> AgentPage:
    agents, total = await repo.list_agents(session, owner=principal, limit=limit, offset=offset)
    items = [AgentOut.from_row(agent) for agent in agents]
    return AgentPage(items=items, total=total, limit=limit, offset=offset)


@router.get("", response_model=AgentPage)
async def list_agents(
    session: SessionDep, principal: PrincipalDep, limit: Limit = 50, offset: Offset = 0
) -> AgentPage:
    return await _page(session, principal, limit, offset)


@router.get("/all", response_model=AgentPage)
async def list_all_agents(
    session: SessionDep, principal: PrincipalDep, limit: Limit = 50, offset: Offset = 0
) -> AgentPage:
    return await _page(session, principal, limit, offset)


@router.get("/{agent_id}", response_model=AgentOut)
async def get_agent(agent_id: str, session: SessionDep, principal: PrincipalDep) -> AgentOut:
    agent = await repo.get_agent(session, owner=principal, agent_id=agent_id)
    return AgentOut.from_row(agent)


@router.put("/{agent_id}", response_model=AgentReplaced)
async def replace_agent(
    agent_id: str,
    body: AgentBody,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> AgentReplaced:
    await repo.get_agent(session, owner=principal, agent_id=agent_id)  # 404 before 400
    config = parse_config(
        body, allow_private_webhooks=services.settings.security.allow_private_webhooks
    )
    agent = await repo.replace_agent(session, owner=principal, agent_id=agent_id, config=config)
    await services.commit(session, kind="agent.updated", trunk_id=None, agent_id=agent.id)
    return AgentReplaced(agent_id=agent.id)


@router.patch("/{agent_id}", response_model=AgentPatched)
async def update_agent(
    agent_id: str,
    body: AgentBody,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> AgentPatched:
    await repo.get_agent(session, owner=principal, agent_id=agent_id)  # 404 before 400
    changes = parse_changes(
        body, allow_private_webhooks=services.settings.security.allow_private_webhooks
    )
    agent = await repo.update_agent(session, owner=principal, agent_id=agent_id, changes=changes)
    if changes.values:
        await services.commit(session, kind="agent.updated", trunk_id=None, agent_id=agent.id)
    return AgentPatched()


@router.delete("/{agent_id}", response_model=AgentDeleted)
async def delete_agent(
    agent_id: str, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> AgentDeleted:
    agent = await repo.delete_agent(session, owner=principal, agent_id=agent_id)
    await services.commit(session, kind="agent.deleted", trunk_id=None, agent_id=agent.id)
    return AgentDeleted(agent_id=agent.id)
