"""Random bodies against every write endpoint: never a 500, always one of the seed's shapes."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import httpx

from api.conftest import Api
from api.helpers import make_trunk

FIELDS = [
    "name",
    "description",
    "preset",
    "is_active",
    "inbound_enabled",
    "outbound_enabled",
    "channels",
    "default_inbound_agent_id",
    "auth_username",
    "auth_password",
    "transport",
    "codecs",
    "outbound_leading_plus_enabled",
    "gateways",
    "ip_acls",
    "numbers",
    "host",
    "port",
    "priority",
    "cidr",
    "e164",
    "agent_id",
    "bogus",
]
STRINGS = [
    "",
    "x",
    "x" * 101,
    "y" * 600,
    "PCMU",
    "PCMA,PCMU",
    "udp",
    "tcp",
    "plivo",
    "+14155550123",
    "+14155550124",
    "8.8.8.0/24",
    "8.8.8.8",
    "::1",
    "sip.carrier.example",
    "1.1.1.1",
    "nowhere.carrier.example",
    "é中文",
    "\u0000",
    "\ud800",
    "00000000-0000-4000-8000-000000000000",
]
ALLOWED = {200, 201, 400, 404, 409, 413, 422}


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 10, 1000, 1001, 5060, 65536, 10**20])
    if kind == 3:
        return rng.choice([1.5, -0.0, 1e308])
    if kind in (4, 5):
        return rng.choice(STRINGS)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return _body(rng, depth + 1)


def _body(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    return {rng.choice(FIELDS): _value(rng, depth) for _ in range(rng.randrange(5))}


def _assert_shape(response: httpx.Response) -> None:
    assert response.status_code in ALLOWED, (response.status_code, response.text)
    body = response.json()
    status = response.status_code
    if status in (400, 404, 413):
        assert set(body) == {"message"}
    elif status == 409:
        assert set(body) == {"detail"} and set(body["detail"]) == {"code", "message"}
    elif status == 422:
        assert set(body) == {"detail"}
        assert all(set(item) == {"loc", "msg", "type"} for item in body["detail"])
    else:
        assert "auth_password" not in body


async def test_random_bodies(api: Api, alice: httpx.AsyncClient) -> None:
    rng = random.Random(20261122)
    trunk = await make_trunk(alice, numbers=[{"e164": "+14155550199"}])
    number_id = trunk["numbers"][0]["id"]
    base = f"/trunk/trunks/{trunk['id']}"
    targets = [
        ("POST", "/trunk/trunks"),
        ("PATCH", base),
        ("POST", f"{base}/gateways"),
        ("POST", f"{base}/ip-acls"),
        ("POST", f"{base}/numbers"),
        ("PATCH", f"{base}/numbers/{number_id}"),
        ("PATCH", f"/trunk/trunks/{uuid.uuid4()}"),
    ]
    headers = {"Content-Type": "application/json"}
    for _ in range(120):
        method, url = rng.choice(targets)
        body: Any = _body(rng) if rng.random() < 0.9 else _value(rng)
        raw = json.dumps(body)  # ASCII escapes, so lone surrogates reach the server
        _assert_shape(await alice.request(method, url, content=raw, headers=headers))
    # the trunk is still there and well-formed
    assert (await alice.get(base)).status_code == 200
