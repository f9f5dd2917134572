"""Outbound calls (`POST /call`): the API's checks and writes, and the dialer's claims and updates.

The API side writes a `queued` (or `scheduled`) row; the dialer of a SIP process claims due rows
with a compare-and-set on `claimed_at` (one UPDATE ... WHERE claimed_at IS NULL per row, so two
dialers never place the same call), then reports each status change. Trunk passwords are read
only by `trunk_credentials`, at dial time, and never leave the dialer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import CursorResult, and_, false, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.agents import get_visible_agent
from sipedge.store.errors import NotFoundError, RejectedError
from sipedge.store.guardrails import next_allowed_start, recipient_timezone
from sipedge.store.models import (
    OUTBOUND_FINAL_STATUSES,
    Gateway,
    OutboundCall,
    Trunk,
    TrunkNumber,
)
from sipedge.store.ownership import Principal, visible_to

__all__ = [
    "CallRequest",
    "claim_due_calls",
    "create_call",
    "get_call",
    "hangups_requested",
    "next_scheduled_at",
    "request_hangup",
    "trunk_credentials",
    "update_call",
]

_CANCELABLE = ("queued", "scheduled")
SIP_TRUNK_PROVIDER = "sip-trunk"

# `POST /call` refusals (HTTP 400); the same texts as `edge.outbound.Refused` (a test keeps them
# equal: the store may not import the edge layer).
AGENT_NOT_FOUND = "agent not found"
AGENT_NOT_SIP_TRUNK = "agent does not use telephony_provider sip-trunk"
NUMBER_NOT_FOUND = "from_phone_number is not a number of a live trunk"
TRUNK_INACTIVE = "trunk is not active"
OUTBOUND_DISABLED = "trunk has outbound calls disabled"
NO_GATEWAY = "trunk has no gateway"
REFUSALS = {
    "agent_not_found": AGENT_NOT_FOUND,
    "agent_not_sip_trunk": AGENT_NOT_SIP_TRUNK,
    "number_not_found": NUMBER_NOT_FOUND,
    "trunk_inactive": TRUNK_INACTIVE,
    "outbound_disabled": OUTBOUND_DISABLED,
    "no_gateway": NO_GATEWAY,
}


@dataclass(frozen=True, slots=True)
class CallRequest:
    """A validated `POST /call` body: numbers in E.164 with the leading `+`."""

    agent_id: str
    recipient: str
    from_number: str | None = None
    user_data: dict[str, Any] | None = None


def _refuse(message: str) -> RejectedError:
    return RejectedError(message)


async def _calling_number(
    session: AsyncSession, *, owner: Principal, agent_id: str, from_number: str | None
) -> tuple[TrunkNumber, Trunk]:
    """The live number (and its trunk, visible to the caller) the call goes out from."""
    query = (
        select(TrunkNumber, Trunk)
        .join(Trunk, Trunk.id == TrunkNumber.trunk_id)
        .where(TrunkNumber.is_deleted == false(), visible_to(Trunk, owner))
    )
    if from_number is not None:
        query = query.where(TrunkNumber.destination_key == from_number.lstrip("+"))
    else:
        query = query.where(TrunkNumber.agent_id == agent_id)
    query = query.order_by(TrunkNumber.created_at, TrunkNumber.id).limit(1)
    row = (await session.execute(query)).first()
    if row is None:
        raise _refuse(NUMBER_NOT_FOUND)
    number, trunk = row
    return number, trunk


async def create_call(
    session: AsyncSession, *, owner: Principal, request: CallRequest, now: datetime
) -> OutboundCall:
    """Check a `POST /call` (SPEC §5; every refusal is `RejectedError`, HTTP 400) and add the
    row: `queued`, or `scheduled` at the next allowed start outside the agent's guardrails."""
    agent = await get_visible_agent(session, owner=owner, agent_id=request.agent_id)
    if agent is None:
        raise _refuse(AGENT_NOT_FOUND)
    if agent.telephony_provider != SIP_TRUNK_PROVIDER:
        raise _refuse(AGENT_NOT_SIP_TRUNK)
    number, trunk = await _calling_number(
        session, owner=owner, agent_id=agent.id, from_number=request.from_number
    )
    if not trunk.is_active:
        raise _refuse(TRUNK_INACTIVE)
    if not trunk.outbound_enabled:
        raise _refuse(OUTBOUND_DISABLED)
    gateways = await session.scalar(
        select(func.count())
        .select_from(Gateway)
        .where(Gateway.trunk_id == trunk.id, Gateway.is_deleted == false())
    )
    if not gateways:
        raise _refuse(NO_GATEWAY)
    scheduled_at = next_allowed_start(
        now, recipient_timezone(request.recipient), agent.call_start_hour, agent.call_end_hour
    )
    row = OutboundCall(
        **owner.owner_columns(),
        agent_id=agent.id,
        trunk_id=trunk.id,
        number_id=number.id,
        from_number=number.e164,
        to_number=request.recipient,
        user_data=request.user_data,
        status="queued" if scheduled_at is None else "scheduled",
        scheduled_at=scheduled_at,
        hangup_requested=False,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def get_call(session: AsyncSession, *, owner: Principal, run_id: str) -> OutboundCall:
    """The caller's outbound call, else `NotFoundError` naming the id."""
    row = (
        await session.execute(
            select(OutboundCall).where(OutboundCall.id == run_id, visible_to(OutboundCall, owner))
        )
    ).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"call {run_id} not found")
    return row


