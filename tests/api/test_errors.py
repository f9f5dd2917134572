"""Bad input of every kind gets the seed's error shapes, never a 500, never an echo."""

from __future__ import annotations

import json

import httpx
import pytest

from api.conftest import Api
from api.helpers import MISSING_ID, assert_message, assert_validation, make_trunk

MARKER = "ECHO-MARKER-7f3a"


async def test_malformed_json(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    headers = {"Content-Type": "application/json"}
    for method, url in (
        ("POST", "/trunk/trunks"),
        ("PATCH", f"/trunk/trunks/{trunk['id']}"),
        ("POST", f"/trunk/trunks/{trunk['id']}/gateways"),
        ("POST", f"/trunk/trunks/{trunk['id']}/numbers"),
    ):
        for raw in (b'{"name": "' + MARKER.encode(), b"\xff\xfe" + MARKER.encode(), b"[1,", b""):
            response = await alice.request(method, url, content=raw, headers=headers)
            assert_validation(response)
            assert MARKER not in response.text


@pytest.mark.parametrize(
    "body", [[], [{"name": "x"}], "name", 42, None, True, {"name": {"nested": MARKER}}]
)
async def test_wrong_body_types(alice: httpx.AsyncClient, body: object) -> None:
    response = await alice.post("/trunk/trunks", json=body)
    assert_validation(response)
    assert MARKER not in response.text


async def test_non_json_content_type(alice: httpx.AsyncClient) -> None:
    response = await alice.post(
        "/trunk/trunks",
        content=json.dumps({"name": MARKER}),
        headers={"Content-Type": "text/plain"},
    )
    assert_validation(response, ("body",))
    assert MARKER not in response.text


@pytest.mark.parametrize(
    ("field", "size"),
    [
        ("name", 900_000 // 16),
        ("description", 60_000),
        ("codecs", 50_000),
        ("auth_username", 40_000),
    ],
)
async def test_huge_strings_are_422_without_echo(
    api: Api, alice: httpx.AsyncClient, field: str, size: int
) -> None:
    value = (MARKER * (size // len(MARKER) + 1))[:size]
    body = {"name": "x", field: value}
    if field == "auth_username":
        body["auth_password"] = "p"
    response = await alice.post("/trunk/trunks", json=body)
    if len(json.dumps(body)) > 65_536:
        assert_message(response, 413)
    else:
        assert_validation(response, ("body", field))
    assert MARKER not in response.text


async def test_rejected_input_is_never_echoed(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    cases = [
        ("POST", "/trunk/trunks", {"name": "x", "channels": MARKER}),
        ("POST", "/trunk/trunks", {"name": "x", "preset": MARKER}),
        ("POST", "/trunk/trunks", {"name": "x", "codecs": MARKER}),
        ("POST", "/trunk/trunks", {"name": "x", "transport": MARKER}),
        ("PATCH", f"/trunk/trunks/{trunk['id']}", {"is_active": MARKER}),
        ("POST", f"/trunk/trunks/{trunk['id']}/gateways", {"host": MARKER + ".example!"}),
        ("POST", f"/trunk/trunks/{trunk['id']}/gateways", {"host": MARKER.lower() + ".example"}),
        ("POST", f"/trunk/trunks/{trunk['id']}/ip-acls", {"cidr": MARKER}),
        ("POST", f"/trunk/trunks/{trunk['id']}/numbers", {"e164": MARKER}),
    ]
    for method, url, body in cases:
        response = await alice.request(method, url, json=body)
        assert_validation(response)
        assert MARKER not in response.text and MARKER.lower() not in response.text
        assert '"input"' not in response.text and '"ctx"' not in response.text
        assert '"url"' not in response.text


@pytest.mark.parametrize(
    "path",
    [
        f"/trunk/trunks/{MARKER}",
        f"/trunk/trunks/{MISSING_ID}/gateways/{MARKER}",
        f"/trunk/trunks/{MARKER}/numbers/{MISSING_ID}",
        "/trunk/trunks/123",
    ],
)
async def test_non_uuid_ids_are_422(alice: httpx.AsyncClient, path: str) -> None:
    method = "DELETE" if path.count("/") > 3 else "GET"
    response = await alice.request(method, path)
    detail = assert_validation(response)
    assert detail[0]["loc"][0] == "path"
    assert MARKER not in response.text


async def test_uuid_ids_in_other_spellings(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    shouting = trunk["id"].upper()
    response = await alice.get(f"/trunk/trunks/{shouting}")
    assert response.status_code == 200 and response.json()["id"] == trunk["id"]


async def test_body_size_limit(alice: httpx.AsyncClient) -> None:
    big = {"name": "x", "description": "d" * 70_000}
    message = assert_message(await alice.post("/trunk/trunks", json=big), 413)
    assert "too large" in message
    trunk = await make_trunk(alice)
    assert_message(await alice.patch(f"/trunk/trunks/{trunk['id']}", json=big), 413)


async def test_unknown_routes_and_methods(alice: httpx.AsyncClient) -> None:
    assert_message(await alice.get("/trunk/nothing"), 404)
    assert_message(await alice.put("/trunk/trunks"), 405)


async def test_a_failing_subscriber_does_not_fail_the_request(
    api: Api, alice: httpx.AsyncClient
) -> None:
    def broken(_change: object) -> None:
        raise RuntimeError("subscriber bug")

    api.notifier.subscribe(broken)
    trunk = await make_trunk(alice)
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).status_code == 200


@pytest.mark.parametrize("value", ["nul\u0000inside", "lone \ud800 surrogate"])
async def test_unstorable_text_is_422(alice: httpx.AsyncClient, value: str) -> None:
    trunk = await make_trunk(alice)
    for method, url, body in (
        ("POST", "/trunk/trunks", {"name": value}),
        ("PATCH", f"/trunk/trunks/{trunk['id']}", {"description": value}),
        (
            "POST",
            f"/trunk/trunks/{trunk['id']}/numbers",
            {"e164": "+14155550123", "agent_id": value},
        ),
        ("POST", "/trunk/trunks", {"name": "x", "gateways": [{"host": value}]}),
    ):
        raw = json.dumps(body)  # ASCII escapes: the lone surrogate travels as \\ud800
        headers = {"Content-Type": "application/json"}
        assert_validation(await alice.request(method, url, content=raw, headers=headers))


async def test_deeply_nested_json(alice: httpx.AsyncClient) -> None:
    raw = b"[" * 30_000 + b"]" * 30_000
    response = await alice.post(
        "/trunk/trunks", content=raw, headers={"Content-Type": "application/json"}
    )
    assert response.status_code in (400, 422)
    assert set(response.json()) in ({"message"}, {"detail"})


async def test_deep_nesting_inside_a_field(alice: httpx.AsyncClient) -> None:
    for depth in (100, 500, 900):
        raw = '{"name": "x", "description": ' + "[" * depth + "]" * depth + "}"
        response = await alice.post(
            "/trunk/trunks", content=raw, headers={"Content-Type": "application/json"}
        )
        assert response.status_code in (400, 422), response.text
        assert set(response.json()) in ({"message"}, {"detail"})


async def test_missing_patch_body(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    assert_validation(await alice.patch(f"/trunk/trunks/{trunk['id']}"), ("body",))
