"""/v2/agent: create, get, list, PUT, delete, status, notifications and the secret token."""

from __future__ import annotations

import logging
import uuid

import httpx
import pytest

from api.agent_helpers import (
    AGENT_KEYS,
    TOKEN,
    agent_body,
    assert_agent_error,
    llm_config,
    make_agent,
    synthesizer,
    task,
)
from api.conftest import Api
from api.helpers import MISSING_ID
from sipedge.store.agents import mark_agents_processed
from sipedge.store.changes import Change
from sipedge.store.db import make_session_factory


async def test_create_answers_201_with_id_and_state(alice: httpx.AsyncClient) -> None:
    response = await alice.post("/v2/agent", json=agent_body())
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"agent_id", "state"}
    assert body["state"] == "created"
    assert str(uuid.UUID(body["agent_id"])) == body["agent_id"]


async def test_get_returns_the_response_shape(alice: httpx.AsyncClient) -> None:
    sent = agent_body()
    agent_id = await make_agent(alice, sent)
    response = await alice.get(f"/v2/agent/{agent_id}")
    assert response.status_code == 200, response.text
    got = response.json()
    assert set(got) == AGENT_KEYS
    config = sent["agent_config"]
    assert got["id"] == agent_id
    assert got["agent_status"] == "seeding"
    assert got["created_at"] == got["updated_at"] and got["created_at"].endswith("Z")
    for key in (
        "agent_name",
        "agent_type",
        "agent_welcome_message",
        "webhook_url",
        "call_summary_enabled",
        "telephony_provider",
        "calling_guardrails",
        "synthesizer",
    ):
        assert got[key] == config[key], key
    assert got["agent_prompts"] == {
        "task_1": {"system_prompt": "You are Alfred, a polite assistant."}
    }
    # the task is stored as sent, plus the temperature default
    expected_task = task()
    expected_task["tools_config"]["llm_agent"]["llm_config"]["temperature"] = 0.1
    assert got["tasks"] == [expected_task]
    assert got["ingest_source_config"] == {
        **config["ingest_source_config"],
        "source_auth_token": "********",
    }


async def test_minimal_body_gets_the_defaults(alice: httpx.AsyncClient) -> None:
    body = {
        "agent_config": {
            "agent_name": "min",
            "agent_welcome_message": "hi",
            "webhook_url": None,
            "tasks": [{"task_type": "conversation"}],
        }
    }
    agent = (await alice.get(f"/v2/agent/{await make_agent(alice, body)}")).json()
    assert agent["agent_type"] == "other"
    assert agent["call_summary_enabled"] is False
    assert agent["webhook_url"] is None
    assert agent["telephony_provider"] is None
    assert agent["calling_guardrails"] is None
    assert agent["ingest_source_config"] is None
    assert agent["synthesizer"] is None
    assert agent["agent_prompts"] == {}
    assert agent["tasks"] == [{"task_type": "conversation"}]


async def test_unknown_keys_inside_tasks_are_kept_and_agent_level_ones_ignored(
    alice: httpx.AsyncClient,
) -> None:
    body = agent_body(bogus_top="x")
    body["agent_config"]["tasks"][0]["tools_config"]["llm_agent"]["llm_config"]["seed"] = 7
    body["agent_config"]["tasks"][0]["custom"] = {"nested": [1, 2]}
    body["agent_config"]["calling_guardrails"]["timezone"] = "Asia/Kolkata"
    body["unrelated"] = True
    agent = (await alice.get(f"/v2/agent/{await make_agent(alice, body)}")).json()
    assert llm_config(agent)["seed"] == 7
    assert agent["tasks"][0]["custom"] == {"nested": [1, 2]}
    assert "bogus_top" not in agent
    assert agent["calling_guardrails"] == {"call_start_hour": 9, "call_end_hour": 17}


