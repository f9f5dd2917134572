"""The dialer's status writes: a burst of outbound call changes in few statements.

The call path reports each change of a call (started, ringing, in-progress, the agent leg,
ended) as `(run_id, values)`; the dialer hands a burst of them to `write_call_updates`, in order,
inside one transaction. A status change whose agent has a webhook must store its event with the
row as it is right after that change (`enqueue_outbound_status` reads it back), so those runs are
written change by change. Every other run's changes are merged (later values win, as the UPDATEs
in order would leave them) and the merged rows are written with one executemany per set of
columns: a burst of hundreds of changes costs a handful of statements, not two per change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, and_, bindparam, false, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.models import Agent, OutboundCall
from sipedge.store.webhook_events import enqueue_outbound_status

__all__ = ["Update", "write_call_updates"]

Update = tuple[str, Mapping[str, Any]]  # (run_id, column values)

_TABLE = cast(Table, OutboundCall.__table__)
_CHUNK = 400  # run ids per IN list: well inside both databases' parameter limits


async def write_call_updates(
    session: AsyncSession, updates: Sequence[Update], *, now: datetime
) -> None:
    """Apply `updates` in order; the caller commits.

    Reads come first (which runs have a webhook), so on SQLite the write lock is taken by the
    first UPDATE and held only until the caller's commit."""
    hooked = await _runs_with_webhook(
        session, {run_id for run_id, values in updates if "status" in values}
    )
    merged: dict[str, dict[str, Any]] = {}
    for run_id, values in updates:
        if run_id in hooked:
            await session.execute(_by_id(tuple(values)), [_params(run_id, values)])
            if "status" in values:  # its webhook, from the row as this change left it
                await enqueue_outbound_status(session, run_id=run_id, now=now)
        else:
            merged.setdefault(run_id, {}).update(values)
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for run_id, values in merged.items():
        groups.setdefault(tuple(sorted(values)), []).append(_params(run_id, values))
    for columns, params in groups.items():
        await session.execute(_by_id(columns), params)


async def _runs_with_webhook(session: AsyncSession, run_ids: set[str]) -> set[str]:
    """Which of these calls belong to a live agent with a `webhook_url`."""
    if not run_ids:
        return set()
    ordered = sorted(run_ids)
    found: set[str] = set()
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start : start + _CHUNK]
        rows = await session.execute(
            select(_TABLE.c.id)
            .join(Agent, and_(Agent.id == _TABLE.c.agent_id, Agent.is_deleted == false()))
            .where(_TABLE.c.id.in_(chunk), Agent.webhook_url.is_not(None), Agent.webhook_url != "")
        )
        found.update(run_id for (run_id,) in rows)
    return found


def _by_id(columns: Sequence[str]) -> Any:
    """`UPDATE outbound_calls SET <columns> WHERE id = :run_id`, for executemany."""
    # Bind names differ from the column names: SQLAlchemy reserves those for its own SET binds.
    return (
        update(_TABLE)
        .where(_TABLE.c.id == bindparam("p_run_id"))
        .values({name: bindparam(f"p_{name}", type_=_TABLE.c[name].type) for name in columns})
    )


def _params(run_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    params = {f"p_{name}": value for name, value in values.items()}
    params["p_run_id"] = run_id
    return params
