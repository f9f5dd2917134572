"""Create with nested gateways, carrier IPs and numbers: one transaction, all or nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api.conftest import Api
from api.helpers import CREDS, assert_conflict, assert_message, assert_validation, make_trunk

TABLES = ("trunks", "gateways", "carrier_ips", "trunk_numbers")


async def _counts(api: Api) -> dict[str, int]:
    return {t: int(await api.scalar(f"SELECT count(*) FROM {t}")) for t in TABLES}


async def test_nested_create(api: Api, alice: httpx.AsyncClient) -> None:
    agent = await api.agent("alice")
    trunk = await make_trunk(
        alice,
        gateways=[
            {"host": "sip2.carrier.example", "priority": 2},
            {"host": "sip.carrier.example", "port": 5080, "priority": 1},
            {"host": "1.1.1.1", "priority": 2},
        ],
        ip_acls=[{"cidr": "8.8.8.0/24"}, {"cidr": "2001:db8::/32"}, {"cidr": "9.9.9.9"}],
        numbers=[
            {"e164": "+14155550125", "agent_id": agent},
            {"e164": "+14155550123"},
            {"e164": "+442079460018"},
        ],
    )
    assert [(g["host"], g["priority"]) for g in trunk["gateways"]] == [
        ("sip.carrier.example", 1),
        ("sip2.carrier.example", 2),
        ("1.1.1.1", 2),
    ]
    assert trunk["gateways"][0]["resolved_ips"] == ["8.8.4.4", "8.8.8.8"]
    assert [i["cidr"] for i in trunk["ip_acls"]] == ["8.8.8.0/24", "2001:db8::/32", "9.9.9.9/32"]
    assert [n["e164"] for n in trunk["numbers"]] == [
        "+14155550125",
        "+14155550123",
        "+442079460018",
    ]
    assert trunk["numbers"][0]["agent_id"] == agent
    assert all(
        child["trunk_id"] == trunk["id"]
        for kind in ("gateways", "ip_acls", "numbers")
        for child in trunk[kind]
    )
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json() == trunk


@pytest.mark.parametrize(
    ("extra", "status", "code"),
    [
        ({"gateways": [{"host": "1.1.1.1"}, {"host": "nowhere.carrier.example"}]}, 422, None),
        ({"gateways": [{"host": "1.1.1.1"}, {"host": "10.0.0.1"}]}, 422, None),
        ({"gateways": [{"host": "1.1.1.1"}, {"host": "1.1.1.1"}]}, 409, "conflict"),
        ({"ip_acls": [{"cidr": "8.8.8.8"}, {"cidr": "8.8.8.8/32"}]}, 409, "conflict"),
        ({"ip_acls": [{"cidr": "8.8.8.8"}, {"cidr": "8.0.0.0/8"}]}, 422, None),
        ({"numbers": [{"e164": "+14155550123"}, {"e164": "14155550123"}]}, 409, "number_taken"),
        ({"numbers": [{"e164": "+14155550123"}, {"e164": "+1"}]}, 422, None),
        ({"numbers": [{"e164": "+14155550199"}]}, 409, "number_taken"),  # live elsewhere
        ({"numbers": [{"e164": "+14155550123", "agent_id": "BOB"}]}, 400, None),
        ({"gateways": [{"host": "sip.carrier.example"}]}, 409, "gateway_conflict"),
        (
            {
                "gateways": [{"host": "1.1.1.1"}],
                "ip_acls": [{"cidr": "8.8.8.8"}],
                "numbers": [{"e164": "+14155550199"}],
            },
            409,
            "number_taken",
        ),
        ({"default_inbound_agent_id": "BOB", "ip_acls": [{"cidr": "8.8.8.8"}]}, 400, None),
    ],
)
async def test_a_bad_nested_item_writes_nothing(
    api: Api, alice: httpx.AsyncClient, extra: dict[str, Any], status: int, code: str | None
) -> None:
    bob = await api.client("bob")
    await make_trunk(
        bob, numbers=[{"e164": "+14155550199"}], gateways=[{"host": "sip.carrier.example"}]
    )
    bobs_agent = await api.agent("bob")
    body = {"name": "all or nothing", **extra}
    for item in body.get("numbers", []):
        if item.get("agent_id") == "BOB":
            item["agent_id"] = bobs_agent
    if body.get("default_inbound_agent_id") == "BOB":
        body["default_inbound_agent_id"] = bobs_agent
    before = await _counts(api)
    changes = len(api.changes)
    response = await alice.post("/trunk/trunks", json=body)
    if status == 422:
        assert_validation(response)
    elif status == 409:
        assert code is not None
        assert_conflict(response, code)
    else:
        assert_message(response, status)
    assert await _counts(api) == before
    assert len(api.changes) == changes
    assert (await alice.get("/trunk/trunks")).json()["total"] == 0


async def test_nested_gateway_error_location(alice: httpx.AsyncClient) -> None:
    response = await alice.post(
        "/trunk/trunks",
        json={"name": "x", "gateways": [{"host": "1.1.1.1"}, {"host": "nowhere.carrier.example"}]},
    )
    assert_validation(response, ("body", "gateways", 1, "host"))


@pytest.mark.parametrize("kind", ["gateways", "ip_acls", "numbers"])
async def test_nested_lists_are_bounded_and_not_null(alice: httpx.AsyncClient, kind: str) -> None:
    item = {
        "gateways": {"host": "1.1.1.1"},
        "ip_acls": {"cidr": "8.8.8.8"},
        "numbers": {"e164": "+14155550123"},
    }[kind]
    assert_validation(
        await alice.post("/trunk/trunks", json={"name": "x", kind: [item] * 101}), ("body", kind)
    )
    response = await alice.post("/trunk/trunks", json={"name": "x", kind: None})
    detail = assert_validation(response, ("body", kind))
    assert detail[0]["msg"] == f"fields cannot be null: {kind}"
    assert_validation(
        await alice.post("/trunk/trunks", json={"name": "x", kind: item}), ("body", kind)
    )


async def test_nested_gateways_share_with_credentials(api: Api) -> None:
    bob = await api.client("bob")
    await make_trunk(bob, gateways=[{"host": "sip.carrier.example"}], **CREDS)
    alice = await api.client("alice")
    trunk = await make_trunk(alice, gateways=[{"host": "sip.carrier.example"}], **CREDS)
    assert len(trunk["gateways"]) == 1
