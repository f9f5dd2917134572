"""PATCH /v2/agent/{id}: the seed's PATCH rules 1-5, one test (or more) each."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api.agent_helpers import (
    agent_body,
    assert_agent_error,
    make_agent,
    synthesizer,
    task,
)
from api.conftest import Api

SUCCESS = {"message": "success", "state": "updated"}


async def patch(client: httpx.AsyncClient, agent_id: str, body: Any) -> httpx.Response:
    return await client.patch(f"/v2/agent/{agent_id}", json=body)


async def get(client: httpx.AsyncClient, agent_id: str) -> dict[str, Any]:
    response = await client.get(f"/v2/agent/{agent_id}")
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def two_task_body() -> dict[str, Any]:
    second = task()
    second["tools_config"]["input"] = {"provider": "twilio", "format": "mp3"}
    del second["tools_config"]["output"]
    return agent_body(tasks=[task(), second])


async def test_answer_shape(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    response = await patch(alice, agent_id, {"agent_config": {"agent_name": "New"}})
    assert response.status_code == 200, response.text
    assert response.json() == SUCCESS


# Rule 1: only the listed attributes change; anything else in the body is ignored.
async def test_rule1_other_fields_are_ignored_not_errors(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    before = await get(alice, agent_id)
    body = {
        "agent_config": {
            "tasks": "not even an array",
            "agent_type": 5,
            "id": "x",
            "agent_status": "processed",
            "bogus": {"deep": [1]},
        },
        "id": "other",
        "agent_status": "processed",
        "tasks": [],
    }
    response = await patch(alice, agent_id, body)
    assert response.status_code == 200 and response.json() == SUCCESS
    assert await get(alice, agent_id) == before  # nothing changed, not even updated_at


@pytest.mark.parametrize(
    ("config", "key", "expected"),
    [
        ({"agent_name": "Renamed"}, "agent_name", "Renamed"),
        ({"agent_welcome_message": "Hey {name}"}, "agent_welcome_message", "Hey {name}"),
        ({"webhook_url": "https://other.example.org/h"}, "webhook_url", "https://other.example.org/h"),
        ({"call_summary_enabled": False}, "call_summary_enabled", False),
        ({"calling_guardrails": {"call_start_hour": 8, "call_end_hour": 8}}, "calling_guardrails", {"call_start_hour": 8, "call_end_hour": 8}),
        ({"calling_guardrails": None}, "calling_guardrails", None),
        ({"ingest_source_config": {"source_type": "google_sheet", "source_url": "https://s.example/1"}}, "ingest_source_config", {"source_type": "google_sheet", "source_url": "https://s.example/1"}),
        ({"ingest_source_config": None}, "ingest_source_config", None),
        ({"telephony_provider": "exotel"}, "telephony_provider", "exotel"),
    ],
)  # fmt: skip
async def test_rule1_each_listed_attribute_changes(
    alice: httpx.AsyncClient, config: dict[str, Any], key: str, expected: Any
) -> None:
    agent_id = await make_agent(alice)
    before = await get(alice, agent_id)
    assert (await patch(alice, agent_id, {"agent_config": config})).json() == SUCCESS
    after = await get(alice, agent_id)
    assert after[key] == expected
    untouched = set(after) - {key, "updated_at", "agent_status", "tasks"}
    assert {k: after[k] for k in untouched} == {k: before[k] for k in untouched}
    assert after["updated_at"] > before["updated_at"]


# Rule 2: attributes not included stay unchanged; several may be sent together.
async def test_rule2_several_together_and_the_rest_stays(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    before = await get(alice, agent_id)
    body = {
        "agent_config": {"agent_name": "Two", "call_summary_enabled": False},
        "agent_prompts": {"task_1": {"system_prompt": "new prompt"}},
    }
    assert (await patch(alice, agent_id, body)).json() == SUCCESS
    after = await get(alice, agent_id)
    assert after["agent_name"] == "Two" and after["call_summary_enabled"] is False
    assert after["agent_prompts"] == {"task_1": {"system_prompt": "new prompt"}}
    for key in ("agent_welcome_message", "webhook_url", "tasks", "ingest_source_config"):
        assert after[key] == before[key], key


async def test_agent_prompts_merge_per_task(alice: httpx.AsyncClient) -> None:
    body = two_task_body()
    body["agent_prompts"] = {"task_1": {"system_prompt": "one"}, "task_2": {"system_prompt": "two"}}
    agent_id = await make_agent(alice, body)
    update = {"agent_prompts": {"task_2": {"system_prompt": "TWO"}}}
    assert (await patch(alice, agent_id, update)).json() == SUCCESS
    assert (await get(alice, agent_id))["agent_prompts"] == {
        "task_1": {"system_prompt": "one"},
        "task_2": {"system_prompt": "TWO"},
    }
    response = await patch(alice, agent_id, {"agent_prompts": {"task_3": {"system_prompt": "x"}}})
    assert_agent_error(response, 400, "agent_prompts has a prompt for a task that does not exist")
    response = await patch(alice, agent_id, {"agent_prompts": {"main": {"system_prompt": "x"}}})
    assert_agent_error(response, 400, "agent_prompts keys must be task_<n> (task_1, task_2, ...)")


# Rule 3: a telephony_provider change sets every task's input and output format.
@pytest.mark.parametrize(
    ("provider", "audio_format"),
    [
        ("sip-trunk", "ulaw"),
        ("twilio", "wav"),
        ("plivo", "wav"),
        ("exotel", "wav"),
        ("vobiz", "wav"),
    ],
)
async def test_rule3_provider_sets_audio_formats(
    alice: httpx.AsyncClient, provider: str, audio_format: str
) -> None:
    agent_id = await make_agent(alice, two_task_body())
    body = {"agent_config": {"telephony_provider": provider}}
    assert (await patch(alice, agent_id, body)).json() == SUCCESS
    agent = await get(alice, agent_id)
    assert agent["telephony_provider"] == provider
    first, second = (t["tools_config"] for t in agent["tasks"])
    assert first["input"] == {"provider": "plivo", "format": audio_format}
    assert first["output"] == {"provider": "plivo", "format": audio_format}
    assert second["input"] == {"provider": "twilio", "format": audio_format}
    assert second["output"] == {"format": audio_format}  # created where the task had none
    # nothing else in the tasks moved
    assert first["synthesizer"] == synthesizer() and agent["tasks"][0]["task_config"]


async def test_rule3_default_provider_keeps_formats(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice, two_task_body())
    tasks = (await get(alice, agent_id))["tasks"]
    body = {"agent_config": {"telephony_provider": "default"}}
    assert (await patch(alice, agent_id, body)).json() == SUCCESS
    agent = await get(alice, agent_id)
    assert agent["telephony_provider"] == "default" and agent["tasks"] == tasks


async def test_rule3_back_and_forth(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    for provider, audio_format in (("sip-trunk", "ulaw"), ("twilio", "wav"), ("sip-trunk", "ulaw")):
        await patch(alice, agent_id, {"agent_config": {"telephony_provider": provider}})
        tools = (await get(alice, agent_id))["tasks"][0]["tools_config"]
        assert tools["input"]["format"] == tools["output"]["format"] == audio_format


# Rule 5: webhook_url null removes the webhook.
async def test_rule5_webhook_null_removes_it(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    assert (await patch(alice, agent_id, {"agent_config": {"webhook_url": None}})).json() == SUCCESS
    assert (await get(alice, agent_id))["webhook_url"] is None


async def test_synthesizer_reaches_every_task(alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice, two_task_body())
    new = synthesizer("Maya")
    new["provider_config"]["engine"] = "neural"  # provider extras are kept
    assert (await patch(alice, agent_id, {"agent_config": {"synthesizer": new}})).json() == SUCCESS
    agent = await get(alice, agent_id)
    assert agent["synthesizer"] == new
    assert [t["tools_config"]["synthesizer"] for t in agent["tasks"]] == [new, new]
    assert agent["tasks"][1]["tools_config"]["input"]["format"] == "mp3"  # formats untouched


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"agent_name": None}, "agent_name cannot be null"),
        ({"agent_welcome_message": None}, "agent_welcome_message cannot be null"),
        ({"synthesizer": None}, "synthesizer cannot be null"),
        ({"telephony_provider": None}, "telephony_provider cannot be null"),
        ({"call_summary_enabled": None}, "call_summary_enabled cannot be null"),
        ({"agent_name": ""}, "agent_name must not be empty"),
        ({"call_summary_enabled": "on"}, "call_summary_enabled must be a boolean"),
        ({"telephony_provider": "vonage"}, "telephony_provider must be one of 'twilio', 'plivo', 'exotel', 'vobiz', 'sip-trunk' or 'default'"),
        ({"webhook_url": "http://127.0.0.1/x"}, "webhook_url must not point at a private, loopback or link-local address"),
        ({"webhook_url": "gopher://x.example"}, "webhook_url must be an http or https URL"),
        ({"calling_guardrails": {"call_start_hour": 20, "call_end_hour": 7}}, "calling_guardrails.call_end_hour must be >= call_start_hour"),
        ({"ingest_source_config": {"source_type": "ftp"}}, "ingest_source_config.source_type must be one of 'api', 'csv' or 'google_sheet'"),
        ({"synthesizer": {"buffer_size": "big"}}, "synthesizer.buffer_size must be an integer"),
    ],
)  # fmt: skip
async def test_patched_attributes_are_validated(
    alice: httpx.AsyncClient, config: dict[str, Any], message: str
) -> None:
    agent_id = await make_agent(alice)
    before = await get(alice, agent_id)
    body = {"agent_config": {"agent_name": "would change", **config}}
    assert_agent_error(await patch(alice, agent_id, body), 400, message)
    assert await get(alice, agent_id) == before  # a refused PATCH changes nothing


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "request body must be a JSON object"),
        ("x", "request body must be a JSON object"),
        ({"agent_config": "x"}, "agent_config must be an object"),
        ({"agent_config": None}, "agent_config must be an object"),
        ({"agent_prompts": None}, "agent_prompts must be an object"),
    ],
)
async def test_patch_body_shape(alice: httpx.AsyncClient, body: Any, message: str) -> None:
    agent_id = await make_agent(alice)
    assert_agent_error(await patch(alice, agent_id, body), 400, message)


async def test_patch_status_version_and_notifications(api: Api, alice: httpx.AsyncClient) -> None:
    agent_id = await make_agent(alice)
    await api.execute("UPDATE agents SET agent_status = 'processed' WHERE id = :i", i=agent_id)
    api.changes.clear()
    assert (await patch(alice, agent_id, {})).json() == SUCCESS  # nothing to change
    assert (await patch(alice, agent_id, {"agent_config": {"tasks": []}})).json() == SUCCESS
    assert api.changes == []
    assert (await get(alice, agent_id))["agent_status"] == "processed"
    await patch(alice, agent_id, {"agent_config": {"telephony_provider": "sip-trunk"}})
    assert (await get(alice, agent_id))["agent_status"] == "seeding"
    assert await api.scalar("SELECT config_version FROM agents WHERE id = :i", i=agent_id) == 2
    assert [c.kind for c in api.changes] == ["agent.updated"]
