"""Agents across accounts (SPEC §3), agents on trunks and numbers, and bad input of every kind:
always the seed's Agent error shape, never a 500, never an echo."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest

from api.agent_helpers import agent_body, assert_agent_error, make_agent, task
from api.conftest import Api
from api.helpers import MISSING_ID, assert_message, make_trunk

MARKER = "ECHO-MARKER-5c1e"
NUMBER = "+14155550123"


async def _every_operation(client: httpx.AsyncClient, agent_id: str) -> list[httpx.Response]:
    path = f"/v2/agent/{agent_id}"
    return [
        await client.get(path),
        await client.put(path, json=agent_body(agent_name="stolen")),
        await client.patch(path, json={"agent_config": {"agent_name": "stolen"}}),
        await client.delete(path),
    ]


async def _assert_invisible(client: httpx.AsyncClient, agent_id: str) -> None:
    for response in await _every_operation(client, agent_id):
        assert_agent_error(response, 404, f"agent {agent_id} not found")
    for path in ("/v2/agent", "/v2/agent/all"):
        page = (await client.get(path)).json()
        assert agent_id not in [item["id"] for item in page["items"]]


async def test_another_users_agent_is_404(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    await _assert_invisible(await api.client("bob"), agent_id)
    await _assert_invisible(await api.client("alice", org="org1"), agent_id)
    agent = (await alice.get(f"/v2/agent/{agent_id}")).json()
    assert agent["agent_name"] == "Alfred"


async def test_organisations_and_sub_accounts(api: Api) -> None:
    carol = await api.client("carol", org="org1")
    dave = await api.client("dave", org="org1")
    sub_a = await api.client("erin", org="org1", sub="A")
    sub_b = await api.client("frank", org="org1", sub="B")
    org_agent = await make_agent(carol)
    a_agent = await make_agent(sub_a)
    # organisation-level agents: every member sees them, sub-accounts too
    for client in (dave, sub_a, sub_b):
        assert (await client.get(f"/v2/agent/{org_agent}")).status_code == 200
    # a sub-account's agent: only that sub-account
    await _assert_invisible(sub_b, a_agent)
    await _assert_invisible(dave, a_agent)
    await _assert_invisible(await api.client("carol", org="org2"), org_agent)
    await _assert_invisible(await api.client("carol"), org_agent)
    assert (await sub_a.get("/v2/agent")).json()["total"] == 2
    assert (await dave.get("/v2/agent")).json()["total"] == 1
    owner = await api.scalar(
        "SELECT organization_id || ':' || coalesce(sub_account_id, '-') || ':' || "
        "coalesce(user_id, '-') FROM agents WHERE id = :i",
        i=a_agent,
    )
    assert owner == "org1:A:-"


# --- agents on trunks and numbers ----------------------------------------------------------


async def test_api_agents_answer_trunks_and_numbers(alice: httpx.AsyncClient) -> None:
    default_agent = await make_agent(alice)
    number_agent = await make_agent(alice, agent_body(telephony_provider="sip-trunk"))
    trunk = await make_trunk(
        alice,
        default_inbound_agent_id=default_agent,
        numbers=[{"e164": NUMBER, "agent_id": number_agent}],
    )
    assert trunk["default_inbound_agent_id"] == default_agent
    assert trunk["numbers"][0]["agent_id"] == number_agent
    base = f"/trunk/trunks/{trunk['id']}"
    response = await alice.post(f"{base}/numbers", json={"e164": "+14155550124"})
    number_id = response.json()["id"]
    # seed PATCH rule 4: after switching to sip-trunk, a number of the trunk is mapped to it
    switched = {"agent_config": {"telephony_provider": "sip-trunk"}}
    assert (await alice.patch(f"/v2/agent/{default_agent}", json=switched)).status_code == 200
    response = await alice.patch(f"{base}/numbers/{number_id}", json={"agent_id": default_agent})
    assert response.status_code == 200 and response.json()["agent_id"] == default_agent


async def test_deleted_or_foreign_agents_are_not_the_callers(
    api: Api, alice: httpx.AsyncClient
) -> None:
    live = await make_agent(alice)
    deleted = await make_agent(alice)
    foreign = await make_agent(await api.client("bob"))
    trunk = await make_trunk(alice, default_inbound_agent_id=deleted, numbers=[{"e164": NUMBER}])
    number_id = trunk["numbers"][0]["id"]
    assert (await alice.delete(f"/v2/agent/{deleted}")).status_code == 200
    base = f"/trunk/trunks/{trunk['id']}"
    for agent_id in (deleted, foreign):
        attempts = [
            await alice.post("/trunk/trunks", json={"name": "t", "default_inbound_agent_id": agent_id}),
            await alice.post(
                "/trunk/trunks",
                json={"name": "t", "numbers": [{"e164": "+14155550125", "agent_id": agent_id}]},
            ),
            await alice.patch(base, json={"default_inbound_agent_id": agent_id}),
            await alice.post(f"{base}/numbers", json={"e164": "+14155550126", "agent_id": agent_id}),
            await alice.patch(f"{base}/numbers/{number_id}", json={"agent_id": agent_id}),
        ]  # fmt: skip
        for response in attempts:
            assert_message(response, 400)
    # the trunk still names the deleted agent (its calls get 480 at the edge) until changed
    assert (await alice.get(base)).json()["default_inbound_agent_id"] == deleted
    response = await alice.patch(base, json={"default_inbound_agent_id": live})
    assert response.status_code == 200 and response.json()["default_inbound_agent_id"] == live


# --- bad input: the Agent error shape, never a 500, never an echo --------------------------


def _targets(agent_id: str) -> list[tuple[str, str]]:
    return [
        ("POST", "/v2/agent"),
        ("PUT", f"/v2/agent/{agent_id}"),
        ("PATCH", f"/v2/agent/{agent_id}"),
    ]


async def test_malformed_json(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    headers = {"Content-Type": "application/json"}
    for method, url in _targets(agent_id):
        for raw in (b'{"agent_config": "' + MARKER.encode(), b"[1,", b"\xff\xfe" + MARKER.encode()):
            response = await alice.request(method, url, content=raw, headers=headers)
            message = assert_agent_error(response, 400)
            assert message == "request body is not valid JSON", message
            assert MARKER not in response.text
        response = await alice.request(method, url, content=b"", headers=headers)
        assert_agent_error(response, 400, "request body must be a JSON object")
        text = json.dumps(agent_body(agent_name=MARKER))
        response = await alice.request(
            method, url, content=text, headers={"Content-Type": "text/plain"}
        )
        assert_agent_error(response, 400, "request body must be a JSON object")
        assert MARKER not in response.text


@pytest.mark.parametrize("body", [[], [agent_body()], "agent", 42, None, True])
async def test_wrong_body_types(alice: httpx.AsyncClient, body: Any) -> None:
    agent_id = await make_agent(alice)
    for method, url in _targets(agent_id):
        response = await alice.request(method, url, json=body)
        assert_agent_error(response, 400, "request body must be a JSON object")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"agent_config": {"agent_name": NaN}}', "numbers must be finite"),
        (b'{"agent_config": {"x": Infinity}}', "numbers must be finite"),
        (b'{"agent_config": {"agent_name": "a\\u0000b"}}', "text cannot contain NUL characters or unpaired surrogates"),
        (b'{"agent_config": {"agent_name": "\\ud800"}}', "text cannot contain NUL characters or unpaired surrogates"),
        (b'{"agent_config": ' + b"[" * 40 + b"]" * 40 + b"}", "the body is nested deeper than 32 levels"),
        (b"[" * 20000 + b"]" * 20000, None),
        (b'{"agent_config": {"x": 1' + b"0" * 5000 + b"}}", None),
    ],
)  # fmt: skip
async def test_hostile_json(alice: httpx.AsyncClient, raw: bytes, message: str | None) -> None:
    headers = {"Content-Type": "application/json"}
    response = await alice.post("/v2/agent", content=raw, headers=headers)
    assert_agent_error(response, 400, message)
    assert (await alice.get("/v2/agent")).json()["total"] == 0


@pytest.mark.parametrize(
    ("field", "size"),
    [("agent_name", 60_000), ("agent_welcome_message", 50_000), ("webhook_url", 40_000)],
)
async def test_huge_strings(alice: httpx.AsyncClient, field: str, size: int) -> None:
    value = (MARKER * (size // len(MARKER) + 1))[:size]
    response = await alice.post("/v2/agent", json=agent_body(**{field: value}))
    assert_agent_error(response, 400)
    assert MARKER not in response.text
    too_big = agent_body(agent_welcome_message="x" * 70_000)
    response = await alice.post("/v2/agent", json=too_big)
    assert_agent_error(response, 413, "request body too large")


async def test_rejected_input_is_never_echoed(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    bad_task = task()
    bad_task["task_config"]["voicemail"] = MARKER
    cases: list[dict[str, Any]] = [
        agent_body(telephony_provider=MARKER),
        agent_body(webhook_url=MARKER),
        agent_body(webhook_url=f"https://{MARKER}.local/"),
        agent_body(tasks=[bad_task]),
        agent_body(calling_guardrails={"call_start_hour": MARKER, "call_end_hour": 1}),
        agent_body(ingest_source_config={"source_type": MARKER}),
        # the seed's reasoning_effort message names value and model: only short plain tokens
        agent_body(tasks=[task(model=f"gpt-4o {MARKER}", reasoning_effort="low")]),
        agent_body(tasks=[task(model="gpt-4o", reasoning_effort=f"{MARKER}!")]),
        {**agent_body(), "agent_prompts": {MARKER: {"system_prompt": "x"}}},
        {**agent_body(), "agent_prompts": {"task_1": {"system_prompt": {MARKER: 1}}}},
    ]
    for body in cases:
        for method, url in _targets(agent_id)[:2]:
            response = await alice.request(method, url, json=body)
            assert_agent_error(response, 400)
            assert MARKER not in response.text, response.text
    response = await alice.patch(f"/v2/agent/{agent_id}", json={"agent_prompts": {MARKER: {}}})
    assert_agent_error(response, 400)
    assert MARKER not in response.text
    response = await alice.get(f"/v2/agent/{MARKER}")
    assert_agent_error(response, 404, "agent not found")


async def test_auth_and_routing_errors_use_the_agent_shape(api: Api) -> None:
    anonymous = api.raw_client()
    response = await anonymous.get("/v2/agent")
    assert_agent_error(response, 401, "missing bearer token")
    assert response.headers["WWW-Authenticate"] == "Bearer"
    forged = api.raw_client({"Authorization": "Bearer not-a-token"})
    assert_agent_error(await forged.post("/v2/agent", json=agent_body()), 401)
    alice = await api.client("alice")
    assert_agent_error(await alice.post(f"/v2/agent/{MISSING_ID}", json={}), 405)
    assert_agent_error(await alice.get(f"/v2/agent/{MISSING_ID}/extra"), 404)
    # the trunk API keeps its own shapes
    assert_message(await anonymous.get("/trunk/trunks"), 401)


STRINGS = ["", "x", "gpt-5", "gpt-4o", "low", "minimal", "sip-trunk", "twilio", "csv", "task_1",
           "https://hooks.example.com/", "http://127.0.0.1/", "é中文", "\u0000", MARKER]  # fmt: skip
KEYS = ["agent_config", "agent_prompts", "agent_name", "agent_welcome_message", "webhook_url",
        "tasks", "telephony_provider", "calling_guardrails", "call_start_hour", "call_end_hour",
        "ingest_source_config", "source_type", "synthesizer", "toolchain", "pipelines",
        "tools_config", "llm_agent", "llm_config", "model", "temperature", "reasoning_effort",
        "task_config", "voicemail", "system_prompt", "task_1", "bogus"]  # fmt: skip


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 23, 24, 10**20])
    if kind == 3:
        return rng.choice([0.1, 1.0, -0.0, 1e308])
    if kind in (4, 5):
        return rng.choice(STRINGS)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


async def test_random_bodies_never_500(alice: httpx.AsyncClient) -> None:
    rng = random.Random(20261122)
    agent_id = await make_agent(alice)
    headers = {"Content-Type": "application/json"}
    for _ in range(150):
        method, url = rng.choice(_targets(agent_id))
        body: Any = _value(rng)
        if rng.random() < 0.4:  # mostly valid bodies with a few random fields: deeper rules run
            body = agent_body()
            noise = _value(rng, 3)
            if isinstance(noise, dict):
                body["agent_config"]["tasks"][0]["tools_config"].update(noise)
                body["agent_config"].update(noise)
        raw = json.dumps(body)
        response = await alice.request(method, url, content=raw, headers=headers)
        assert response.status_code in {200, 201, 400}, (response.status_code, response.text)
        if response.status_code == 400:
            assert_agent_error(response, 400)
            assert MARKER not in response.text
    assert (await alice.get(f"/v2/agent/{agent_id}")).status_code == 200
