"""`POST /call`, `GET /call/{run_id}`, `POST /call/{run_id}/hangup` (SPEC §5 Outbound).

The API never dials: it writes the call (`queued`, or `scheduled` outside the agent's calling
guardrails) and signals `call.queued`; the dialer of a SIP process claims and places it.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from sipedge.api.deps import PrincipalDep, ServicesDep, SessionDep
from sipedge.api.errors import ApiError
from sipedge.api.phone_numbers import normalise_e164
from sipedge.api.schemas.common import ERROR_RESPONSES
from sipedge.api.schemas.outbound import CallIn, CallQueued, OutboundCallOut
from sipedge.store import outbound_calls as repo
from sipedge.store.webhook_events import enqueue_outbound_status

router = APIRouter(prefix="/call", tags=["outbound calls"], responses=ERROR_RESPONSES)

CALL_QUEUED = "call.queued"
CALL_HANGUP = "call.hangup"


def _request(body: CallIn) -> repo.CallRequest:
    try:
        recipient, _ = normalise_e164(body.recipient_phone_number)
    except ValueError:
        raise ApiError(400, "recipient_phone_number is not a valid phone number") from None
    from_number = None
    if body.from_phone_number is not None:
        try:
            from_number, _ = normalise_e164(body.from_phone_number)
        except ValueError:
            raise ApiError(400, repo.NUMBER_NOT_FOUND) from None
    return repo.CallRequest(
        agent_id=body.agent_id,
        recipient=recipient,
        from_number=from_number,
        user_data=body.user_data,
    )


@router.post("", status_code=201, response_model=CallQueued, response_model_exclude_none=True)
async def place_call(
    body: CallIn, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> CallQueued:
    now = services.now()
    row = await repo.create_call(session, owner=principal, request=_request(body), now=now)
    await enqueue_outbound_status(session, run_id=row.id, now=now)  # queued/scheduled webhook
    await services.commit(session, kind=CALL_QUEUED, trunk_id=row.trunk_id, agent_id=row.agent_id)
    return CallQueued(run_id=row.id, status=row.status, scheduled_at=row.scheduled_at)


@router.get("/{run_id}", response_model=OutboundCallOut)
async def get_call(
    run_id: uuid.UUID, session: SessionDep, principal: PrincipalDep
) -> OutboundCallOut:
    row = await repo.get_call(session, owner=principal, run_id=str(run_id))
    return OutboundCallOut.model_validate(row)


@router.post("/{run_id}/hangup", response_model=OutboundCallOut)
async def hangup(
    run_id: uuid.UUID, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> OutboundCallOut:
    now = services.now()
    before = await repo.get_call(session, owner=principal, run_id=str(run_id))
    was = before.status
    row = await repo.request_hangup(session, owner=principal, run_id=str(run_id), now=now)
    if row.status == "canceled" and was != "canceled":  # cancelled here, before any dialer
        await enqueue_outbound_status(session, run_id=row.id, now=now)
    out = OutboundCallOut.model_validate(row)
    await services.commit(session, kind=CALL_HANGUP, trunk_id=row.trunk_id)
    return out
