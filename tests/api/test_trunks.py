"""Trunk create / list / get / delete: shapes, defaults, pagination, soft delete."""

from __future__ import annotations

from datetime import datetime

import httpx

from api.conftest import Api
from api.helpers import (
    CARRIER_IP_KEYS,
    CREDS,
    GATEWAY_KEYS,
    MISSING_ID,
    NUMBER_KEYS,
    TRUNK_KEYS,
    assert_message,
    assert_validation,
    make_trunk,
)


async def test_create_defaults_and_exact_shape(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, name="Plivo main")
    assert set(trunk) == TRUNK_KEYS
    assert trunk["name"] == "Plivo main"
    assert trunk["is_active"] is True
    assert trunk["inbound_enabled"] is True
    assert trunk["outbound_enabled"] is True
    assert trunk["channels"] == 10
    assert trunk["transport"] == "udp"
    assert trunk["codecs"] == "PCMU,PCMA"
    assert trunk["outbound_leading_plus_enabled"] is True
    assert trunk["health"] == "waiting_for_carrier"
    assert trunk["active_calls"] == 0
    assert trunk["is_deleted"] is False and trunk["deleted_at"] is None
    assert trunk["description"] is None and trunk["preset"] is None
    assert trunk["auth_username"] is None
    assert trunk["last_inbound_at"] is None and trunk["last_outbound_at"] is None
    assert trunk["converted_from_byot_trunk_id"] is None
    assert (trunk["user_id"], trunk["organization_id"], trunk["sub_account_id"]) == (
        "alice",
        None,
        None,
    )
    assert trunk["gateways"] == [] and trunk["ip_acls"] == [] and trunk["numbers"] == []
    created = datetime.fromisoformat(trunk["created_at"])
    offset = created.utcoffset()
    assert offset is not None and offset.total_seconds() == 0


async def test_create_with_every_field(api: Api, alice: httpx.AsyncClient) -> None:
    agent = await api.agent("alice")
    body = {
        "name": "full",
        "description": "a note",
        "preset": "telnyx",
        "is_active": False,
        "inbound_enabled": False,
        "outbound_enabled": False,
        "channels": 1000,
        "default_inbound_agent_id": agent,
        "transport": "tcp",
        "codecs": "PCMA",
        "outbound_leading_plus_enabled": False,
        **CREDS,
    }
    trunk = await make_trunk(alice, **body)
    for key, value in body.items():
        if key != "auth_password":
            assert trunk[key] == value, key
    assert trunk["health"] == "disabled"


async def test_create_requires_name(alice: httpx.AsyncClient) -> None:
    assert_validation(await alice.post("/trunk/trunks", json={}), ("body", "name"))
    response = await alice.post("/trunk/trunks", json={"name": None})
    detail = assert_validation(response, ("body", "name"))
    assert detail[0]["msg"] == "fields cannot be null: name"


async def test_create_rejects_unknown_fields(alice: httpx.AsyncClient) -> None:
    for field, value in (("id", MISSING_ID), ("health", "ready"), ("is_deleted", True)):
        response = await alice.post("/trunk/trunks", json={"name": "x", field: value})
        assert_validation(response, ("body", field))


async def test_password_is_never_returned(api: Api, alice: httpx.AsyncClient) -> None:
    secret = CREDS["auth_password"]
    trunk = await make_trunk(alice, **CREDS)
    tid = trunk["id"]
    responses = [
        await alice.get(f"/trunk/trunks/{tid}"),
        await alice.get("/trunk/trunks"),
        await alice.patch(f"/trunk/trunks/{tid}", json={"name": "renamed"}),
        await alice.patch(
            f"/trunk/trunks/{tid}", json={"auth_username": "u2", "auth_password": secret + "2"}
        ),
        await alice.delete(f"/trunk/trunks/{tid}"),
    ]
    for response in responses:
        assert response.status_code == 200
        assert "auth_password" not in response.text
        assert secret not in response.text
    assert "auth_password" not in trunk
    # but it is stored for the edge's digest answers
    assert await api.scalar("SELECT auth_password FROM trunks WHERE id = :id", id=tid) == (
        secret + "2"
    )


