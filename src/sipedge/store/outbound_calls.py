"""Outbound calls (`POST /call`): the API's checks and writes, and the dialer's claims and updates.

The API side writes a `queued` (or `scheduled`) row; the dialer of a SIP process claims due rows
with a compare-and-set on `claimed_at` (one UPDATE ... WHERE claimed_at IS NULL per row, so two
dialers never place the same call), then reports each status change. Trunk passwords are read
only by `trunk_credentials`, at dial time, and never leave the dialer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    BindParameter,
    CursorResult,
    Executable,
    RowMapping,
    String,
    Table,
    and_,
    bindparam,
    false,
    func,
    insert,
    join,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.agents import canonical_uuid
from sipedge.store.db import Executor
from sipedge.store.errors import NotFoundError, RejectedError
from sipedge.store.guardrails import next_allowed_start, recipient_timezone
from sipedge.store.models import (
    OUTBOUND_FINAL_STATUSES,
    Agent,
    Gateway,
    OutboundCall,
    Trunk,
    TrunkNumber,
)
from sipedge.store.ownership import (
    Principal,
    Shape,
    owner_params,
    shape_of,
    visible_to,
    visible_to_bound,
)
from sipedge.store.types import UtcDateTime, new_id

__all__ = [
    "CALL_VIEW_COLUMNS",
    "CallRequest",
    "ClaimedCall",
    "QueuedCall",
    "any_due_calls",
    "claim_due_calls",
    "create_call",
    "get_call",
    "get_call_view",
    "hangups_requested",
    "heartbeat_claims",
    "next_scheduled_at",
    "request_hangup",
    "stale_claims",
    "trunk_credentials",
    "trunks_credentials",
    "update_call",
]

_CANCELABLE = ("queued", "scheduled")
_TABLE = cast(Table, OutboundCall.__table__)
_INSERT = insert(_TABLE)  # executed with a dict of values: built (and its cache key made) once
# The columns `GET /call/{run_id}` shows (the API's `OutboundCallOut`, `id` as `run_id`).
CALL_VIEW_COLUMNS = (
    "id",
    "status",
    "scheduled_at",
    "agent_id",
    "trunk_id",
    "number_id",
    "from_number",
    "to_number",
    "user_data",
    "created_at",
    "started_at",
    "answered_at",
    "ended_at",
    "final_sip_code",
    "reason",
    "carrier_call_id",
    "agent_call_id",
)
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


@dataclass(frozen=True, slots=True)
class QueuedCall:
    """What `create_call` wrote, and what the API needs after it (the agent's webhook and
    ownership, for the `queued`/`scheduled` status event)."""

    id: str
    status: str
    scheduled_at: datetime | None
    agent_id: str
    trunk_id: str
    number_id: str
    from_number: str
    to_number: str
    user_data: dict[str, Any] | None
    created_at: datetime
    webhook_url: str | None
    agent_organization_id: str | None
    agent_user_id: str | None


_CONTEXTS: dict[tuple[Shape, bool], Executable] = {}


def _call_context(shape: Shape, by_from_number: bool) -> Executable:
    """One statement for every check of `POST /call`: the caller's live agent, left-joined to
    the live number the call goes out from (with its trunk, visible to the caller) and the
    trunk's live gateway count. No agent -> no row; no number -> the number columns are NULL.

    Built once per principal shape and number choice; the values are bound parameters
    (`agent_id`, `from_key`, `owner_params`)."""
    key = (shape, by_from_number)
    cached = _CONTEXTS.get(key)
    if cached is not None:
        return cached
    if by_from_number:
        number_match = TrunkNumber.destination_key == bindparam("from_key", type_=String())
    else:
        number_match = TrunkNumber.agent_id == Agent.id
    number_and_trunk = join(
        TrunkNumber, Trunk, and_(Trunk.id == TrunkNumber.trunk_id, visible_to_bound(Trunk, shape))
    )
    gateways = (
        select(func.count())
        .select_from(Gateway)
        .where(Gateway.trunk_id == Trunk.id, Gateway.is_deleted == false())
        .scalar_subquery()
    )
    statement = (
        select(
            Agent.id.label("agent_id"),
            Agent.telephony_provider,
            Agent.call_start_hour,
            Agent.call_end_hour,
            Agent.webhook_url,
            Agent.organization_id,
            Agent.user_id,
            TrunkNumber.id.label("number_id"),
            TrunkNumber.e164,
            Trunk.id.label("trunk_id"),
            Trunk.is_active,
            Trunk.outbound_enabled,
            gateways.label("gateways"),
        )
        .select_from(Agent)
        .outerjoin(number_and_trunk, and_(number_match, TrunkNumber.is_deleted == false()))
        .where(Agent.id == bindparam("agent_id", type_=String()), visible_to_bound(Agent, shape))
        .order_by(TrunkNumber.created_at, TrunkNumber.id)
        .limit(1)
    )
    _CONTEXTS[key] = statement
    return statement


async def create_call(
    session: Executor, *, owner: Principal, request: CallRequest, now: datetime
) -> QueuedCall:
    """Check a `POST /call` (SPEC §5; every refusal is `RejectedError`, HTTP 400) and add the
    row: `queued`, or `scheduled` at the next allowed start outside the agent's guardrails.

    Two statements: the checks (`_call_context`) and a Core INSERT (the caller commits)."""
    agent_id = canonical_uuid(request.agent_id)
    if agent_id is None:
        raise _refuse(AGENT_NOT_FOUND)
    params: dict[str, Any] = {"agent_id": agent_id, **owner_params(owner)}
    if request.from_number is not None:
        params["from_key"] = request.from_number.lstrip("+")
    statement = _call_context(shape_of(owner), request.from_number is not None)
    found = (await session.execute(statement, params)).first()
    if found is None:
        raise _refuse(AGENT_NOT_FOUND)
    if found.telephony_provider != SIP_TRUNK_PROVIDER:
        raise _refuse(AGENT_NOT_SIP_TRUNK)
    if found.number_id is None:
        raise _refuse(NUMBER_NOT_FOUND)
    if not found.is_active:
        raise _refuse(TRUNK_INACTIVE)
    if not found.outbound_enabled:
        raise _refuse(OUTBOUND_DISABLED)
    if not found.gateways:
        raise _refuse(NO_GATEWAY)
    scheduled_at = None
    if found.call_start_hour is not None and found.call_end_hour is not None:
        # The recipient's zone (a phonenumbers lookup) only matters under calling guardrails.
        scheduled_at = next_allowed_start(
            now, recipient_timezone(request.recipient), found.call_start_hour, found.call_end_hour
        )
    call = QueuedCall(
        id=new_id(),
        status="queued" if scheduled_at is None else "scheduled",
        scheduled_at=scheduled_at,
        agent_id=found.agent_id,
        trunk_id=found.trunk_id,
        number_id=found.number_id,
        from_number=found.e164,
        to_number=request.recipient,
        user_data=request.user_data,
        created_at=now,
        webhook_url=found.webhook_url,
        agent_organization_id=found.organization_id,
        agent_user_id=found.user_id,
    )
    await session.execute(
        _INSERT,
        {
            **owner.owner_columns(),
            "id": call.id,
            "agent_id": call.agent_id,
            "trunk_id": call.trunk_id,
            "number_id": call.number_id,
            "from_number": call.from_number,
            "to_number": call.to_number,
            "user_data": call.user_data,
            "status": call.status,
            "scheduled_at": call.scheduled_at,
            "hangup_requested": False,
            "is_deleted": False,
            "created_at": now,
            "updated_at": now,
        },
    )
    return call


_VIEWS: dict[Shape, Executable] = {}


def _call_view(shape: Shape) -> Executable:
    cached = _VIEWS.get(shape)
    if cached is None:
        cached = _VIEWS[shape] = select(*(_TABLE.c[name] for name in CALL_VIEW_COLUMNS)).where(
            _TABLE.c.id == bindparam("run_id", type_=String()),
            visible_to_bound(OutboundCall, shape),
        )
    return cached


async def get_call_view(session: Executor, *, owner: Principal, run_id: str) -> RowMapping:
    """The caller's outbound call as plain columns (`CALL_VIEW_COLUMNS`), else `NotFoundError`
    naming the id. One prebuilt Core SELECT, no ORM object: `GET /call/{run_id}` is polled."""
    params = {"run_id": run_id, **owner_params(owner)}
    row = (await session.execute(_call_view(shape_of(owner)), params)).first()
    if row is None:
        raise NotFoundError(f"call {run_id} not found")
    return row._mapping


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
) -> tuple[OutboundCall, bool]:
    """End or cancel the call: one not yet with a dialer becomes `canceled` here; one a dialer
    holds gets `hangup_requested` (the dialer CANCELs or BYEs it). An ended call is unchanged.

    Returns the row as it is now and whether this request canceled it (its status webhook is
    then the caller's to queue)."""
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
    return row, canceled.rowcount == 1


# --- the dialer's side ---------------------------------------------------------------------------


def _due(now: datetime | BindParameter[datetime]) -> Any:
    return and_(
        OutboundCall.is_deleted == false(),
        OutboundCall.claimed_at.is_(None),
        or_(
            OutboundCall.status == "queued",
            and_(OutboundCall.status == "scheduled", OutboundCall.scheduled_at <= now),
        ),
    )


# Built once: the dialer asks this every poll interval, and building a statement costs more loop
# time than running it (SQLAlchemy's coercions); a prebuilt one also hits the compiled cache.
_ANY_DUE = select(OutboundCall.id).where(_due(bindparam("now", type_=UtcDateTime()))).limit(1)


async def any_due_calls(session: AsyncSession, *, now: datetime) -> bool:
    """Whether a claim would find anything: a read, no write lock, a fraction of the claim's
    cost on the loop. The dialer's idle polls ask this first."""
    return (await session.execute(_ANY_DUE, {"now": now})).first() is not None


@dataclass(frozen=True, slots=True)
class ClaimedCall:
    """A call a dialer claimed: what it needs to place it."""

    id: str
    agent_id: str
    trunk_id: str
    number_id: str
    from_number: str
    to_number: str
    hangup_requested: bool
    created_at: datetime


_CLAIMED = tuple(_TABLE.c[f.name] for f in fields(ClaimedCall))


async def claim_due_calls(
    session: AsyncSession, *, now: datetime, limit: int = 100, node: str | None = None
) -> list[ClaimedCall]:
    """Queued calls and scheduled ones whose time has come, claimed for the dialer ``node``
    (its heartbeat starts now), oldest first; the caller commits.

    One statement: `UPDATE ... WHERE id IN (due rows) AND <still due> RETURNING ...`. The outer
    condition is re-checked on each row as it is updated (PostgreSQL re-evaluates it on a row
    another dialer changed meanwhile; SQLite runs one writer at a time), so two dialers never
    claim one call; on PostgreSQL the due rows are picked `FOR UPDATE SKIP LOCKED`, so a second
    dialer takes other rows instead of waiting."""
    due = (
        select(_TABLE.c.id)
        .where(_due(now))
        .order_by(_TABLE.c.created_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .correlate(None)  # the same table as the UPDATE's: a subquery of its own, not correlated
    )
    result = await session.execute(
        update(_TABLE)
        .where(_TABLE.c.id.in_(due.scalar_subquery()), _due(now))
        .values(claimed_at=now, claimed_by=node, heartbeat_at=now, status="queued", updated_at=now)
        .returning(*_CLAIMED)
    )
    claimed = [ClaimedCall(*row) for row in result]
    claimed.sort(key=lambda call: call.created_at)
    return claimed


# Claimed and not finished: a dialer holds the call (it stays "queued" until it rings).
_HELD = (
    _TABLE.c.claimed_at.is_not(None),
    _TABLE.c.status.in_(("queued", "ringing", "in-progress")),
    _TABLE.c.is_deleted == false(),
)


async def heartbeat_claims(session: AsyncSession, *, node: str, now: datetime) -> int:
    """The dialer ``node`` is alive: stamp every unfinished call it holds. Returns the count;
    the caller commits."""
    result = await session.execute(
        update(_TABLE).where(_TABLE.c.claimed_by == node, *_HELD).values(heartbeat_at=now)
    )
    return cast(CursorResult[Any], result).rowcount


async def stale_claims(session: AsyncSession, *, before: datetime, limit: int = 100) -> list[str]:
    """Unfinished calls whose dialer has not stamped them since ``before`` (it died, or lost the
    database): their run ids, oldest claim first. On PostgreSQL the rows stay locked until the
    caller's commit (`FOR UPDATE SKIP LOCKED`), so two sweepers never end one call twice."""
    last_seen = func.coalesce(_TABLE.c.heartbeat_at, _TABLE.c.claimed_at)
    rows = await session.execute(
        select(_TABLE.c.id)
        .where(*_HELD, last_seen < before)
        .order_by(_TABLE.c.claimed_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [run_id for (run_id,) in rows]


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


async def trunks_credentials(
    session: AsyncSession, *, trunk_ids: set[str]
) -> dict[str, tuple[str, str]]:
    """`trunk_credentials` of several trunks in one statement (those without credentials are
    left out). For the dialer only, at claim time."""
    if not trunk_ids:
        return {}
    rows = await session.execute(
        select(Trunk.id, Trunk.auth_username, Trunk.auth_password).where(
            Trunk.id.in_(sorted(trunk_ids)),
            Trunk.auth_username.is_not(None),
            Trunk.auth_password.is_not(None),
        )
    )
    return {str(tid): (str(user), str(password)) for tid, user, password in rows}
