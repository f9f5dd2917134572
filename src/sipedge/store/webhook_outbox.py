"""The webhook outbox: call status events waiting for (or done with) delivery, and the secrets.

Writers append rows with `enqueue` (one per event whose agent has a `webhook_url`, numbered per
run); senders take due rows with `claim_due` and close each attempt with `finish_attempt`.

Claims are one `UPDATE ... WHERE id IN (due rows) AND the lease is free`: on PostgreSQL the due
rows are picked `FOR UPDATE SKIP LOCKED` and the lease condition is re-checked on the locked row,
on SQLite the statement takes the database's write lock, so two senders (threads, processes or
nodes) never hold the same row. Each claim carries a fresh token; `finish_attempt` only changes a
row still held under that token. A row is due when its `next_attempt_at` has come and no lower
`seq` of its run is still pending: the events of a call arrive in order, each one after its
predecessor was delivered or given up.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from sqlalchemy import (
    CursorResult,
    and_,
    bindparam,
    delete,
    exists,
    false,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from sipedge.store.db import Executor
from sipedge.store.models import Agent
from sipedge.store.types import new_id, utcnow
from sipedge.store.webhook_models import WebhookOutbox, WebhookSecret

__all__ = [
    "OutboxEntry",
    "Outcome",
    "account_key",
    "agents_with_webhook",
    "any_due",
    "claim_due",
    "enqueue",
    "finish_attempt",
    "insert_first",
    "purge_finished",
    "secret_for",
]

Outcome = Literal["delivered", "retry", "failed"]
_ERROR_WIDTH = 500


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """One status event of `run_id` for `agent_id`; `body` is the JSON payload to send."""

    run_id: str
    agent_id: str
    status: str
    body: str


def account_key(*, organization_id: str | None, user_id: str | None) -> str:
    """Whose secret signs an agent's webhooks: its organisation's, else its user's."""
    if organization_id is not None:
        return f"org:{organization_id}"
    if user_id is None:
        raise ValueError("an account needs an organization_id or a user_id")
    return f"user:{user_id}"


async def agents_with_webhook(session: AsyncSession, agent_ids: set[str]) -> set[str]:
    """The live agents among `agent_ids` that have a `webhook_url` (whose events are kept)."""
    if not agent_ids:
        return set()
    rows = await session.execute(
        select(Agent.id).where(
            Agent.id.in_(agent_ids), Agent.is_deleted == false(), Agent.webhook_url.is_not(None)
        )
    )
    return {agent_id for (agent_id,) in rows}


async def enqueue(session: AsyncSession, entries: Sequence[OutboxEntry], *, now: datetime) -> int:
    """Add a row per entry whose (live) agent has a `webhook_url`, keeping the entries' order
    within each run; returns how many were added. The caller commits."""
    agent_ids = {entry.agent_id for entry in entries}
    if not agent_ids:
        return 0
    agents = {
        row.id: row
        for row in await session.execute(
            select(Agent.id, Agent.webhook_url, Agent.organization_id, Agent.user_id).where(
                Agent.id.in_(agent_ids), Agent.is_deleted == false()
            )
        )
    }
    wanted = [e for e in entries if (a := agents.get(e.agent_id)) is not None and a.webhook_url]
    if not wanted:
        return 0
    runs = {entry.run_id for entry in wanted}
    last: dict[str, int] = {
        run_id: seq
        for run_id, seq in await session.execute(
            select(WebhookOutbox.run_id, func.max(WebhookOutbox.seq))
            .where(WebhookOutbox.run_id.in_(runs))
            .group_by(WebhookOutbox.run_id)
        )
    }
    rows = []
    for entry in wanted:
        agent = agents[entry.agent_id]
        seq = last[entry.run_id] = last.get(entry.run_id, 0) + 1
        rows.append(
            _outbox_row(
                entry,
                seq=seq,
                url=agent.webhook_url,
                organization_id=agent.organization_id,
                user_id=agent.user_id,
                now=now,
            )
        )
    await session.execute(insert(WebhookOutbox), rows)
    return len(rows)


async def insert_first(
    session: Executor,
    entry: OutboxEntry,
    *,
    url: str,
    organization_id: str | None,
    user_id: str | None,
    now: datetime,
) -> None:
    """Add the first event (`seq` 1) of a run that has none yet, for an agent whose webhook and
    ownership the caller has just read (one INSERT). The caller commits."""
    row = _outbox_row(
        entry, seq=1, url=url, organization_id=organization_id, user_id=user_id, now=now
    )
    await session.execute(insert(WebhookOutbox), [row])


def _outbox_row(
    entry: OutboxEntry,
    *,
    seq: int,
    url: str,
    organization_id: str | None,
    user_id: str | None,
    now: datetime,
) -> dict[str, object]:
    return {
        "id": new_id(),
        "created_at": now,
        "updated_at": now,
        "is_deleted": False,
        "deleted_at": None,
        "run_id": entry.run_id,
        "seq": seq,
        "agent_id": entry.agent_id,
        "account_key": account_key(organization_id=organization_id, user_id=user_id),
        "status": entry.status,
        "url": url,
        "body": entry.body,
        "state": "pending",
        "attempts": 0,
        "next_attempt_at": now,
    }


