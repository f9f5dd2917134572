"""/trunk/trunks/{trunk_id}/numbers: add, assign an agent, remove."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from sipedge.api.deps import PrincipalDep, ServicesDep, SessionDep
from sipedge.api.schemas.common import ERROR_RESPONSES, Removed
from sipedge.api.schemas.numbers import NumberAssign, NumberIn, NumberOut
from sipedge.store import numbers as repo

router = APIRouter(prefix="/trunk/trunks", tags=["numbers"], responses=ERROR_RESPONSES)


@router.post("/{trunk_id}/numbers", status_code=201, response_model=NumberOut)
async def add_number(
    trunk_id: uuid.UUID,
    body: NumberIn,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> NumberOut:
    row = await repo.add_number(session, owner=principal, trunk_id=str(trunk_id), spec=body.spec())
    await services.commit(session, kind="number.created", trunk_id=row.trunk_id)
    return NumberOut.model_validate(row)


@router.patch("/{trunk_id}/numbers/{number_id}", response_model=NumberOut)
async def assign_agent(
    trunk_id: uuid.UUID,
    number_id: uuid.UUID,
    body: NumberAssign,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> NumberOut:
    row = await repo.assign_agent(
        session,
        owner=principal,
        trunk_id=str(trunk_id),
        number_id=str(number_id),
        agent_id=body.agent_id,
    )
    await services.commit(session, kind="number.updated", trunk_id=row.trunk_id)
    return NumberOut.model_validate(row)


@router.delete("/{trunk_id}/numbers/{number_id}", response_model=Removed)
async def remove_number(
    trunk_id: uuid.UUID,
    number_id: uuid.UUID,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> Removed:
    row = await repo.remove_number(
        session, owner=principal, trunk_id=str(trunk_id), number_id=str(number_id)
    )
    await services.commit(session, kind="number.deleted", trunk_id=row.trunk_id)
    return Removed(id=row.id, is_deleted=True)
