"""Trunk numbers: E.164 normalisation, number_taken across accounts, agents, re-adding."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from api.conftest import Api
from api.helpers import (
    MISSING_ID,
    NUMBER_KEYS,
    assert_conflict,
    assert_message,
    assert_validation,
    make_trunk,
)

NUMBER = "+14155550123"


async def _add(client: httpx.AsyncClient, trunk_id: str, body: Any) -> httpx.Response:
    return await client.post(f"/trunk/trunks/{trunk_id}/numbers", json=body)


@pytest.mark.parametrize("sent", ["+14155550123", "14155550123", "+1 (415) 555-0123"])
async def test_add_number_normalised(alice: httpx.AsyncClient, sent: str) -> None:
    trunk = await make_trunk(alice)
    response = await _add(alice, trunk["id"], {"e164": sent})
    assert response.status_code == 201, response.text
    number = response.json()
    assert set(number) == NUMBER_KEYS
    assert (number["e164"], number["destination_key"]) == (NUMBER, "14155550123")
    assert number["agent_id"] is None and number["trunk_id"] == trunk["id"]
    assert number["last_inbound_at"] is None and number["last_outbound_at"] is None
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()["numbers"] == [number]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"e164": None},
        {"e164": ""},
        {"e164": "+1415555"},  # too short to be valid
        {"e164": "+999123456789"},
        {"e164": "call me"},
        {"e164": 14155550123},
        {"e164": "+" + "1" * 80},
        {"e164": NUMBER, "agent_id": 5},
        {"e164": NUMBER, "trunk_id": MISSING_ID},
    ],
)
async def test_number_body_validation(alice: httpx.AsyncClient, body: dict[str, Any]) -> None:
    trunk = await make_trunk(alice)
    assert_validation(await _add(alice, trunk["id"], body))


async def test_numbers_oldest_first(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    sent = ["+14155550125", "+14155550123", "+442079460018"]
    for e164 in sent:
        assert (await _add(alice, trunk["id"], {"e164": e164})).status_code == 201
    shown = (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()
    assert [n["e164"] for n in shown["numbers"]] == sent


async def test_number_taken_across_accounts(api: Api, alice: httpx.AsyncClient) -> None:
    bob = await api.client("bob")
    org = await api.client("carol", org="org-1")
    mine = await make_trunk(alice)
    assert (await _add(alice, mine["id"], {"e164": NUMBER})).status_code == 201
    assert_conflict(await _add(alice, mine["id"], {"e164": "14155550123"}), "number_taken")
    second = await make_trunk(alice)
    assert_conflict(await _add(alice, second["id"], {"e164": NUMBER}), "number_taken")
    for client in (bob, org):
        theirs = await make_trunk(client)
        assert_conflict(await _add(client, theirs["id"], {"e164": NUMBER}), "number_taken")
        response = await client.post(
            "/trunk/trunks", json={"name": "x", "numbers": [{"e164": NUMBER}]}
        )
        assert_conflict(response, "number_taken")


async def test_deleted_number_may_be_added_again(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, numbers=[{"e164": NUMBER}])
    number_id = trunk["numbers"][0]["id"]
    removed = await alice.delete(f"/trunk/trunks/{trunk['id']}/numbers/{number_id}")
    assert removed.status_code == 200
    assert removed.json() == {"id": number_id, "is_deleted": True}
    bob = await api.client("bob")
    other = await make_trunk(bob)
    again = await _add(bob, other["id"], {"e164": NUMBER})
    assert again.status_code == 201 and again.json()["id"] != number_id
    # and a deleted trunk's numbers are free too
    await bob.delete(f"/trunk/trunks/{other['id']}")
    assert (await _add(alice, trunk["id"], {"e164": NUMBER})).status_code == 201


async def test_concurrent_adds_give_one_number(api: Api) -> None:
    clients = [await api.client(f"user{i}") for i in range(4)]
    trunks = [await make_trunk(c) for c in clients]
    responses = await asyncio.gather(
        *(_add(c, t["id"], {"e164": NUMBER}) for c, t in zip(clients, trunks, strict=True))
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201, 409, 409, 409], [r.text for r in responses]
    for response in responses:
        if response.status_code == 409:
            assert_conflict(response, "number_taken")
    live = await api.scalar(
        "SELECT count(*) FROM trunk_numbers WHERE destination_key = '14155550123' "
        "AND is_deleted = false"
    )
    assert live == 1


async def test_the_database_refuses_a_second_live_number(
    api: Api, alice: httpx.AsyncClient
) -> None:
    """The partial unique index, not only the API's pre-check, keeps a number unique."""
    from sqlalchemy.exc import IntegrityError

    trunk = await make_trunk(alice, numbers=[{"e164": NUMBER}])
    insert = (
        "INSERT INTO trunk_numbers (id, trunk_id, e164, destination_key, created_at, updated_at,"
        " is_deleted) VALUES (:id, :trunk, '+14155550123', '14155550123', CURRENT_TIMESTAMP,"
        " CURRENT_TIMESTAMP, false)"
    )
    params = {"id": MISSING_ID, "trunk": trunk["id"]}
    with pytest.raises(IntegrityError):
        await api.execute(insert, **params)