async def test_get_and_404_naming_the_id(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    response = await alice.get(f"/trunk/trunks/{trunk['id']}")
    assert response.status_code == 200
    assert response.json() == trunk
    message = assert_message(await alice.get(f"/trunk/trunks/{MISSING_ID}"), 404)
    assert MISSING_ID in message


async def test_list_pagination(alice: httpx.AsyncClient) -> None:
    ids = [(await make_trunk(alice, name=f"t{i}"))["id"] for i in range(5)]
    page = (await alice.get("/trunk/trunks")).json()
    assert (page["total"], page["limit"], page["offset"]) == (5, 50, 0)
    assert [t["id"] for t in page["items"]] == ids
    assert all(set(t) == TRUNK_KEYS for t in page["items"])
    page = (await alice.get("/trunk/trunks", params={"limit": 2, "offset": 1})).json()
    assert [t["id"] for t in page["items"]] == ids[1:3]
    assert (page["total"], page["limit"], page["offset"]) == (5, 2, 1)
    page = (await alice.get("/trunk/trunks", params={"limit": 200, "offset": 10})).json()
    assert page["items"] == [] and page["total"] == 5


async def test_list_bounds(alice: httpx.AsyncClient) -> None:
    for params, loc in (
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"offset": -1}, "offset"),
    ):
        assert_validation(await alice.get("/trunk/trunks", params=params), ("query", loc))


async def test_active_calls_come_from_the_edge(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    api.calls[trunk["id"]] = 3
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()["active_calls"] == 3


async def test_health_disabled_follows_is_active(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    url = f"/trunk/trunks/{trunk['id']}"
    assert (await alice.patch(url, json={"is_active": False})).json()["health"] == "disabled"
    back = (await alice.patch(url, json={"is_active": True})).json()
    assert back["health"] == "waiting_for_carrier"


async def test_delete_is_soft_and_takes_children(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(
        alice,
        gateways=[{"host": "sip.carrier.example"}],
        ip_acls=[{"cidr": "8.8.8.0/24"}],
        numbers=[{"e164": "+14155550123"}],
    )
    tid = trunk["id"]
    response = await alice.delete(f"/trunk/trunks/{tid}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == TRUNK_KEYS
    assert body["is_deleted"] is True and body["deleted_at"] is not None
    for kind, keys in (
        ("gateways", GATEWAY_KEYS),
        ("ip_acls", CARRIER_IP_KEYS),
        ("numbers", NUMBER_KEYS),
    ):
        assert len(body[kind]) == 1 and set(body[kind][0]) == keys
        assert body[kind][0]["is_deleted"] is True
    assert_message(await alice.get(f"/trunk/trunks/{tid}"), 404)
    assert_message(await alice.delete(f"/trunk/trunks/{tid}"), 404)
    assert_message(await alice.patch(f"/trunk/trunks/{tid}", json={"name": "x"}), 404)
    assert (await alice.get("/trunk/trunks")).json()["total"] == 0
    for table in ("trunks", "gateways", "carrier_ips", "trunk_numbers"):
        live = await api.scalar(f"SELECT count(*) FROM {table} WHERE is_deleted = false")
        total = await api.scalar(f"SELECT count(*) FROM {table}")
        assert (live, total) == (0, 1), table


async def test_children_of_a_deleted_trunk_are_unreachable(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, gateways=[{"host": "sip.carrier.example"}])
    tid, gid = trunk["id"], trunk["gateways"][0]["id"]
    await alice.delete(f"/trunk/trunks/{tid}")
    assert_message(await alice.delete(f"/trunk/trunks/{tid}/gateways/{gid}"), 404)
    assert_message(await alice.post(f"/trunk/trunks/{tid}/ip-acls", json={"cidr": "8.8.8.8"}), 404)
    assert_message(
        await alice.post(f"/trunk/trunks/{tid}/numbers", json={"e164": "+14155550123"}), 404
    )


async def test_healthz_and_docs_are_open(api: Api) -> None:
    client = api.raw_client()
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/docs")).status_code == 200
    schema = (await client.get("/openapi.json")).json()
    assert "/trunk/trunks/{trunk_id}/gateways/{gateway_id}" in schema["paths"]
