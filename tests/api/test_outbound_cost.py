"""The outbound path's database cost stays bounded (issue #7), and the token cache keeps auth
exact: SQL statements per `POST /call` and `GET /call/{run_id}`, per dialer claim and per burst
of status changes, counted with a `before_cursor_execute` listener; a revoked token fails at once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import event, text

from api.conftest import Api
from api.test_outbound_calls import TO, place, setup
from sipedge.store.db import make_session_factory
from sipedge.store.outbound_calls import claim_due_calls
from sipedge.store.outbound_updates import write_call_updates
from sipedge.store.token_cache import TokenCache
from sipedge.store.tokens import revoke_token


class Statements:
    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.sql.append(statement)

    @property
    def count(self) -> int:
        return len(self.sql)


@contextmanager
def counting(api: Api) -> Iterator[Statements]:
    seen = Statements()
    event.listen(api.engine.sync_engine, "before_cursor_execute", seen)
    try:
        yield seen
    finally:
        event.remove(api.engine.sync_engine, "before_cursor_execute", seen)


async def _no_webhook(client: httpx.AsyncClient, agent_id: str) -> None:
    response = await client.patch(
        f"/v2/agent/{agent_id}", json={"agent_config": {"webhook_url": None}}
    )
    assert response.status_code == 200, response.text


async def test_post_and_get_call_statements(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    await _no_webhook(alice, agent_id)
    await alice.get("/trunk/trunks")  # the token is verified (and cached) by now
    with counting(api) as post:
        response = await place(alice, agent_id=agent_id, recipient_phone_number=TO)
    assert response.status_code == 201, response.text
    # the checks (one SELECT) and the row (one INSERT); no token lookup, no webhook query
    assert post.count == 2, post.sql
    run_id = response.json()["run_id"]
    with counting(api) as get:
        assert (await alice.get(f"/call/{run_id}")).status_code == 200
    assert get.count == 1, get.sql


async def test_post_call_with_a_webhook_adds_only_its_insert(
    api: Api, alice: httpx.AsyncClient
) -> None:
    agent_id, _ = await setup(alice)  # the test agent has a webhook_url
    await alice.get("/trunk/trunks")
    with counting(api) as post:
        assert (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).status_code == 201
    assert post.count == 3, post.sql
    assert await api.scalar("SELECT count(*) FROM webhook_outbox") == 1


async def test_a_revoked_token_fails_at_once_despite_the_cache(api: Api) -> None:
    token = await api.token("alice")
    client = api.raw_client({"Authorization": f"Bearer {token}"})
    assert (await client.get("/trunk/trunks")).status_code == 200
    with counting(api) as cached:
        assert (await client.get("/trunk/trunks")).status_code == 200
    assert not any("api_tokens" in sql for sql in cached.sql)  # served from the cache
    async with make_session_factory(api.engine)() as session:
        assert await revoke_token(session, token)
        await session.commit()
    response = await client.get("/trunk/trunks")
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


async def test_a_revocation_by_another_process_applies_within_the_ttl(api: Api) -> None:
    now = [1000.0]
    app = api.app()
    app.state.services = dataclasses.replace(
        app.state.services, tokens=TokenCache(2.0, clock=lambda: now[0])
    )
    token = await api.token("alice")
    client = api.raw_client({"Authorization": f"Bearer {token}"})
    assert (await client.get("/trunk/trunks")).status_code == 200
    # `sipedge token revoke` in another process: the row changes, this process is not told
    await api.execute("UPDATE api_tokens SET revoked_at = updated_at")
    now[0] += 1.0
    assert (await client.get("/trunk/trunks")).status_code == 200  # still trusted (< ttl)
    now[0] += 1.0
    assert (await client.get("/trunk/trunks")).status_code == 401


async def test_unknown_tokens_are_never_cached(api: Api) -> None:
    app = api.app()
    tokens: TokenCache = app.state.services.tokens
    for n in range(20):
        client = api.raw_client({"Authorization": f"Bearer sk_unknown{n}"})
        assert (await client.get("/trunk/trunks")).status_code == 401
    assert len(tokens) == 0


async def test_claim_is_one_statement_and_a_call_burst_a_few(
    api: Api, alice: httpx.AsyncClient
) -> None:
    agent_id, _ = await setup(alice)
    await _no_webhook(alice, agent_id)
    calls = 20
    for _ in range(calls):
        assert (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).status_code == 201
    sessions = make_session_factory(api.engine)
    with counting(api) as claim:
        async with sessions() as session:
            claimed = await claim_due_calls(session, now=datetime.now(UTC))
            await session.commit()
    assert len(claimed) == calls and claim.count == 1, claim.sql
    now = datetime.now(UTC)
    lifecycle: list[dict[str, Any]] = [
        {"started_at": now, "updated_at": now},
        {"status": "ringing", "updated_at": now},
        {"status": "in-progress", "answered_at": now, "final_sip_code": 200, "updated_at": now},
        {"agent_call_id": "agent-leg", "updated_at": now},
        {"status": "completed", "ended_at": now + timedelta(seconds=3), "reason": "answered"},
    ]
    updates = [(call.id, values) for values in lifecycle for call in claimed]
    with counting(api) as burst:
        async with sessions() as session:
            await write_call_updates(session, updates, now=now)
            await session.commit()
    # one webhook check for the burst, then one executemany per merged set of columns:
    # 100 status changes of 20 calls in 2 statements (it was 2 per change)
    assert burst.count == 2, burst.sql
    rows = await _calls(api)
    assert len(rows) == calls
    for row in rows:
        assert row["status"] == "completed" and row["reason"] == "answered"
        assert row["final_sip_code"] == 200 and row["agent_call_id"] == "agent-leg"
        assert row["started_at"] is not None and row["answered_at"] is not None
    assert await api.scalar("SELECT count(*) FROM webhook_outbox") == 0


async def test_a_burst_keeps_every_webhook_event_in_order(
    api: Api, alice: httpx.AsyncClient
) -> None:
    hooked_agent, _ = await setup(alice)
    plain_agent, _ = await setup(alice, number="+14155550111")
    await _no_webhook(alice, plain_agent)
    hooked = (await place(alice, agent_id=hooked_agent, recipient_phone_number=TO)).json()
    plain = (await place(alice, agent_id=plain_agent, recipient_phone_number=TO)).json()
    sessions = make_session_factory(api.engine)
    async with sessions() as session:
        await claim_due_calls(session, now=datetime.now(UTC))
        await session.commit()
    now = datetime.now(UTC)
    updates: list[tuple[str, dict[str, Any]]] = []
    for run_id in (hooked["run_id"], plain["run_id"]):
        updates += [
            (run_id, {"status": "ringing"}),
            (run_id, {"status": "in-progress", "answered_at": now, "final_sip_code": 200}),
            (run_id, {"status": "completed", "ended_at": now, "reason": "answered"}),
        ]
    async with sessions() as session:
        await write_call_updates(session, updates, now=now)
        await session.commit()
    async with api.engine.connect() as connection:
        result = await connection.execute(
            text("SELECT run_id, seq, status, body FROM webhook_outbox ORDER BY run_id, seq")
        )
        events = [(r[0], r[1], r[2], json.loads(r[3])) for r in result]
    assert [(e[1], e[2]) for e in events] == [
        (1, "queued"),
        (2, "ringing"),
        (3, "in-progress"),
        (4, "completed"),
    ]
    assert {e[0] for e in events} == {hooked["run_id"]}
    # each event carries the row as its change left it
    assert [e[3]["status"] for e in events] == ["queued", "ringing", "in-progress", "completed"]
    assert events[3][3]["telephony_data"]["hangup_reason"] == "answered"
    assert events[2][3]["telephony_data"]["hangup_reason"] is None
    statuses = {row["id"]: row["status"] for row in await _calls(api)}
    assert statuses == {hooked["run_id"]: "completed", plain["run_id"]: "completed"}


async def _calls(api: Api) -> list[dict[str, Any]]:
    async with api.engine.connect() as connection:
        result = await connection.execute(text("SELECT * FROM outbound_calls"))
        return [dict(row._mapping) for row in result]
