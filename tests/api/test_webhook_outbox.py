"""The webhook outbox in the store: numbering per run, in-order claims, exclusive leases, secrets."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text

from api.conftest import Api
from api.webhook_helpers import HOOK, T0, entry, put, webhook_agent
from sipedge.store.db import make_session_factory
from sipedge.store.webhook_models import WebhookOutbox
from sipedge.store.webhook_outbox import (
    Outcome,
    account_key,
    any_due,
    claim_due,
    finish_attempt,
    purge_finished,
    secret_for,
)

ROWS = "SELECT run_id, seq, status, url, account_key FROM webhook_outbox ORDER BY run_id, seq"


async def _claim(
    api: Api, token: str, now: datetime = T0, lease: float = 30.0, limit: int = 50
) -> list[WebhookOutbox]:
    async with make_session_factory(api.engine)() as session:
        rows = await claim_due(session, token=token, now=now, lease=lease, limit=limit)
        await session.commit()
    return rows


async def _finish(api: Api, row: WebhookOutbox, token: str, outcome: Outcome, **kw: Any) -> bool:
    async with make_session_factory(api.engine)() as session:
        kept = await finish_attempt(
            session,
            row_id=row.id,
            token=token,
            now=T0,
            outcome=outcome,
            **kw,
        )
        await session.commit()
    return kept


async def _any_due(api: Api, now: datetime) -> bool:
    async with make_session_factory(api.engine)() as session:
        return await any_due(session, now=now)


def _ids(rows: list[WebhookOutbox]) -> list[tuple[str, int]]:
    return sorted((row.run_id, row.seq) for row in rows)


async def _rows(api: Api) -> list[tuple[object, ...]]:
    async with api.engine.connect() as connection:
        return [tuple(r) for r in await connection.execute(text(ROWS))]


async def test_events_are_numbered_per_run_and_only_agents_with_a_webhook_get_rows(
    api: Api,
) -> None:
    hooked = await webhook_agent(api)
    silent = await webhook_agent(api, url=None)
    org_agent = await api.agent("carol", "acme")
    await api.execute("UPDATE agents SET webhook_url = :u WHERE id = :i", u=HOOK, i=org_agent)
    added = await put(
        api,
        [
            entry("r1", hooked, "ringing"),
            entry("r2", silent, "ringing"),
            entry("r1", hooked, "in-progress"),
            entry("r3", org_agent, "failed"),
            entry("r4", "no-such-agent", "failed"),
        ],
    )
    assert added == 3
    assert await put(api, [entry("r1", hooked, "completed")]) == 1
    assert await _rows(api) == [
        ("r1", 1, "ringing", HOOK, "user:alice"),
        ("r1", 2, "in-progress", HOOK, "user:alice"),
        ("r1", 3, "completed", HOOK, "user:alice"),
        ("r3", 1, "failed", HOOK, "org:acme"),
    ]


async def test_a_deleted_agent_gets_no_rows(api: Api) -> None:
    agent = await webhook_agent(api)
    await api.execute("UPDATE agents SET is_deleted = true WHERE id = :i", i=agent)
    assert await put(api, [entry("r1", agent)]) == 0


async def test_a_run_is_claimed_one_event_at_a_time_in_sequence(api: Api) -> None:
    agent = await webhook_agent(api)
    await put(api, [entry("r1", agent, s) for s in ("ringing", "in-progress", "completed")])
    await put(api, [entry("r2", agent, "failed")])

    first = await _claim(api, "t1")
    assert _ids(first) == [("r1", 1), ("r2", 1)]
    assert await _claim(api, "t2") == []  # r1#2 waits for r1#1, which is leased
    r1 = next(row for row in first if row.run_id == "r1")
    assert await _finish(api, r1, "t1", "delivered", last_status=200)

    second = await _claim(api, "t3")
    assert _ids(second) == [("r1", 2)]
    assert await _finish(api, second[0], "t3", "failed", error="gave up")  # given up: unblocks
    assert _ids(await _claim(api, "t4")) == [("r1", 3)]


async def test_a_retry_waits_for_its_time_and_holds_back_the_rest_of_its_run(api: Api) -> None:
    agent = await webhook_agent(api)
    await put(api, [entry("r1", agent, "ringing"), entry("r1", agent, "in-progress")])
    (row,) = await _claim(api, "t1")
    later = T0 + timedelta(seconds=10)
    assert await _finish(api, row, "t1", "retry", next_attempt_at=later, last_status=503)
    # The probe is not blocked-aware: r1#2 is due but waits for r1#1 (the claim finds none).
    assert await _any_due(api, T0 + timedelta(seconds=9))
    assert await _claim(api, "t2", now=T0 + timedelta(seconds=9)) == []
    again = await _claim(api, "t3", now=later)
    assert _ids(again) == [("r1", 1)]
    assert (again[0].attempts, again[0].last_status) == (1, 503)


async def test_an_expired_lease_is_claimable_again_and_the_old_holder_cannot_finish(
    api: Api,
) -> None:
    agent = await webhook_agent(api)
    assert not await _any_due(api, T0)
    await put(api, [entry("r1", agent)])
    assert await _any_due(api, T0)  # the sender's idle probe agrees with the claim
    (row,) = await _claim(api, "crashed", lease=30)
    assert not await _any_due(api, T0 + timedelta(seconds=29))
    assert await _claim(api, "other", now=T0 + timedelta(seconds=29)) == []
    assert await _any_due(api, T0 + timedelta(seconds=31))
    (again,) = await _claim(api, "other", now=T0 + timedelta(seconds=31))
    assert again.id == row.id
    assert not await _finish(api, row, "crashed", "delivered")
    assert await _finish(api, again, "other", "delivered")


async def test_retention_purges_finished_rows_only(api: Api) -> None:
    agent = await webhook_agent(api)
    await put(api, [entry("r1", agent), entry("r2", agent), entry("r3", agent)])
    delivered, failed, retried = sorted(await _claim(api, "t1"), key=lambda r: r.run_id)
    assert await _finish(api, delivered, "t1", "delivered")
    assert await _finish(api, failed, "t1", "failed", error="gone")
    later = T0 + timedelta(seconds=5)
    assert await _finish(api, retried, "t1", "retry", next_attempt_at=later)
    async with make_session_factory(api.engine)() as session:
        assert await purge_finished(session, before=T0) == 0  # not older than T0
        assert await purge_finished(session, before=T0 + timedelta(days=1), limit=1) == 1
        assert await purge_finished(session, before=T0 + timedelta(days=1)) == 1
        await session.commit()
    # the pending (retrying) row stays, whatever its age
    assert [(run_id, status) for run_id, _, status, _, _ in await _rows(api)] == [("r3", "ringing")]


async def test_two_senders_never_claim_the_same_row(api: Api) -> None:
    agent = await webhook_agent(api)
    await put(api, [entry(f"run-{n:02d}", agent) for n in range(60)])
    seen: list[tuple[str, int]] = []
    for round_ in range(10):
        batches = await asyncio.gather(*(_claim(api, f"t{round_}-{k}", limit=7) for k in range(3)))
        for batch in batches:
            seen.extend(_ids(batch))
        if len(seen) >= 60:
            break
    assert len(seen) == len(set(seen)) == 60


async def test_finishing_needs_the_claim_token(api: Api) -> None:
    agent = await webhook_agent(api)
    await put(api, [entry("r1", agent)])
    (row,) = await _claim(api, "mine")
    assert not await _finish(api, row, "not-mine", "delivered")
    assert await _finish(api, row, "mine", "delivered")
    assert not await _finish(api, row, "mine", "delivered")  # done already
    assert await api.scalar("SELECT state FROM webhook_outbox") == "delivered"


async def test_one_secret_per_account_created_on_first_need(api: Api) -> None:
    sessions = make_session_factory(api.engine)

    async def get(key: str) -> str:
        async with sessions() as session:
            value = await secret_for(session, key)
            await session.commit()
        return value

    alice = account_key(organization_id=None, user_id="alice")
    acme = account_key(organization_id="acme", user_id="alice")
    assert (alice, acme) == ("user:alice", "org:acme")
    first, second = await asyncio.gather(get(alice), get(alice))
    assert first == second == await get(alice)
    assert len(first) == 64 and int(first, 16) >= 0
    assert await get(acme) != first
    assert await api.scalar("SELECT count(*) FROM webhook_secrets") == 2
