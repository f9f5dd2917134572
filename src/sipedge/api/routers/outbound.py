"""`POST /call`, `GET /call/{run_id}`, `POST /call/{run_id}/hangup` (SPEC §5 Outbound).

The API never dials: it writes the call (`queued`, or `scheduled` outside the agent's calling
guardrails) and signals `call.queued`; the dialer of a SIP process claims and places it.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import Response

from sipedge.api.deps import PrincipalDep, ServicesDep, SessionDep, services_of
from sipedge.api.errors import ApiError
from sipedge.api.phone_numbers import normalise_e164
from sipedge.api.schemas.common import ERROR_RESPONSES
from sipedge.api.schemas.outbound import CallIn, CallQueued, OutboundCallOut
from sipedge.store import outbound_calls as repo
from sipedge.store.webhook_events import enqueue_new_outbound_call, enqueue_outbound_status

router = APIRouter(prefix="/call", tags=["outbound calls"], responses=ERROR_RESPONSES)

CALL_QUEUED = "call.queued"
CALL_HANGUP = "call.hangup"
JSON = "application/json"


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


# The two hot endpoints (the platform places and polls calls at high rates) take the request and
# open a plain connection themselves: every dependency FastAPI resolves per request costs CPU,
# the session dependency's generator most of all, and their Core statements need none of the
# ORM session's bookkeeping. They also serialise their answer themselves (FastAPI would
# validate the returned model against `response_model` once more).


@router.post("", status_code=201, response_model=CallQueued, response_model_exclude_none=True)
async def place_call(body: CallIn, request: Request, principal: PrincipalDep) -> Response:
    services = services_of(request)
    now = services.now()
    call_request = _request(body)
    async with services.engine.connect() as connection:
        call = await repo.create_call(connection, owner=principal, request=call_request, now=now)
        await enqueue_new_outbound_call(connection, call=call, now=now)  # its status webhook
        await services.commit(
            connection, kind=CALL_QUEUED, trunk_id=call.trunk_id, agent_id=call.agent_id
        )
    out = CallQueued(run_id=call.id, status=call.status, scheduled_at=call.scheduled_at)
    return Response(out.model_dump_json(exclude_none=True), 201, media_type=JSON)


@router.get("/{run_id}", response_model=OutboundCallOut)
async def get_call(run_id: uuid.UUID, request: Request, principal: PrincipalDep) -> Response:
    async with services_of(request).engine.connect() as connection:
        row = await repo.get_call_view(connection, owner=principal, run_id=str(run_id))
    out = OutboundCallOut.model_validate(dict(row))
    return Response(out.model_dump_json(by_alias=True), media_type=JSON)


@router.post("/{run_id}/hangup", response_model=OutboundCallOut)
async def hangup(
    run_id: uuid.UUID, session: SessionDep, principal: PrincipalDep, services: ServicesDep
) -> OutboundCallOut:
    now = services.now()
    row, canceled = await repo.request_hangup(session, owner=principal, run_id=str(run_id), now=now)
    if canceled:  # cancelled here, before any dialer: its `canceled` webhook
        await enqueue_outbound_status(session, run_id=row.id, now=now)
    out = OutboundCallOut.model_validate(row)
    await services.commit(session, kind=CALL_HANGUP, trunk_id=row.trunk_id)
    return out
