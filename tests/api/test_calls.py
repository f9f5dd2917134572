"""GET /trunk/trunks/{trunk_id}/calls: shape, newest first, pagination, ownership."""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx

from api.conftest import Api
from api.helpers import MISSING_ID, assert_message, assert_validation, make_trunk
from api.runtime_helpers import T0, call_event
from sipedge.runtime.call_record_writer import CallRecordWriter
from sipedge.store.db import make_session_factory

CALL_KEYS = {
    "run_id",
    "trunk_id",
    "number_id",
    "agent_id",
    "direction",
    "from",
    "to",
    "carrier_call_id",
    "agent_call_id",
    "started_at",
    "answered_at",
    "ended_at",
    "final_sip_code",
    "decided_by",
    "hangup_side",
    "duration_seconds",
}


async def _write(api: Api, *events: object) -> None:
    writer = CallRecordWriter(make_session_factory(api.engine))
    for item in events:
        writer.record(item)  # type: ignore[arg-type]
    await writer.stop()
    assert writer.lost == 0


async def test_exact_shape_of_a_record(api: Api, alice: httpx.AsyncClient) -> None:
    agent = await api.agent("alice")
    trunk = await make_trunk(alice, numbers=[{"e164": "+14155550123"}])
    number_id = trunk["numbers"][0]["id"]
    await _write(api, call_event(trunk["id"], number_id=number_id, agent_id=agent))
    response = await alice.get(f"/trunk/trunks/{trunk['id']}/calls")
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"items", "total", "limit", "offset"}
    assert (body["total"], body["limit"], body["offset"]) == (1, 50, 0)
    (item,) = body["items"]
    assert set(item) == CALL_KEYS
    assert item["run_id"] == "run-0"
    assert (item["trunk_id"], item["number_id"], item["agent_id"]) == (
        trunk["id"],
        number_id,
        agent,
    )
    assert (item["direction"], item["from"], item["to"]) == (
        "inbound",
        "+14155550100",
        "+14155550123",
    )
    assert item["carrier_call_id"] == "carrier-0@203.0.113.5"
    assert item["agent_call_id"] == "agent-0@127.0.0.1"
    assert datetime.fromisoformat(item["started_at"]) == T0
    assert datetime.fromisoformat(item["answered_at"]) == T0 + timedelta(seconds=2)
    assert datetime.fromisoformat(item["ended_at"]) == T0 + timedelta(seconds=32)
    assert (item["final_sip_code"], item["decided_by"], item["hangup_side"]) == (
        200,
        "answered",
        "carrier",
    )
    assert item["duration_seconds"] == 30.0


async def test_a_refused_call_shows_its_code_and_rule(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    refused = call_event(
        trunk["id"],
        final_sip_code=486,
        decided_by="channels",
        answered_at=None,
        hangup_side="edge",
        agent_call_id=None,
    )
    await _write(api, refused)
    (item,) = (await alice.get(f"/trunk/trunks/{trunk['id']}/calls")).json()["items"]
    assert (item["final_sip_code"], item["decided_by"], item["hangup_side"]) == (
        486,
        "channels",
        "edge",
    )
    assert item["answered_at"] is None and item["duration_seconds"] is None
    assert item["agent_call_id"] is None


async def test_newest_first_and_pagination(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    other = await make_trunk(alice, name="other")
    order = [3, 0, 4, 1, 2]  # written out of order
    await _write(api, *(call_event(trunk["id"], n) for n in order), call_event(other["id"], 9))
    base = f"/trunk/trunks/{trunk['id']}/calls"
    everything = (await alice.get(base)).json()
    assert everything["total"] == 5
    assert [i["run_id"] for i in everything["items"]] == [f"run-{n}" for n in (4, 3, 2, 1, 0)]
    page = (await alice.get(base, params={"limit": 2, "offset": 1})).json()
    assert (page["total"], page["limit"], page["offset"]) == (5, 2, 1)
    assert [i["run_id"] for i in page["items"]] == ["run-3", "run-2"]
    past = (await alice.get(base, params={"offset": 10})).json()
    assert past["items"] == [] and past["total"] == 5
    top = (await alice.get(base, params={"limit": 200})).json()
    assert len(top["items"]) == 5


async def test_pagination_bounds_are_422(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    base = f"/trunk/trunks/{trunk['id']}/calls"
    assert_validation(await alice.get(base, params={"limit": 0}), ("query", "limit"))
    assert_validation(await alice.get(base, params={"limit": 201}), ("query", "limit"))
    assert_validation(await alice.get(base, params={"offset": -1}), ("query", "offset"))
    assert_validation(await alice.get(base, params={"limit": "x"}), ("query", "limit"))
    assert_validation(await alice.get("/trunk/trunks/not-a-uuid/calls"), ("path", "trunk_id"))


async def test_another_accounts_trunk_is_404_naming_the_id(
    api: Api, alice: httpx.AsyncClient
) -> None:
    trunk = await make_trunk(alice)
    await _write(api, call_event(trunk["id"]))
    bob = await api.client("bob")
    message = assert_message(await bob.get(f"/trunk/trunks/{trunk['id']}/calls"), 404)
    assert trunk["id"] in message
    org = await api.client("carol", org="org-1")
    assert_message(await org.get(f"/trunk/trunks/{trunk['id']}/calls"), 404)
    missing = assert_message(await alice.get(f"/trunk/trunks/{MISSING_ID}/calls"), 404)
    assert MISSING_ID in missing


async def test_deleted_trunk_is_404(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    await _write(api, call_event(trunk["id"]))
    assert (await alice.delete(f"/trunk/trunks/{trunk['id']}")).status_code == 200
    message = assert_message(await alice.get(f"/trunk/trunks/{trunk['id']}/calls"), 404)
    assert trunk["id"] in message


async def test_organisation_members_see_the_organisations_calls(api: Api) -> None:
    admin = await api.client("org-admin", org="org-1")
    member = await api.client("someone", org="org-1")
    trunk = await make_trunk(admin)
    await _write(api, call_event(trunk["id"]))
    body = (await member.get(f"/trunk/trunks/{trunk['id']}/calls")).json()
    assert body["total"] == 1


async def test_needs_a_token(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    anonymous = api.raw_client()
    response = await anonymous.get(f"/trunk/trunks/{trunk['id']}/calls")
    assert_message(response, 401)
