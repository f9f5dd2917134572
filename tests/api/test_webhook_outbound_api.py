"""Outbound calls' webhooks from the API: `POST /call` writes `queued` (or `scheduled`) with the
call, a cancel before any dialer writes `canceled`; both in the call's own transaction."""

from __future__ import annotations

import json

import httpx
from sqlalchemy import text

from api.agent_helpers import WEBHOOK
from api.conftest import Api
from api.test_outbound_calls import TO, place, setup

ROWS = "SELECT status, seq, url, body FROM webhook_outbox ORDER BY seq"


async def _rows(api: Api) -> list[tuple[str, int, str, dict[str, object]]]:
    async with api.engine.connect() as connection:
        result = await connection.execute(text(ROWS))
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in result]


async def test_queued_then_canceled_reach_the_outbox(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, trunk = await setup(alice)
    response = await place(
        alice, agent_id=agent_id, recipient_phone_number=TO, user_data={"lead": 42}
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    (queued,) = await _rows(api)
    status, seq, url, payload = queued
    assert (status, seq, url) == ("queued", 1, WEBHOOK)
    assert payload["id"] == run_id and payload["agent_id"] == agent_id
    assert payload["user_data"] == {"lead": 42}
    data = payload["telephony_data"]
    assert isinstance(data, dict)
    assert (data["direction"], data["to_number"], data["trunk_id"]) == ("outbound", TO, trunk["id"])

    assert (await alice.post(f"/call/{run_id}/hangup")).json()["status"] == "canceled"
    assert [(r[0], r[1]) for r in await _rows(api)] == [("queued", 1), ("canceled", 2)]
    await alice.post(f"/call/{run_id}/hangup")  # already over: nothing new
    assert len(await _rows(api)) == 2


async def test_no_webhook_no_rows(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id, _ = await setup(alice)
    patched = await alice.patch(
        f"/v2/agent/{agent_id}", json={"agent_config": {"webhook_url": None}}
    )
    assert patched.status_code == 200, patched.text
    assert (await place(alice, agent_id=agent_id, recipient_phone_number=TO)).status_code == 201
    assert await _rows(api) == []
