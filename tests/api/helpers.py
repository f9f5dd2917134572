"""Helpers shared by the API tests."""

from __future__ import annotations

from typing import Any

import httpx

TRUNK_KEYS = {
    "id",
    "name",
    "description",
    "preset",
    "is_active",
    "inbound_enabled",
    "outbound_enabled",
    "channels",
    "default_inbound_agent_id",
    "auth_username",
    "transport",
    "codecs",
    "outbound_leading_plus_enabled",
    "last_inbound_at",
    "last_outbound_at",
    "converted_from_byot_trunk_id",
    "organization_id",
    "sub_account_id",
    "user_id",
    "created_at",
    "updated_at",
    "is_deleted",
    "deleted_at",
    "health",
    "active_calls",
    "gateways",
    "ip_acls",
    "numbers",
}
GATEWAY_KEYS = {
    "id",
    "trunk_id",
    "host",
    "resolved_ips",
    "port",
    "priority",
    "created_at",
    "updated_at",
    "is_deleted",
    "deleted_at",
}
CARRIER_IP_KEYS = {"id", "trunk_id", "cidr", "created_at", "updated_at", "is_deleted", "deleted_at"}
NUMBER_KEYS = {
    "id",
    "trunk_id",
    "e164",
    "destination_key",
    "agent_id",
    "last_inbound_at",
    "last_outbound_at",
    "created_at",
    "updated_at",
    "is_deleted",
    "deleted_at",
}
MISSING_ID = "00000000-0000-4000-8000-000000000000"
CREDS = {"auth_username": "carrier-user", "auth_password": "s3cret-Pa55"}


async def make_trunk(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    """Create a trunk (name defaults) and return its body; asserts 201."""
    body = {"name": "carrier", **fields}
    response = await client.post("/trunk/trunks", json=body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


def assert_validation(
    response: httpx.Response, *locs: tuple[str | int, ...]
) -> list[dict[str, Any]]:
    """A 422 in the seed's shape (no input/ctx/url), with an error at each given loc."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == {"detail"}
    assert isinstance(body["detail"], list) and body["detail"]
    for item in body["detail"]:
        assert set(item) == {"loc", "msg", "type"}, item
        assert isinstance(item["msg"], str) and isinstance(item["type"], str)
    got = [tuple(item["loc"]) for item in body["detail"]]
    for loc in locs:
        assert loc in got, (loc, got)
    detail: list[dict[str, Any]] = body["detail"]
    return detail


def assert_message(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"message"}, body
    message: str = body["message"]
    return message


def assert_conflict(response: httpx.Response, code: str) -> None:
    assert response.status_code == 409, response.text
    body = response.json()
    assert set(body) == {"detail"} and set(body["detail"]) == {"code", "message"}, body
    assert body["detail"]["code"] == code, body
