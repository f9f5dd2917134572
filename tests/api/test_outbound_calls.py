"""POST /call, GET /call/{run_id}, POST /call/{run_id}/hangup on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from api.agent_helpers import agent_body, make_agent
from api.conftest import Api
from api.helpers import CREDS, MISSING_ID, assert_message, assert_validation, make_trunk
from sipedge.store.db import make_session_factory
from sipedge.store.outbound_calls import (
    any_due_calls,
    claim_due_calls,
    heartbeat_claims,
    stale_claims,
    update_call,
)

FROM = "+14155550100"
TO = "+12125550123"  # New York
ALWAYS = {"call_start_hour": 0, "call_end_hour": 23}


def set_now(api: Api, when: datetime) -> None:
    app = api.app()
    app.state.services = dataclasses.replace(app.state.services, now=lambda: when)


async def sip_agent(client: httpx.AsyncClient, guardrails: dict[str, int] | None = None) -> str:
    body = agent_body(telephony_provider="sip-trunk", calling_guardrails=guardrails or ALWAYS)
    return await make_agent(client, body)


async def setup(
    client: httpx.AsyncClient,
    *,
    guardrails: dict[str, int] | None = None,
    number: str = FROM,
    **trunk: Any,
) -> tuple[str, dict[str, Any]]:
    agent_id = await sip_agent(client, guardrails)
    fields = {
        "gateways": [{"host": "sip.carrier.example"}],
        "numbers": [{"e164": number, "agent_id": agent_id}],
        **CREDS,
        **trunk,
    }
    return agent_id, await make_trunk(client, **fields)


async def place(client: httpx.AsyncClient, **body: Any) -> httpx.Response:
    return await client.post("/call", json=body)


async def test_queued_call_and_its_state(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, trunk = await setup(alice)
    response = await place(
        alice, agent_id=agent_id, recipient_phone_number="+1 (212) 555-0123",
        user_data={"name": "Bob"},
    )  # fmt: skip
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "queued" and set(body) == {"run_id", "status"}
    assert [c.kind for c in api.changes][-1] == "call.queued"
    got = await alice.get(f"/call/{body['run_id']}")
    assert got.status_code == 200
    state = got.json()
    assert state["run_id"] == body["run_id"] and state["status"] == "queued"
    assert (state["from"], state["to"]) == (FROM, TO)
    assert state["trunk_id"] == trunk["id"] and state["agent_id"] == agent_id
    assert state["number_id"] == trunk["numbers"][0]["id"]
    assert state["user_data"] == {"name": "Bob"} and state["scheduled_at"] is None
    # the password never appears in any response
    assert CREDS["auth_password"] not in response.text + got.text


async def test_explicit_from_number(alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    response = await place(
        alice, agent_id=agent_id, recipient_phone_number=TO, from_phone_number="14155550100"
    )
    assert response.status_code == 201, response.text


async def test_refusals(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    plivo = await make_agent(alice)  # telephony_provider plivo
    bob = await api.client("bob")
    bobs_agent = await sip_agent(bob)
    cases = [
        ({"agent_id": MISSING_ID}, "agent not found"),
        ({"agent_id": "not-a-uuid"}, "agent not found"),
        ({"agent_id": bobs_agent}, "agent not found"),
        ({"agent_id": plivo}, "agent does not use telephony_provider sip-trunk"),
        ({"from_phone_number": "+14155550199"}, "from_phone_number is not a number"),
        ({"from_phone_number": "12"}, "from_phone_number is not a number"),
        ({"recipient_phone_number": "+1555"}, "recipient_phone_number is not a valid"),
        ({"recipient_phone_number": "hello"}, "recipient_phone_number is not a valid"),
    ]
    for change, message in cases:
        body = {"agent_id": agent_id, "recipient_phone_number": TO, **change}
        assert assert_message(await place(alice, **body), 400).startswith(message), change
    # bob's agent with no number of its own; bob cannot use alice's number
    body = {"agent_id": bobs_agent, "recipient_phone_number": TO}
    assert "from_phone_number" in assert_message(await place(bob, **body), 400)
    body["from_phone_number"] = FROM
    assert "from_phone_number" in assert_message(await place(bob, **body), 400)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"is_active": False}, "trunk is not active"),
        ({"outbound_enabled": False}, "trunk has outbound calls disabled"),
    ],
)
async def test_trunk_switches(
    alice: httpx.AsyncClient, patch: dict[str, Any], message: str
) -> None:
    agent_id, trunk = await setup(alice)
    assert (await alice.patch(f"/trunk/trunks/{trunk['id']}", json=patch)).status_code == 200
    response = await place(alice, agent_id=agent_id, recipient_phone_number=TO)
    assert assert_message(response, 400) == message


async def test_trunk_without_gateway_or_deleted(alice: httpx.AsyncClient) -> None:
    agent_id, trunk = await setup(alice, gateways=[])
    response = await place(alice, agent_id=agent_id, recipient_phone_number=TO)
    assert assert_message(response, 400) == "trunk has no gateway"
    assert (await alice.delete(f"/trunk/trunks/{trunk['id']}")).status_code == 200
    response = await place(alice, agent_id=agent_id, recipient_phone_number=TO)
    assert "from_phone_number" in assert_message(response, 400)


async def test_malformed_bodies(alice: httpx.AsyncClient) -> None:
    assert_validation(await place(alice, recipient_phone_number=TO), ("body", "agent_id"))
    assert_validation(await place(alice, agent_id="x"), ("body", "recipient_phone_number"))
    response = await place(alice, agent_id="x", recipient_phone_number=TO, extra=1)
    assert_validation(response, ("body", "extra"))
    response = await place(alice, agent_id="x", recipient_phone_number=TO, user_data=[1])
    assert_validation(response, ("body", "user_data"))
    assert_validation(await alice.get("/call/not-a-uuid"), ("path", "run_id"))
    assert "not found" in assert_message(await alice.get(f"/call/{MISSING_ID}"), 404)
    response = await alice.post(f"/call/{MISSING_ID}/hangup")
    assert "not found" in assert_message(response, 404)


async def test_ownership(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    run_id = (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).json()["run_id"]
    bob = await api.client("bob")
    assert assert_message(await bob.get(f"/call/{run_id}"), 404) == f"call {run_id} not found"
    assert_message(await bob.post(f"/call/{run_id}/hangup"), 404)
    unauthenticated = api.raw_client()
    assert (await unauthenticated.get(f"/call/{run_id}")).status_code == 401
    # an organisation's calls are visible across the organisation
    org_a = await api.client("carol", org="org-1")
    org_b = await api.client("dave", org="org-1")
    org_agent, _ = await setup(org_a, number="+14155550111")
    run = await place(org_a, agent_id=org_agent, recipient_phone_number=TO)
    assert run.status_code == 201, run.text
    assert (await org_b.get(f"/call/{run.json()['run_id']}")).status_code == 200


async def test_hangup_of_a_queued_call_cancels_it(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    run_id = (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).json()["run_id"]
    response = await alice.post(f"/call/{run_id}/hangup")
    assert response.status_code == 200 and response.json()["status"] == "canceled"
    assert response.json()["ended_at"] is not None
    assert [c.kind for c in api.changes][-1] == "call.hangup"
    # idempotent; a canceled call is never claimed
    again = await alice.post(f"/call/{run_id}/hangup")
    assert again.json()["status"] == "canceled"
    async with make_session_factory(api.engine)() as session:
        assert not await any_due_calls(session, now=datetime.now(UTC))
        assert await claim_due_calls(session, now=datetime.now(UTC)) == []


async def test_hangup_of_a_claimed_call_asks_the_dialer(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    run_id = (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).json()["run_id"]
    async with make_session_factory(api.engine)() as session:
        claimed = await claim_due_calls(session, now=datetime.now(UTC))
        await session.commit()
    assert [row.id for row in claimed] == [run_id]
    response = await alice.post(f"/call/{run_id}/hangup")
    assert response.json()["status"] == "queued"
    assert await api.scalar("SELECT hangup_requested FROM outbound_calls") in (True, 1)


async def test_claims_are_exclusive(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    for _ in range(3):
        await place(alice, agent_id=agent_id, recipient_phone_number=TO)
    factory = make_session_factory(api.engine)
    async with factory() as first:
        assert await any_due_calls(first, now=datetime.now(UTC))
        got = await claim_due_calls(first, now=datetime.now(UTC))
        await first.commit()
    async with factory() as second:
        assert not await any_due_calls(second, now=datetime.now(UTC))
        assert await claim_due_calls(second, now=datetime.now(UTC)) == []
    assert len(got) == 3


async def test_claims_carry_their_dialer_and_go_stale_without_its_heartbeat(
    api: Api, alice: httpx.AsyncClient
) -> None:
    agent_id, _ = await setup(alice)
    runs = [
        (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).json()["run_id"]
        for _ in range(3)
    ]
    factory = make_session_factory(api.engine)
    t0 = datetime.now(UTC)
    async with factory() as session:
        claimed = await claim_due_calls(session, now=t0, node="dialer-a")
        await session.commit()
    assert sorted(c.id for c in claimed) == sorted(runs)
    later = t0 + timedelta(seconds=30)
    async with factory() as session:
        assert await stale_claims(session, before=t0) == []  # stamped at the claim
        assert sorted(await stale_claims(session, before=later)) == sorted(runs)
        # a finished call is never stale; another dialer's stamp touches none of a's calls
        await update_call(session, run_id=runs[2], values={"status": "completed"})
        assert await heartbeat_claims(session, node="dialer-b", now=later) == 0
        assert await heartbeat_claims(session, node="dialer-a", now=later) == 2
        await session.commit()
    async with factory() as session:
        assert await stale_claims(session, before=later) == []
        assert sorted(await stale_claims(session, before=later + timedelta(seconds=1))) == sorted(
            runs[:2]
        )


@pytest.mark.parametrize(
    ("now", "to", "hours", "status", "scheduled_at"),
    [
        # 14:00 UTC = 09:00 in New York (EST): inside 9..17
        (datetime(2026, 1, 15, 14, 0, tzinfo=UTC), TO, (9, 17), "queued", None),
        # 12:00 UTC = 07:00 NY: today 09:00 NY = 14:00 UTC
        (datetime(2026, 1, 15, 12, 0, tzinfo=UTC), TO, (9, 17), "scheduled", "2026-01-15T14:00:00Z"),
        # 23:30 UTC = 18:30 NY: tomorrow 09:00 NY
        (datetime(2026, 1, 15, 23, 30, tzinfo=UTC), TO, (9, 17), "scheduled", "2026-01-16T14:00:00Z"),
        # Sydney (AEDT, UTC+11 in January): 12:00 UTC = 23:00 Sydney -> 08:00 next day = 21:00 UTC
        (datetime(2026, 1, 15, 12, 0, tzinfo=UTC), "+61212345678", (8, 20), "scheduled", "2026-01-15T21:00:00Z"),
        # London, summer time: 07:30 UTC = 08:30 BST, inside 8..8
        (datetime(2026, 7, 1, 7, 30, tzinfo=UTC), "+442071234567", (8, 8), "queued", None),
    ],
)  # fmt: skip
async def test_guardrails_schedule_the_call(
    api: Api, alice: httpx.AsyncClient, now, to, hours, status, scheduled_at
) -> None:
    set_now(api, now)
    agent_id, _ = await setup(
        alice, guardrails=dict(zip(("call_start_hour", "call_end_hour"), hours, strict=True))
    )
    response = await place(alice, agent_id=agent_id, recipient_phone_number=to)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == status
    state = (await alice.get(f"/call/{body['run_id']}")).json()
    assert state["status"] == status
    if scheduled_at is None:
        assert state["scheduled_at"] is None
        return
    when = datetime.fromisoformat(state["scheduled_at"].replace("Z", "+00:00"))
    assert when == datetime.fromisoformat(scheduled_at.replace("Z", "+00:00"))
    assert datetime.fromisoformat(body["scheduled_at"].replace("Z", "+00:00")) == when
    # not due before its time; claimed (and queued) once it is
    factory = make_session_factory(api.engine)
    async with factory() as session:
        early = when.replace(second=0) - (when - now) / 2
        assert not await any_due_calls(session, now=early)  # the dialer's idle probe agrees
        assert await claim_due_calls(session, now=early) == []
        assert await any_due_calls(session, now=when)
        rows = await claim_due_calls(session, now=when)
        await session.commit()
    assert [r.id for r in rows] == [body["run_id"]]
    assert (await alice.get(f"/call/{body['run_id']}")).json()["status"] == "queued"


async def test_hangup_of_a_scheduled_call_cancels_it(api: Api, alice: httpx.AsyncClient) -> None:
    set_now(api, datetime(2026, 1, 15, 12, 0, tzinfo=UTC))  # 07:00 in New York
    agent_id, _ = await setup(alice, guardrails={"call_start_hour": 9, "call_end_hour": 17})
    body = (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).json()
    assert body["status"] == "scheduled"
    response = await alice.post(f"/call/{body['run_id']}/hangup")
    assert response.json()["status"] == "canceled"
    async with make_session_factory(api.engine)() as session:
        later = datetime(2026, 1, 16, 14, 0, tzinfo=UTC)
        assert await claim_due_calls(session, now=later) == []
