"""/trunk/trunks/{trunk_id}/ip-acls: add (normalised CIDR) and remove carrier IPs."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from sipedge.api.deps import PrincipalDep, ServicesDep, SessionDep
from sipedge.api.schemas.carrier_ips import CarrierIpIn, CarrierIpOut
from sipedge.api.schemas.common import ERROR_RESPONSES, Removed
from sipedge.store import carrier_ips as repo

router = APIRouter(prefix="/trunk/trunks", tags=["carrier IPs"], responses=ERROR_RESPONSES)


@router.post("/{trunk_id}/ip-acls", status_code=201, response_model=CarrierIpOut)
async def add_carrier_ip(
    trunk_id: uuid.UUID,
    body: CarrierIpIn,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> CarrierIpOut:
    row = await repo.add_carrier_ip(
        session, owner=principal, trunk_id=str(trunk_id), cidr=body.cidr
    )
    await services.commit(session, kind="carrier_ip.created", trunk_id=row.trunk_id)
    return CarrierIpOut.model_validate(row)


@router.delete("/{trunk_id}/ip-acls/{ip_acl_id}", response_model=Removed)
async def remove_carrier_ip(
    trunk_id: uuid.UUID,
    ip_acl_id: uuid.UUID,
    session: SessionDep,
    principal: PrincipalDep,
    services: ServicesDep,
) -> Removed:
    row = await repo.remove_carrier_ip(
        session, owner=principal, trunk_id=str(trunk_id), ip_acl_id=str(ip_acl_id)
    )
    await services.commit(session, kind="carrier_ip.deleted", trunk_id=row.trunk_id)
    return Removed(id=row.id, is_deleted=True)
