"""/trunk/trunks/{trunk_id}/gateways: add (host resolved when saved) and remove."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from sipedge.api.deps import PrincipalDep, ServicesDep, SessionDep
from sipedge.api.gateway_specs import resolve_gateways
from sipedge.api.schemas.common import ERROR_RESPONSES, Removed
from sipedge.api.schemas.gateways import GatewayIn, GatewayOut
from sipedge.store import gateways as repo

router = APIRouter(prefix="/trunk/trunks", tags=["gateways"], responses=ERROR_RESPONSES)


@router.post("/{trunk_id}/gateways", status_code=201, response_model=GatewayOut)
async def add_gateway(
    trunk_id: uuid.UUID,
    body: GatewayIn,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> GatewayOut:
    (spec,) = await resolve_gateways(
        [body],
        resolver=services.resolver,
        allow_private=services.settings.security.allow_private_gateways,
    )
    row = await repo.add_gateway(session, owner=principal, trunk_id=str(trunk_id), spec=spec)
    await services.commit(session, kind="gateway.created", trunk_id=row.trunk_id)
    return GatewayOut.model_validate(row)


@router.delete("/{trunk_id}/gateways/{gateway_id}", response_model=Removed)
async def remove_gateway(
    trunk_id: uuid.UUID,
    gateway_id: uuid.UUID,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> Removed:
    row = await repo.remove_gateway(
        session, owner=principal, trunk_id=str(trunk_id), gateway_id=str(gateway_id)
    )
    await services.commit(session, kind="gateway.deleted", trunk_id=row.trunk_id)
    return Removed(id=row.id, is_deleted=True)