# Built once (see outbound_calls._ANY_DUE): the sender asks it every poll interval.
_ANY_DUE = (
    select(WebhookOutbox.id)
    .where(
        WebhookOutbox.state == "pending",
        WebhookOutbox.next_attempt_at <= bindparam("now"),
        or_(WebhookOutbox.lease_until.is_(None), WebhookOutbox.lease_until <= bindparam("now")),
    )
    .limit(1)
)


async def any_due(session: AsyncSession, *, now: datetime) -> bool:
    """Whether `claim_due` would find a row: one indexed read, no write lock. A row blocked
    behind an earlier pending one of its run still answers True (the claim then skips it)."""
    return (await session.execute(_ANY_DUE, {"now": now})).first() is not None


async def claim_due(
    session: AsyncSession, *, token: str, now: datetime, lease: float, limit: int
) -> list[WebhookOutbox]:
    """Lease up to `limit` due rows to `token` until `now + lease` and return them (oldest due
    first, at most one per run). The caller commits at once, before sending anything."""
    row = WebhookOutbox
    earlier = aliased(WebhookOutbox)
    free = or_(row.lease_until.is_(None), row.lease_until <= now)
    blocked = exists().where(
        earlier.run_id == row.run_id, earlier.seq < row.seq, earlier.state == "pending"
    )
    due = (
        select(row.id)
        .where(row.state == "pending", row.next_attempt_at <= now, free, ~blocked)
        .order_by(row.next_attempt_at, row.created_at, row.seq)
        .limit(limit)
        .with_for_update(skip_locked=True, of=row)
    )
    await session.execute(
        update(row)
        .where(row.id.in_(due.scalar_subquery()), row.state == "pending", free)
        .values(lease_owner=token, lease_until=now + timedelta(seconds=lease), updated_at=now)
        .execution_options(synchronize_session=False)
    )
    claimed = await session.scalars(
        select(row).where(row.lease_owner == token).order_by(row.next_attempt_at, row.seq)
    )
    return list(claimed)


async def purge_finished(session: AsyncSession, *, before: datetime, limit: int = 1000) -> int:
    """Delete up to `limit` delivered or failed rows last changed before `before` (the outbox's
    retention); pending rows are never touched. Returns the count; the caller commits."""
    row = WebhookOutbox
    doomed = (
        select(row.id)
        .where(row.state.in_(("delivered", "failed")), row.updated_at < before)
        .limit(limit)
        .scalar_subquery()
    )
    result = await session.execute(
        delete(row).where(row.id.in_(doomed)).execution_options(synchronize_session=False)
    )
    return cast(CursorResult[Any], result).rowcount


async def finish_attempt(
    session: AsyncSession,
    *,
    row_id: str,
    token: str,
    now: datetime,
    outcome: Outcome,
    next_attempt_at: datetime | None = None,
    last_status: int | None = None,
    error: str | None = None,
) -> bool:
    """Record one attempt on a row held under `token`: delivered, retry at `next_attempt_at`, or
    failed for good. False when the lease was lost (another sender holds the row now)."""
    values: dict[str, object] = {
        "attempts": WebhookOutbox.attempts + 1,
        "lease_owner": None,
        "lease_until": None,
        "updated_at": now,
        "last_status": last_status,
        "last_error": error[:_ERROR_WIDTH] if error else None,
    }
    if outcome == "delivered":
        values.update(state="delivered", delivered_at=now)
    elif outcome == "failed":
        values.update(state="failed")
    else:
        if next_attempt_at is None:
            raise ValueError("a retry needs next_attempt_at")
        values.update(next_attempt_at=next_attempt_at)
    result = await session.execute(
        update(WebhookOutbox)
        .where(
            and_(
                WebhookOutbox.id == row_id,
                WebhookOutbox.lease_owner == token,
                WebhookOutbox.state == "pending",
            )
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def secret_for(session: AsyncSession, key: str) -> str:
    """The signing secret of account `key`, created on first need (concurrent creators agree
    on one: the insert is `ON CONFLICT DO NOTHING`, then the stored value is read)."""
    query = select(WebhookSecret.secret).where(WebhookSecret.account_key == key)
    found = await session.scalar(query)
    if found is not None:
        return found
    dialect = session.get_bind().dialect.name
    make = postgresql.insert if dialect == "postgresql" else sqlite.insert
    now = utcnow()
    await session.execute(
        make(WebhookSecret)
        .values(
            id=new_id(),
            created_at=now,
            updated_at=now,
            is_deleted=False,
            account_key=key,
            secret=secrets.token_hex(32),
        )
        .on_conflict_do_nothing(index_elements=["account_key"])
    )
    stored = await session.scalar(query)
    if stored is None:
        raise RuntimeError("webhook secret could not be stored")
    return stored