async def test_put_replaces_the_whole_configuration(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    before = (await alice.get(f"/v2/agent/{agent_id}")).json()
    second = task(model="gpt-5-mini", temperature=1, reasoning_effort="minimal")
    second["toolchain"] = {"execution": "sequential", "pipelines": [["llm"], ["synthesizer"]]}
    replacement = {
        "agent_config": {
            "agent_name": "Bertha",
            "agent_welcome_message": "Hi",
            "webhook_url": None,
            "tasks": [task(), second],
        },
        "agent_prompts": {"task_2": {"system_prompt": "second"}},
    }
    response = await alice.put(f"/v2/agent/{agent_id}", json=replacement)
    assert response.status_code == 200, response.text
    assert response.json() == {"agent_id": agent_id, "status": "updated"}
    after = (await alice.get(f"/v2/agent/{agent_id}")).json()
    assert after["agent_name"] == "Bertha"
    assert after["webhook_url"] is None
    assert len(after["tasks"]) == 2
    assert after["tasks"][1]["toolchain"]["pipelines"] == [["llm"], ["synthesizer"]]
    assert llm_config(after, 1)["reasoning_effort"] == "minimal"
    # everything not sent is gone, not kept: that is what "replace" means
    assert after["agent_prompts"] == {"task_2": {"system_prompt": "second"}}
    assert after["ingest_source_config"] is None
    assert after["calling_guardrails"] is None
    assert after["synthesizer"] is None
    assert after["telephony_provider"] is None
    assert after["call_summary_enabled"] is False
    assert after["created_at"] == before["created_at"]
    assert after["updated_at"] > before["updated_at"]
    assert after["agent_status"] == "seeding"
    assert await api.scalar("SELECT config_version FROM agents WHERE id = :i", i=agent_id) == 2


async def test_put_validates_like_create_and_404s(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    response = await alice.put(f"/v2/agent/{agent_id}", json=agent_body(tasks=[]))
    assert_agent_error(response, 400, "tasks is required")
    response = await alice.put(f"/v2/agent/{agent_id}", json={"agent_prompts": {}})
    assert_agent_error(response, 400, "agent_config is required")
    response = await alice.put(f"/v2/agent/{MISSING_ID}", json=agent_body())
    assert_agent_error(response, 404, f"agent {MISSING_ID} not found")


async def test_list_is_paginated_oldest_first(alice: httpx.AsyncClient) -> None:
    ids = [await make_agent(alice, agent_body(agent_name=f"a{i}")) for i in range(5)]
    for path in ("/v2/agent", "/v2/agent/all"):
        page = (await alice.get(path)).json()
        assert set(page) == {"items", "total", "limit", "offset"}
        assert (page["total"], page["limit"], page["offset"]) == (5, 50, 0)
        assert [item["id"] for item in page["items"]] == ids
        assert all(set(item) == AGENT_KEYS for item in page["items"])
        page = (await alice.get(path, params={"limit": 2, "offset": 3})).json()
        assert [item["id"] for item in page["items"]] == ids[3:5]
        assert (page["total"], page["limit"], page["offset"]) == (5, 2, 3)
        page = (await alice.get(path, params={"offset": 10})).json()
        assert page["items"] == [] and page["total"] == 5


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"limit": 0}, "limit must be an integer from 1 to 200"),
        ({"limit": 201}, "limit must be an integer from 1 to 200"),
        ({"limit": "ten"}, "limit must be an integer from 1 to 200"),
        ({"offset": -1}, "offset must be a non-negative integer"),
    ],
)
async def test_list_query_errors_are_agent_errors(
    alice: httpx.AsyncClient, params: dict[str, object], message: str
) -> None:
    for path in ("/v2/agent", "/v2/agent/all"):
        assert_agent_error(await alice.get(path, params=params), 400, message)


