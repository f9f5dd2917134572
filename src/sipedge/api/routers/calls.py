"""/trunk/trunks/{trunk_id}/calls: the trunk's call records, newest first."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from sipedge.api.deps import PrincipalDep, SessionDep
from sipedge.api.schemas.calls import CallRecordOut, CallRecordPage
from sipedge.api.schemas.common import ERROR_RESPONSES
from sipedge.store import call_records as repo

router = APIRouter(prefix="/trunk/trunks", tags=["calls"], responses=ERROR_RESPONSES)


@router.get("/{trunk_id}/calls", response_model=CallRecordPage)
async def list_calls(
    trunk_id: uuid.UUID,
    session: SessionDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=2_000_000_000)] = 0,
) -> CallRecordPage:
    rows, total = await repo.list_call_records(
        session, owner=principal, trunk_id=str(trunk_id), limit=limit, offset=offset
    )
    items = [CallRecordOut.model_validate(row) for row in rows]
    return CallRecordPage(items=items, total=total, limit=limit, offset=offset)