async def test_number_agent_must_be_the_callers(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    mine = await api.agent("alice")
    bobs = await api.agent("bob")
    for agent_id in (bobs, MISSING_ID, "x" * 5000):
        response = await _add(alice, trunk["id"], {"e164": NUMBER, "agent_id": agent_id})
        assert "agent_id" in assert_message(response, 400)
        assert "x" * 50 not in response.text
    response = await _add(alice, trunk["id"], {"e164": NUMBER, "agent_id": mine})
    assert response.status_code == 201 and response.json()["agent_id"] == mine


async def test_assign_agent_to_number(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, numbers=[{"e164": NUMBER}])
    number = trunk["numbers"][0]
    url = f"/trunk/trunks/{trunk['id']}/numbers/{number['id']}"
    mine = await api.agent("alice")
    response = await alice.patch(url, json={"agent_id": mine})
    assert response.status_code == 200
    assigned = response.json()
    assert set(assigned) == NUMBER_KEYS and assigned["agent_id"] == mine
    assert assigned["updated_at"] >= number["updated_at"]
    shown = (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()
    assert shown["numbers"][0]["agent_id"] == mine
    cleared = await alice.patch(url, json={"agent_id": None})
    assert cleared.status_code == 200 and cleared.json()["agent_id"] is None
    assert_message(await alice.patch(url, json={"agent_id": await api.agent("bob")}), 400)
    assert_validation(await alice.patch(url, json={}), ("body", "agent_id"))
    assert_validation(await alice.patch(url, json={"agent_id": mine, "e164": NUMBER}))
    assert_validation(await alice.patch(url, json={"agent_id": 1}))


async def test_number_404s(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, numbers=[{"e164": NUMBER}])
    other = await make_trunk(alice)
    number_id = trunk["numbers"][0]["id"]
    for method in ("PATCH", "DELETE"):
        url = f"/trunk/trunks/{trunk['id']}/numbers/{MISSING_ID}"
        kwargs: dict[str, Any] = {"json": {"agent_id": None}} if method == "PATCH" else {}
        message = assert_message(await alice.request(method, url, **kwargs), 404)
        assert MISSING_ID in message
        url = f"/trunk/trunks/{other['id']}/numbers/{number_id}"
        assert_message(await alice.request(method, url, **kwargs), 404)
    await alice.delete(f"/trunk/trunks/{trunk['id']}/numbers/{number_id}")
    url = f"/trunk/trunks/{trunk['id']}/numbers/{number_id}"
    assert_message(await alice.delete(url), 404)
    assert_message(await alice.patch(url, json={"agent_id": None}), 404)


async def test_a_lost_race_is_409_not_500(
    api: Api, alice: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both requests pass the pre-check; the unique index refuses the second: 409, no 500."""
    from sipedge.store import carrier_ips, numbers

    trunk = await make_trunk(alice, numbers=[{"e164": NUMBER}], ip_acls=[{"cidr": "8.8.8.8"}])

    async def nothing_taken(*_args: Any, **_kwargs: Any) -> bool:
        return False

    async def no_cidrs(*_args: Any, **_kwargs: Any) -> set[str]:
        return set()

    monkeypatch.setattr(numbers, "any_live_number", nothing_taken)
    monkeypatch.setattr(carrier_ips, "live_cidrs", no_cidrs)
    other = await make_trunk(await api.client("bob"))
    api.changes.clear()
    bob = await api.client("bob")
    assert_conflict(await _add(bob, other["id"], {"e164": NUMBER}), "number_taken")
    response = await alice.post(f"/trunk/trunks/{trunk['id']}/ip-acls", json={"cidr": "8.8.8.8"})
    assert_conflict(response, "conflict")
    assert api.changes == []
    assert await api.scalar("SELECT count(*) FROM trunk_numbers") == 1
    assert await api.scalar("SELECT count(*) FROM carrier_ips") == 1
