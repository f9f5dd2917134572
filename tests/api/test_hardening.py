"""API hardening: the per-token rate limit (429 + Retry-After in the seed's shapes), chunked
bodies over the size limit, and secrets that never reach a response body or a log record."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from api.agent_helpers import TOKEN as SOURCE_TOKEN
from api.agent_helpers import agent_body
from api.conftest import Api
from sipedge.api.app import create_app
from sipedge.config import Settings


def limited_client(api: Api, token: str, per_minute: int) -> httpx.AsyncClient:
    settings = Settings(
        database={"url": api.url},  # type: ignore[arg-type]
        http={"rate_limit_per_minute": per_minute},  # type: ignore[arg-type]
    )
    app = create_app(settings, resolver=api.resolver, engine=api.engine)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://sipedge.test",
        headers={"Authorization": f"Bearer {token}"},
    )
    api._clients.append(client)
    return client


async def test_rate_limit_per_token_answers_429_with_retry_after(api: Api) -> None:
    alice, bob = await api.token("alice"), await api.token("bob")
    client = limited_client(api, alice, per_minute=3)
    for _ in range(3):
        assert (await client.get("/trunk/trunks")).status_code == 200
    refused = await client.get("/trunk/trunks")
    assert refused.status_code == 429
    assert refused.json() == {"message": "rate limit exceeded"}
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # Agent paths use the Agent error shape.
    agent = await client.get("/v2/agent")
    assert agent.status_code == 429
    assert agent.json() == {"error": 429, "message": "rate limit exceeded"}
    assert "Retry-After" in agent.headers
    # Another token has its own budget.
    other = await client.get("/trunk/trunks", headers={"Authorization": f"Bearer {bob}"})
    assert other.status_code == 200


async def test_rate_limit_zero_is_off(api: Api) -> None:
    client = limited_client(api, await api.token("alice"), per_minute=0)
    for _ in range(50):
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/trunk/trunks")).status_code == 200


async def test_chunked_body_over_the_limit_is_413(api: Api, alice: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):  # 100 KiB, no Content-Length (the test app allows 64 KiB)
            yield b"x" * 1024

    response = await alice.post(
        "/trunk/trunks", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    assert response.json() == {"message": "request body too large"}
    agent = await alice.post("/v2/agent", content=chunks())
    assert agent.status_code == 413 and agent.json()["error"] == 413


PASSWORD = "trunk-pw-S3CRET-7c1e"
PASSWORD_2 = "trunk-pw-S3CRET-second-55aa"
WEBHOOK_SECRET_URL = "https://hooks.example.com/calls?signature=whsec-LEAK-4d2b"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += logging.Formatter().formatException(record.exc_info)
        self.texts.append(f"{record.name} {text} {record.args!r}")


@pytest.fixture
def all_logs() -> AsyncIterator[Records]:
    root = logging.getLogger()
    handler = Records()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler  # type: ignore[misc]
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_secrets_never_reach_responses_or_logs(api: Api, all_logs: Records) -> None:
    token = await api.token("alice")
    client = api.raw_client({"Authorization": f"Bearer {token}"})
    bodies: list[str] = []

    async def call(method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = await client.request(method, url, **kwargs)
        bodies.append(response.text)
        bodies.extend(f"{k}: {v}" for k, v in response.headers.items())
        return response

    trunk = await call(
        "POST",
        "/trunk/trunks",
        json={
            "name": "carrier",
            "auth_username": "user1",
            "auth_password": PASSWORD,
            "gateways": [{"host": "sip.carrier.example"}],
            "ip_acls": [{"cidr": "8.8.8.0/24"}],
            "numbers": [{"e164": "+14155550123"}],
        },
    )
    assert trunk.status_code == 201, trunk.text
    tid = trunk.json()["id"]
    await call("GET", f"/trunk/trunks/{tid}")
    await call("GET", "/trunk/trunks")
    await call("PATCH", f"/trunk/trunks/{tid}", json={"auth_password": PASSWORD_2})
    await call("PATCH", f"/trunk/trunks/{tid}", json={"auth_password": "x" * 300})  # 422
    await call("PATCH", f"/trunk/trunks/{tid}", json={"auth_password": 12345678})  # 422
    await call("POST", "/trunk/trunks", json={"name": "", "auth_password": PASSWORD})  # 422
    await call("POST", f"/trunk/trunks/{tid}/gateways", json={"host": "sip2.carrier.example"})

    created = await call("POST", "/v2/agent", json=agent_body(webhook_url=WEBHOOK_SECRET_URL))
    assert created.status_code == 201, created.text
    aid = created.json()["agent_id"]
    await call("GET", f"/v2/agent/{aid}")
    await call("GET", "/v2/agent/all")
    await call("PUT", f"/v2/agent/{aid}", json=agent_body())
    await call("PATCH", f"/v2/agent/{aid}", json={"agent_config": {"agent_name": "B"}})
    bad = agent_body()
    bad["agent_config"]["ingest_source_config"]["source_auth_token"] = 42
    await call("POST", "/v2/agent", json=bad)  # invalid, echoes nothing
    await call("GET", "/trunk/trunks", headers={"Authorization": f"Bearer {token}x"})  # 401
    await call("DELETE", f"/v2/agent/{aid}")
    await call("DELETE", f"/trunk/trunks/{tid}")

    secrets_in_bodies = (PASSWORD, PASSWORD_2, SOURCE_TOKEN, token)
    for text in bodies:
        for secret in secrets_in_bodies:
            assert secret not in text
    logs = "\n".join(all_logs.texts)
    assert all_logs.texts, "the scenario logged nothing at DEBUG: the handler is not attached"
    for secret in (*secrets_in_bodies, WEBHOOK_SECRET_URL, "whsec-LEAK-4d2b"):
        assert secret not in logs


def test_openapi_declares_429_everywhere_and_no_422_on_agent_paths() -> None:
    schema = create_app(Settings()).openapi()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            if path == "/healthz":
                continue
            assert "429" in responses, (method, path)
            assert "Retry-After" in responses["429"]["headers"], (method, path)
            if path.startswith("/v2/agent"):
                assert "422" not in responses, (method, path)  # agent validation is 400
                assert "400" in responses, (method, path)