async def request_hangup(
    session: AsyncSession, *, owner: Principal, run_id: str, now: datetime
) -> OutboundCall:
    """End or cancel the call: one not yet with a dialer becomes `canceled` here; one a dialer
    holds gets `hangup_requested` (the dialer CANCELs or BYEs it). An ended call is unchanged."""
    row = await get_call(session, owner=owner, run_id=run_id)
    canceled: CursorResult[Any] = await session.execute(  # type: ignore[assignment]
        update(OutboundCall)
        .where(
            OutboundCall.id == row.id,
            OutboundCall.status.in_(_CANCELABLE),
            OutboundCall.claimed_at.is_(None),
        )
        .values(status="canceled", reason="canceled", ended_at=now, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    if canceled.rowcount == 0 and row.status not in OUTBOUND_FINAL_STATUSES:
        await session.execute(
            update(OutboundCall)
            .where(OutboundCall.id == row.id)
            .values(hangup_requested=True, updated_at=now)
            .execution_options(synchronize_session=False)
        )
    await session.flush()
    await session.refresh(row)
    return row


# --- the dialer's side ---------------------------------------------------------------------------


def _due(now: datetime) -> Any:
    return and_(
        OutboundCall.is_deleted == false(),
        OutboundCall.claimed_at.is_(None),
        or_(
            OutboundCall.status == "queued",
            and_(OutboundCall.status == "scheduled", OutboundCall.scheduled_at <= now),
        ),
    )


async def claim_due_calls(
    session: AsyncSession, *, now: datetime, limit: int = 100
) -> list[OutboundCall]:
    """Queued calls and scheduled ones whose time has come, claimed for this dialer (each by a
    compare-and-set, so another dialer's claim wins cleanly); the caller commits."""
    candidates = list(
        await session.scalars(
            select(OutboundCall.id).where(_due(now)).order_by(OutboundCall.created_at).limit(limit)
        )
    )
    claimed: list[str] = []
    for run_id in candidates:
        result: CursorResult[Any] = await session.execute(  # type: ignore[assignment]
            update(OutboundCall)
            .where(OutboundCall.id == run_id, _due(now))
            .values(claimed_at=now, status="queued", updated_at=now)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount == 1:
            claimed.append(run_id)
    if not claimed:
        return []
    rows = await session.scalars(select(OutboundCall).where(OutboundCall.id.in_(claimed)))
    return sorted(rows, key=lambda r: r.created_at)


async def next_scheduled_at(session: AsyncSession) -> datetime | None:
    """When the earliest unclaimed scheduled call is due (the dialer's next wake-up)."""
    value: datetime | None = await session.scalar(
        select(func.min(OutboundCall.scheduled_at)).where(
            OutboundCall.status == "scheduled",
            OutboundCall.claimed_at.is_(None),
            OutboundCall.is_deleted == false(),
        )
    )
    return value


async def update_call(session: AsyncSession, *, run_id: str, values: Mapping[str, Any]) -> None:
    await session.execute(
        update(OutboundCall)
        .where(OutboundCall.id == run_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


async def hangups_requested(session: AsyncSession, *, run_ids: Sequence[str]) -> list[str]:
    """Which of these calls the API asked to end."""
    if not run_ids:
        return []
    found = await session.scalars(
        select(OutboundCall.id).where(
            OutboundCall.id.in_(list(run_ids)), OutboundCall.hangup_requested.is_(True)
        )
    )
    return list(found)


async def trunk_credentials(session: AsyncSession, *, trunk_id: str) -> tuple[str, str] | None:
    """The trunk's digest `(username, password)`, or None without credentials. For the dialer
    only, at dial time: the password is never logged or returned by the API."""
    row = (
        await session.execute(
            select(Trunk.auth_username, Trunk.auth_password).where(Trunk.id == trunk_id)
        )
    ).first()
    if row is None or row[0] is None or row[1] is None:
        return None
    return str(row[0]), str(row[1])