async def test_delete_is_soft_and_then_404(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    other = await make_agent(alice)
    response = await alice.delete(f"/v2/agent/{agent_id}")
    assert response.status_code == 200, response.text
    assert response.json() == {"agent_id": agent_id, "is_deleted": True}
    missing = f"agent {agent_id} not found"
    assert_agent_error(await alice.get(f"/v2/agent/{agent_id}"), 404, missing)
    assert_agent_error(await alice.put(f"/v2/agent/{agent_id}", json=agent_body()), 404, missing)
    assert_agent_error(await alice.patch(f"/v2/agent/{agent_id}", json={}), 404, missing)
    assert_agent_error(await alice.delete(f"/v2/agent/{agent_id}"), 404, missing)
    page = (await alice.get("/v2/agent")).json()
    assert [item["id"] for item in page["items"]] == [other] and page["total"] == 1
    row = await api.scalar(
        "SELECT count(*) FROM agents WHERE id = :i AND deleted_at IS NOT NULL", i=agent_id
    )
    assert row == 1


async def test_not_found_messages(alice: httpx.AsyncClient) -> None:
    upper = MISSING_ID.upper()
    assert_agent_error(await alice.get(f"/v2/agent/{upper}"), 404, f"agent {MISSING_ID} not found")
    for bad in ("nope", "1234", "x" * 300):
        message = assert_agent_error(await alice.get(f"/v2/agent/{bad}"), 404)
        assert message == "agent not found"


async def test_every_write_notifies_after_commit(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    await alice.put(f"/v2/agent/{agent_id}", json=agent_body())
    await alice.patch(f"/v2/agent/{agent_id}", json={"agent_config": {"agent_name": "n"}})
    await alice.patch(f"/v2/agent/{agent_id}", json={"agent_config": {"tasks": []}})  # ignored
    await alice.post("/v2/agent", json=agent_body(tasks=[]))  # 400
    await alice.get(f"/v2/agent/{agent_id}")
    await alice.delete(f"/v2/agent/{agent_id}")
    kinds = ["agent.created", "agent.updated", "agent.updated", "agent.deleted"]
    assert api.changes == [Change(kind, None, agent_id) for kind in kinds]


async def test_status_turns_processed_only_for_the_loaded_version(
    api: Api, alice: httpx.AsyncClient
) -> None:
    first = await make_agent(alice)
    second = await make_agent(alice)

    async def status(agent_id: str) -> str:
        value: str = (await alice.get(f"/v2/agent/{agent_id}")).json()["agent_status"]
        return value

    async def mark(versions: dict[str, int]) -> int:
        async with make_session_factory(api.engine)() as session:
            changed = await mark_agents_processed(session, versions=versions)
            await session.commit()
        return changed

    assert await status(first) == "seeding"
    # the snapshot loader read both at version 1; the second was patched before it reported back
    await alice.patch(f"/v2/agent/{second}", json={"agent_config": {"agent_name": "again"}})
    assert await mark({first: 1, second: 1, MISSING_ID: 1}) == 1
    assert (await status(first), await status(second)) == ("processed", "seeding")
    assert await mark({first: 1}) == 0  # already processed: nothing to do
    assert await mark({second: 2}) == 1
    assert await status(second) == "processed"
    # a PUT or PATCH makes it seeding again until the next snapshot holds the new version
    await alice.put(f"/v2/agent/{first}", json=agent_body())
    assert await status(first) == "seeding"
    # a deleted agent is never marked
    await alice.delete(f"/v2/agent/{first}")
    assert await mark({first: 2}) == 0
    assert await mark({}) == 0


async def test_mark_processed_handles_many_agents(api: Api, alice: httpx.AsyncClient) -> None:
    ids = [await make_agent(alice, agent_body(agent_name=f"a{i}")) for i in range(3)]
    versions = {agent_id: 1 for agent_id in ids}
    versions.update({str(uuid.uuid4()): 1 for _ in range(1000)})  # several chunks
    async with make_session_factory(api.engine)() as session:
        assert await mark_agents_processed(session, versions=versions) == 3
        await session.commit()
    statuses = {(await alice.get(f"/v2/agent/{i}")).json()["agent_status"] for i in ids}
    assert statuses == {"processed"}


async def test_source_auth_token_is_masked_never_returned_or_logged(
    api: Api, alice: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    agent_id = await make_agent(alice)
    responses = [
        await alice.get(f"/v2/agent/{agent_id}"),
        await alice.get("/v2/agent"),
        await alice.get("/v2/agent/all"),
    ]
    for response in responses:
        assert TOKEN not in response.text
    # a GET edited and sent back keeps the stored token (the mask means "unchanged")
    edited = responses[0].json()
    body = {
        "agent_config": {
            key: edited[key]
            for key in (
                "agent_name",
                "agent_welcome_message",
                "webhook_url",
                "tasks",
                "ingest_source_config",
                "synthesizer",
            )
        },
        "agent_prompts": edited["agent_prompts"],
    }
    assert (await alice.put(f"/v2/agent/{agent_id}", json=body)).status_code == 200
    patch = {"agent_config": {"ingest_source_config": edited["ingest_source_config"]}}
    assert (await alice.patch(f"/v2/agent/{agent_id}", json=patch)).status_code == 200
    stored = await api.scalar("SELECT ingest_source_config FROM agents WHERE id = :i", i=agent_id)
    assert TOKEN in str(stored)
    # a new token replaces it; null removes the whole source
    patch = {
        "agent_config": {"ingest_source_config": {"source_type": "csv", "source_auth_token": "new"}}
    }
    assert (await alice.patch(f"/v2/agent/{agent_id}", json=patch)).status_code == 200
    stored = await api.scalar("SELECT ingest_source_config FROM agents WHERE id = :i", i=agent_id)
    assert "new" in str(stored) and TOKEN not in str(stored)
    assert TOKEN not in caplog.text


async def test_legacy_bare_agents_read_back(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id = await api.agent("alice")  # made by the store helper, no configuration
    agent = (await alice.get(f"/v2/agent/{agent_id}")).json()
    assert set(agent) == AGENT_KEYS
    assert agent["tasks"] == [] and agent["agent_prompts"] == {}
    assert agent["agent_welcome_message"] == "" and agent["agent_type"] == "other"


async def test_synthesizer_given_on_create_is_stored_as_sent(alice: httpx.AsyncClient) -> None:
    body = agent_body(synthesizer=synthesizer("Zoe"))
    agent = (await alice.get(f"/v2/agent/{await make_agent(alice, body)}")).json()
    assert agent["synthesizer"] == synthesizer("Zoe")
    # create does not push it into the tasks (only a PATCH does, seed PATCH rules)
    assert agent["tasks"][0]["tools_config"]["synthesizer"] == synthesizer()
