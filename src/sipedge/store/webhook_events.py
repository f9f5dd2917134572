"""The call status payload (one definition for every writer) and outbound calls' status events.

`status_payload` is the JSON object a webhook receives (see `runtime/webhook_payload.py` for the
signature scheme). Inbound events come from the call path through the outbox writer; outbound
ones are written by `enqueue_outbound_status` in the same transaction that changes the
`outbound_calls` row (the API for `queued`/`scheduled`/API cancels, the dialer for the rest), so
a status and its webhook are stored together or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, false, select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.db import Executor
from sipedge.store.models import Agent, OutboundCall
from sipedge.store.outbound_calls import QueuedCall
from sipedge.store.webhook_outbox import OutboxEntry, enqueue, insert_first

__all__ = [
    "PROVIDER",
    "encode_body",
    "enqueue_new_outbound_call",
    "enqueue_outbound_status",
    "status_payload",
]

PROVIDER = "sip-trunk"


def _time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def status_payload(
    *,
    run_id: str,
    agent_id: str | None,
    status: str,
    created_at: datetime,
    updated_at: datetime,
    direction: str,
    from_number: str | None = None,
    to_number: str | None = None,
    trunk_id: str | None = None,
    number_id: str | None = None,
    sip_call_id: str | None = None,
    hangup_by: str | None = None,
    hangup_reason: str | None = None,
    sip_status: int | None = None,
    duration_s: float | None = None,
    user_data: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`{id, agent_id, status, created_at, updated_at, telephony_data: {...}, user_data}`."""
    return {
        "id": run_id,
        "agent_id": agent_id,
        "status": status,
        "created_at": _time(created_at),
        "updated_at": _time(updated_at),
        "telephony_data": {
            "direction": direction,
            "from_number": from_number,
            "to_number": to_number,
            "trunk_id": trunk_id,
            "number_id": number_id,
            "provider": PROVIDER,
            "sip_call_id": sip_call_id,
            "hangup_by": hangup_by,
            "hangup_reason": hangup_reason,
            "sip_status": sip_status,
            "duration_s": None if duration_s is None else round(duration_s, 3),
        },
        "user_data": dict(user_data) if user_data is not None else None,
    }


def encode_body(payload: Mapping[str, Any]) -> str:
    """Compact JSON; the stored text is sent (and signed) byte for byte on every attempt."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


_FINAL = frozenset({"completed", "busy", "no-answer", "failed", "canceled"})
_COLUMNS = (
    OutboundCall.id,
    OutboundCall.agent_id,
    OutboundCall.status,
    OutboundCall.created_at,
    OutboundCall.trunk_id,
    OutboundCall.number_id,
    OutboundCall.from_number,
    OutboundCall.to_number,
    OutboundCall.carrier_call_id,
    OutboundCall.reason,
    OutboundCall.final_sip_code,
    OutboundCall.answered_at,
    OutboundCall.ended_at,
    OutboundCall.user_data,
)


async def enqueue_outbound_status(session: AsyncSession, *, run_id: str, now: datetime) -> int:
    """Queue the webhook of outbound call `run_id`'s current status (its agent's webhook, if
    any); returns the rows added (0 or 1). Call it right after changing the status, before the
    commit. `hangup_by` is not tracked for outbound calls (null); `hangup_reason` is `reason`."""
    await session.flush()  # a row added in this session must be visible to the select
    live_agent = and_(Agent.id == OutboundCall.agent_id, Agent.is_deleted == false())
    row = (
        await session.execute(
            select(*_COLUMNS, Agent.webhook_url)
            .outerjoin(Agent, live_agent)
            .where(OutboundCall.id == run_id)
        )
    ).first()
    if row is None or not row.webhook_url:
        return 0  # no webhook for this agent: no payload to build
    final = row.status in _FINAL
    duration = None
    if final and row.answered_at is not None and row.ended_at is not None:
        duration = max(0.0, (row.ended_at - row.answered_at).total_seconds())
    payload = status_payload(
        run_id=row.id,
        agent_id=row.agent_id,
        status=row.status,
        created_at=row.created_at,
        updated_at=now,
        direction="outbound",
        from_number=row.from_number,
        to_number=row.to_number,
        trunk_id=row.trunk_id,
        number_id=row.number_id,
        sip_call_id=row.carrier_call_id,
        hangup_reason=row.reason if final else None,
        sip_status=row.final_sip_code,
        duration_s=duration,
        user_data=row.user_data,
    )
    entry = OutboxEntry(
        run_id=row.id, agent_id=row.agent_id, status=row.status, body=encode_body(payload)
    )
    return await enqueue(session, [entry], now=now)


async def enqueue_new_outbound_call(session: Executor, *, call: QueuedCall, now: datetime) -> int:
    """Queue the `queued`/`scheduled` webhook of a call `create_call` just added, from what it
    already read (no statement at all when the agent has no webhook; else one INSERT: a new
    run's first event is its `seq` 1). Returns the rows added (0 or 1)."""
    if not call.webhook_url:
        return 0
    payload = status_payload(
        run_id=call.id,
        agent_id=call.agent_id,
        status=call.status,
        created_at=call.created_at,
        updated_at=now,
        direction="outbound",
        from_number=call.from_number,
        to_number=call.to_number,
        trunk_id=call.trunk_id,
        number_id=call.number_id,
        user_data=call.user_data,
    )
    entry = OutboxEntry(
        run_id=call.id, agent_id=call.agent_id, status=call.status, body=encode_body(payload)
    )
    await insert_first(
        session,
        entry,
        url=call.webhook_url,
        organization_id=call.agent_organization_id,
        user_id=call.agent_user_id,
        now=now,
    )
    return 1
