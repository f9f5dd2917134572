"""Carrier IPs: netaddr normalisation, the /16 and /32 floors, duplicates, removal."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api.conftest import Api
from api.helpers import (
    CARRIER_IP_KEYS,
    MISSING_ID,
    assert_conflict,
    assert_message,
    assert_validation,
    make_trunk,
)


async def _add(client: httpx.AsyncClient, trunk_id: str, body: Any) -> httpx.Response:
    return await client.post(f"/trunk/trunks/{trunk_id}/ip-acls", json=body)


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("8.8.8.8", "8.8.8.8/32"),
        ("8.8.8.0/24", "8.8.8.0/24"),
        ("203.0.0.0/16", "203.0.0.0/16"),
        (" 8.8.8.8/32 ", "8.8.8.8/32"),
        ("2001:DB8::1", "2001:db8::1/128"),
        ("2001:db8::/32", "2001:db8::/32"),
    ],
)
async def test_cidr_is_normalised(alice: httpx.AsyncClient, sent: str, stored: str) -> None:
    trunk = await make_trunk(alice)
    response = await _add(alice, trunk["id"], {"cidr": sent})
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == CARRIER_IP_KEYS
    assert body["cidr"] == stored and body["trunk_id"] == trunk["id"]
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()["ip_acls"] == [body]


@pytest.mark.parametrize(
    "cidr",
    [
        "8.8.8.1/24",  # host bits set
        "8.0.0.0/15",  # wider than /16
        "0.0.0.0/0",
        "2001:db8::/31",
        "8.8.8.8/33",
        "8.8.8.8/abc",
        "999.1.1.1",
        "not an address",
        "",
        "1" * 70,
    ],
)
async def test_bad_cidrs_are_422(alice: httpx.AsyncClient, cidr: str) -> None:
    trunk = await make_trunk(alice)
    response = await _add(alice, trunk["id"], {"cidr": cidr})
    assert_validation(response, ("body", "cidr"))
    if len(cidr) > 3:
        assert cidr not in response.text


@pytest.mark.parametrize("body", [{}, {"cidr": None}, {"cidr": 8}, {"cidr": "8.8.8.8", "x": 1}])
async def test_carrier_ip_body_validation(alice: httpx.AsyncClient, body: dict[str, Any]) -> None:
    trunk = await make_trunk(alice)
    assert_validation(await _add(alice, trunk["id"], body))


async def test_same_cidr_twice_is_conflict(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    first = await _add(alice, trunk["id"], {"cidr": "8.8.8.8"})
    assert first.status_code == 201
    assert_conflict(await _add(alice, trunk["id"], {"cidr": "8.8.8.8/32"}), "conflict")
    # another trunk (any account) may list the same addresses
    other = await make_trunk(await api.client("bob"))
    assert (
        await _add(await api.client("bob"), other["id"], {"cidr": "8.8.8.8"})
    ).status_code == 201
    # after removal the CIDR may be added again
    ip_id = first.json()["id"]
    removed = await alice.delete(f"/trunk/trunks/{trunk['id']}/ip-acls/{ip_id}")
    assert removed.status_code == 200 and removed.json() == {"id": ip_id, "is_deleted": True}
    assert (await _add(alice, trunk["id"], {"cidr": "8.8.8.8"})).status_code == 201


async def test_remove_carrier_ip_404s(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, ip_acls=[{"cidr": "8.8.8.8"}])
    other = await make_trunk(alice)
    ip_id = trunk["ip_acls"][0]["id"]
    message = assert_message(
        await alice.delete(f"/trunk/trunks/{trunk['id']}/ip-acls/{MISSING_ID}"), 404
    )
    assert MISSING_ID in message
    assert_message(await alice.delete(f"/trunk/trunks/{other['id']}/ip-acls/{ip_id}"), 404)
    assert (await alice.delete(f"/trunk/trunks/{trunk['id']}/ip-acls/{ip_id}")).status_code == 200
    assert_message(await alice.delete(f"/trunk/trunks/{trunk['id']}/ip-acls/{ip_id}"), 404)
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()["ip_acls"] == []
