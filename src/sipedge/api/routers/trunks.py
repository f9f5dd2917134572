"""/trunk/trunks: create, list, get, PATCH, delete."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from sipedge.api.deps import PrincipalDep, ServicesDep, SessionDep
from sipedge.api.gateway_specs import resolve_gateways
from sipedge.api.schemas.common import ERROR_RESPONSES
from sipedge.api.schemas.trunks import TrunkCreate, TrunkOut, TrunkPage, TrunkPatch
from sipedge.store import trunks as repo

router = APIRouter(prefix="/trunk/trunks", tags=["trunks"], responses=ERROR_RESPONSES)


@router.post("", status_code=201, response_model=TrunkOut)
async def create_trunk(
    body: TrunkCreate, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> TrunkOut:
    gateways = await resolve_gateways(
        body.gateways,
        resolver=services.resolver,
        allow_private=services.settings.security.allow_private_gateways,
        loc=("body", "gateways"),
        indexed=True,
    )
    view = await repo.create_trunk(
        session,
        owner=principal,
        fields=body.scalar_fields(only_sent=False),
        gateways=gateways,
        ip_acls=[ip.cidr for ip in body.ip_acls],
        numbers=[number.spec() for number in body.numbers],
    )
    await services.commit(session, kind="trunk.created", trunk_id=view.trunk.id)
    return TrunkOut.from_view(view, active_calls=services.active_calls)


@router.get("", response_model=TrunkPage)
async def list_trunks(
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=2_000_000_000)] = 0,
) -> TrunkPage:
    views, total = await repo.list_trunks(session, owner=principal, limit=limit, offset=offset)
    items = [TrunkOut.from_view(v, active_calls=services.active_calls) for v in views]
    return TrunkPage(items=items, total=total, limit=limit, offset=offset)


@router.get("/{trunk_id}", response_model=TrunkOut)
async def get_trunk(
    trunk_id: uuid.UUID, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> TrunkOut:
    view = await repo.get_trunk(session, owner=principal, trunk_id=str(trunk_id))
    return TrunkOut.from_view(view, active_calls=services.active_calls)


@router.patch("/{trunk_id}", response_model=TrunkOut)
async def update_trunk(
    trunk_id: uuid.UUID,
    body: TrunkPatch,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> TrunkOut:
    view = await repo.update_trunk(
        session,
        owner=principal,
        trunk_id=str(trunk_id),
        changes=body.scalar_fields(only_sent=True),
    )
    await services.commit(session, kind="trunk.updated", trunk_id=view.trunk.id)
    return TrunkOut.from_view(view, active_calls=services.active_calls)


@router.delete("/{trunk_id}", response_model=TrunkOut)
async def delete_trunk(
    trunk_id: uuid.UUID, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> TrunkOut:
    view = await repo.delete_trunk(session, owner=principal, trunk_id=str(trunk_id))
    await services.commit(session, kind="trunk.deleted", trunk_id=view.trunk.id)
    return TrunkOut.from_view(view, active_calls=services.active_calls)
