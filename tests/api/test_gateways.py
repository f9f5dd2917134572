"""Gateways: add (resolution, public IPv4 only, bounds), remove, and `gateway_conflict`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api.conftest import Api
from api.helpers import (
    CREDS,
    GATEWAY_KEYS,
    MISSING_ID,
    assert_conflict,
    assert_message,
    assert_validation,
    make_trunk,
)


async def _add(client: httpx.AsyncClient, trunk_id: str, body: Any) -> httpx.Response:
    return await client.post(f"/trunk/trunks/{trunk_id}/gateways", json=body)


async def test_add_gateway_defaults_and_shape(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    response = await _add(alice, trunk["id"], {"host": "SIP.Carrier.Example."})
    assert response.status_code == 201
    gateway = response.json()
    assert set(gateway) == GATEWAY_KEYS
    assert gateway["trunk_id"] == trunk["id"]
    assert gateway["host"] == "sip.carrier.example"
    assert gateway["resolved_ips"] == ["8.8.4.4", "8.8.8.8"]
    assert (gateway["port"], gateway["priority"]) == (5060, 0)
    assert gateway["is_deleted"] is False and gateway["deleted_at"] is None
    shown = (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()
    assert shown["gateways"] == [gateway]


async def test_ipv4_literal_needs_no_lookup(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    response = await _add(alice, trunk["id"], {"host": "1.1.1.1", "port": 5080, "priority": 3})
    assert response.status_code == 201
    assert response.json()["resolved_ips"] == ["1.1.1.1"]
    assert (response.json()["port"], response.json()["priority"]) == (5080, 3)
    assert api.resolver.lookups == []


async def test_only_public_addresses_are_kept(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    response = await _add(alice, trunk["id"], {"host": "mixed.carrier.example"})
    assert response.json()["resolved_ips"] == ["1.1.1.1"]


@pytest.mark.parametrize(
    "host",
    [
        "private.carrier.example",
        "loop.carrier.example",
        "10.1.2.3",
        "127.0.0.1",
        "169.254.1.1",
        "224.0.0.1",
        "192.168.0.10",
        "nowhere.carrier.example",
    ],
)
async def test_unusable_hosts_are_422(alice: httpx.AsyncClient, host: str) -> None:
    trunk = await make_trunk(alice)
    assert_validation(await _add(alice, trunk["id"], {"host": host}), ("body", "host"))
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()["gateways"] == []


async def test_private_targets_when_allowed(api: Api) -> None:
    client = await api.client("alice", allow_private=True)
    trunk = await make_trunk(client)
    response = await _add(client, trunk["id"], {"host": "private.carrier.example"})
    assert response.status_code == 201
    assert response.json()["resolved_ips"] == ["10.0.0.5", "192.168.1.1"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"host": None},
        {"host": ""},
        {"host": "h" * 254},
        {"host": "bad_host!.example"},
        {"host": "-lead.example"},
        {"host": "2001:db8::1"},
        {"host": 42},
        {"host": "sip.carrier.example", "port": 0},
        {"host": "sip.carrier.example", "port": 65536},
        {"host": "sip.carrier.example", "port": "5060"},
        {"host": "sip.carrier.example", "port": None},
        {"host": "sip.carrier.example", "priority": -1},
        {"host": "sip.carrier.example", "priority": "1"},
        {"host": "sip.carrier.example", "transport": "udp"},
    ],
)
async def test_gateway_body_validation(alice: httpx.AsyncClient, body: dict[str, Any]) -> None:
    trunk = await make_trunk(alice)
    assert_validation(await _add(alice, trunk["id"], body))


async def test_gateways_ordered_by_priority_then_creation(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    hosts = [("1.1.1.1", 5), ("1.0.0.1", 1), ("9.9.9.9", 5), ("8.8.8.8", 0)]
    for host, priority in hosts:
        assert (
            await _add(alice, trunk["id"], {"host": host, "priority": priority})
        ).status_code == 201
    shown = (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()
    assert [g["host"] for g in shown["gateways"]] == ["8.8.8.8", "1.0.0.1", "1.1.1.1", "9.9.9.9"]


async def test_same_host_and_port_twice_is_409(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    assert (await _add(alice, trunk["id"], {"host": "1.1.1.1"})).status_code == 201
    assert_conflict(await _add(alice, trunk["id"], {"host": "1.1.1.1"}), "conflict")
    assert (await _add(alice, trunk["id"], {"host": "1.1.1.1", "port": 5070})).status_code == 201


async def test_remove_gateway(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, gateways=[{"host": "1.1.1.1"}, {"host": "9.9.9.9"}])
    gid = trunk["gateways"][0]["id"]
    response = await alice.delete(f"/trunk/trunks/{trunk['id']}/gateways/{gid}")
    assert response.status_code == 200
    assert response.json() == {"id": gid, "is_deleted": True}
    shown = (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()
    assert [g["host"] for g in shown["gateways"]] == ["9.9.9.9"]
    again = await alice.delete(f"/trunk/trunks/{trunk['id']}/gateways/{gid}")
    assert gid in assert_message(again, 404)


async def test_remove_gateway_404s(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, gateways=[{"host": "1.1.1.1"}])
    other = await make_trunk(alice)
    gid = trunk["gateways"][0]["id"]
    message = assert_message(
        await alice.delete(f"/trunk/trunks/{trunk['id']}/gateways/{MISSING_ID}"), 404
    )
    assert MISSING_ID in message
    # a gateway of another trunk is not found under this trunk
    assert_message(await alice.delete(f"/trunk/trunks/{other['id']}/gateways/{gid}"), 404)
    message = assert_message(await alice.delete(f"/trunk/trunks/{MISSING_ID}/gateways/{gid}"), 404)
    assert MISSING_ID in message
    assert_validation(await alice.delete(f"/trunk/trunks/{trunk['id']}/gateways/nope"))


@pytest.mark.parametrize(
    ("first_host", "second_host"),
    [
        ("sip.carrier.example", "sip.carrier.example"),  # same host
        ("sip.carrier.example", "shared-ip.carrier.example"),  # a resolved IP in common
        ("8.8.4.4", "shared-ip.carrier.example"),  # literal vs resolved
    ],
)
async def test_gateway_conflict_on_add(
    api: Api, alice: httpx.AsyncClient, first_host: str, second_host: str
) -> None:
    bob = await api.client("bob")
    await make_trunk(alice, gateways=[{"host": first_host}], **CREDS)
    # sharing across accounts without credentials on the new trunk: refused
    bare = await make_trunk(bob)
    assert_conflict(await _add(bob, bare["id"], {"host": second_host}), "gateway_conflict")
    assert (await bob.get(f"/trunk/trunks/{bare['id']}")).json()["gateways"] == []
    # with credentials on both: allowed
    with_creds = await make_trunk(bob, **CREDS)
    assert (await _add(bob, with_creds["id"], {"host": second_host})).status_code == 201


async def test_gateway_conflict_when_the_other_trunk_lacks_credentials(
    alice: httpx.AsyncClient,
) -> None:
    await make_trunk(alice, gateways=[{"host": "sip.carrier.example"}])
    mine = await make_trunk(alice, **CREDS)
    assert_conflict(
        await _add(alice, mine["id"], {"host": "sip.carrier.example"}), "gateway_conflict"
    )
    response = await alice.post(
        "/trunk/trunks", json={"name": "n", "gateways": [{"host": "8.8.8.8"}], **CREDS}
    )
    assert_conflict(response, "gateway_conflict")


async def test_deleted_gateways_and_trunks_do_not_conflict(alice: httpx.AsyncClient) -> None:
    old = await make_trunk(alice, gateways=[{"host": "sip.carrier.example"}])
    await alice.delete(f"/trunk/trunks/{old['id']}")
    fresh = await make_trunk(alice)
    assert (await _add(alice, fresh["id"], {"host": "sip.carrier.example"})).status_code == 201
    shown = (await alice.get(f"/trunk/trunks/{fresh['id']}")).json()
    await alice.delete(f"/trunk/trunks/{fresh['id']}/gateways/{shown['gateways'][0]['id']}")
    third = await make_trunk(alice)
    assert (await _add(alice, third["id"], {"host": "sip.carrier.example"})).status_code == 201
