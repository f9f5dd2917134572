"""Create and PUT validation: the seed's five create errors and every other rule, exact bodies."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api.agent_helpers import agent_body, assert_agent_error, create, llm_config, make_agent, task


def with_llm(model: str, **fields: Any) -> dict[str, Any]:
    return agent_body(tasks=[task(model=model, **fields)])


# --- the seed's five create errors ---------------------------------------------------------


@pytest.mark.parametrize(
    "body", [{}, {"agent_prompts": {"task_1": {"system_prompt": "x"}}}, {"agent_config": None}]
)
async def test_no_agent_config(alice: httpx.AsyncClient, body: Any) -> None:
    assert_agent_error(await create(alice, body), 400, "agent_config is required")


@pytest.mark.parametrize("tasks", [[], None, "missing"])
async def test_tasks_missing_or_empty(alice: httpx.AsyncClient, tasks: Any) -> None:
    body = agent_body(tasks=tasks)
    if tasks == "missing":
        del body["agent_config"]["tasks"]
    assert_agent_error(await create(alice, body), 400, "tasks is required")


async def test_seed_errors_come_before_other_failures(alice: httpx.AsyncClient) -> None:
    # agent_welcome_message and webhook_url are missing too: the seed's error is reported
    response = await create(alice, {"agent_config": {"agent_name": "x"}})
    assert_agent_error(response, 400, "tasks is required")


@pytest.mark.parametrize(
    "pipelines",
    [
        ["transcriber", "llm", "synthesizer"],  # flat
        [["transcriber", "llm"], "synthesizer"],
        "transcriber,llm",
        {"0": ["llm"]},
        None,
        "missing",
    ],
)
async def test_pipelines_must_be_array_of_arrays(alice: httpx.AsyncClient, pipelines: Any) -> None:
    body = agent_body()
    toolchain = body["agent_config"]["tasks"][0]["toolchain"]
    if pipelines == "missing":
        del toolchain["pipelines"]
    else:
        toolchain["pipelines"] = pipelines
    response = await create(alice, body)
    assert_agent_error(response, 400, "toolchain.pipelines must be array of arrays")


@pytest.mark.parametrize(
    ("pipelines", "message"),
    [
        ([], "toolchain.pipelines must hold 1-20 pipelines"),
        ([[]], "each toolchain pipeline must list 1-20 component names"),
        ([["llm", 3]], "toolchain pipelines hold component names (strings)"),
        ([["llm", ""]], "toolchain pipelines hold component names (strings)"),
    ],
)
async def test_pipeline_contents(alice: httpx.AsyncClient, pipelines: Any, message: str) -> None:
    body = agent_body()
    body["agent_config"]["tasks"][0]["toolchain"]["pipelines"] = pipelines
    assert_agent_error(await create(alice, body), 400, message)


@pytest.mark.parametrize(
    ("model", "temperature"),
    [("gpt-5", 0.7), ("gpt-5-mini", 0.1), ("gpt-5-nano", 0), ("azure/GPT-5", 2), ("gpt-5.1", 0.5)],
)
async def test_gpt5_temperature_must_be_1(
    alice: httpx.AsyncClient, model: str, temperature: float
) -> None:
    response = await create(alice, with_llm(model, temperature=temperature))
    assert_agent_error(response, 400, "For GPT-5 models, temperature must be 1")


@pytest.mark.parametrize(
    ("model", "effort"),
    [
        ("gpt-4o", "low"),
        ("gpt-4.1-mini", "high"),
        ("gpt-5", "extreme"),
        ("gpt-5-mini", "none"),
        ("o3-mini", "minimal"),
        ("o1-mini", "low"),
        ("gpt-5-pro", "low"),
    ],
)
async def test_reasoning_effort_per_model(
    alice: httpx.AsyncClient, model: str, effort: str
) -> None:
    response = await create(alice, with_llm(model, temperature=1, reasoning_effort=effort))
    assert_agent_error(
        response, 400, f"reasoning_effort '{effort}' is not supported for model '{model}'"
    )


async def test_reasoning_effort_message_never_echoes_odd_input(alice: httpx.AsyncClient) -> None:
    for effort in ("x" * 65, "low'); drop", "zé"):
        response = await create(alice, with_llm("gpt-4o", reasoning_effort=effort))
        message = assert_agent_error(response, 400)
        assert message == "reasoning_effort is not supported for this model"
    response = await create(alice, with_llm("gpt-4o <script>", reasoning_effort="low"))
    assert_agent_error(response, 400, "reasoning_effort is not supported for this model")


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        ("gpt-5", {"temperature": 1, "reasoning_effort": "minimal"}),
        ("gpt-5-mini", {"reasoning_effort": "high"}),
        ("gpt-5.1", {"temperature": 1.0, "reasoning_effort": "none"}),
        ("o3", {"reasoning_effort": "medium"}),
        ("o4-mini", {"reasoning_effort": "low"}),
        ("gpt-4o", {"reasoning_effort": None}),
        ("my-own-llm-v9", {"reasoning_effort": "turbo", "temperature": 1.7}),  # unknown: accepted
        ("claude-sonnet-4", {"reasoning_effort": "whatever"}),
    ],
)
async def test_accepted_model_settings(
    alice: httpx.AsyncClient, model: str, fields: dict[str, Any]
) -> None:
    response = await create(alice, with_llm(model, **fields))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("model", "fields", "expected"),
    [
        ("gpt-4.1-mini", {}, 0.1),
        ("gpt-4.1-mini", {"temperature": None}, 0.1),
        ("gpt-4.1-mini", {"temperature": 0.7}, 0.7),
        ("gpt-5-mini", {}, 1),
        ("gpt-5", {"temperature": 1}, 1),
    ],
)
async def test_temperature_default(
    alice: httpx.AsyncClient, model: str, fields: dict[str, Any], expected: float
) -> None:
    agent_id = await make_agent(alice, with_llm(model, **fields))
    agent = (await alice.get(f"/v2/agent/{agent_id}")).json()
    assert llm_config(agent)["temperature"] == expected


@pytest.mark.parametrize("temperature", [-0.1, 2.5])
async def test_temperature_range(alice: httpx.AsyncClient, temperature: float) -> None:
    response = await create(alice, with_llm("gpt-4o", temperature=temperature))
    assert_agent_error(response, 400, "temperature must be between 0 and 2")


# --- required fields, guardrails, enums ----------------------------------------------------


@pytest.mark.parametrize("field", ["agent_name", "agent_welcome_message", "webhook_url"])
async def test_required_fields(alice: httpx.AsyncClient, field: str) -> None:
    body = agent_body()
    del body["agent_config"][field]
    assert_agent_error(await create(alice, body), 400, f"{field} is required")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"agent_name": ""}, "agent_name must not be empty"),
        ({"agent_name": None}, "agent_name must be a string"),
        ({"agent_name": 7}, "agent_name must be a string"),
        ({"agent_name": "x" * 201}, "agent_name is too long (at most 200 characters)"),
        ({"agent_welcome_message": ["hi"]}, "agent_welcome_message must be a string"),
        ({"agent_type": ""}, "agent_type must not be empty"),
        ({"call_summary_enabled": "yes"}, "call_summary_enabled must be a boolean"),
        ({"call_summary_enabled": 1}, "call_summary_enabled must be a boolean"),
        ({"tasks": "one"}, "tasks must be an array"),
        ({"tasks": [task()] * 21}, "tasks has too many entries (at most 20)"),
        ({"tasks": [5]}, "tasks[0] must be an object"),
        ({"synthesizer": "eleven"}, "synthesizer must be an object"),
        ({"synthesizer": {"stream": "yes"}}, "synthesizer.stream must be a boolean"),
    ],
)
async def test_agent_config_types(
    alice: httpx.AsyncClient, config: dict[str, Any], message: str
) -> None:
    assert_agent_error(await create(alice, agent_body(**config)), 400, message)


@pytest.mark.parametrize(
    ("guardrails", "message"),
    [
        ({"call_start_hour": 24, "call_end_hour": 23}, "calling_guardrails.call_start_hour must be <= 23"),
        ({"call_start_hour": -1, "call_end_hour": 5}, "calling_guardrails.call_start_hour must be >= 0"),
        ({"call_start_hour": 9, "call_end_hour": 24}, "calling_guardrails.call_end_hour must be <= 23"),
        ({"call_start_hour": 18, "call_end_hour": 9}, "calling_guardrails.call_end_hour must be >= call_start_hour"),
        ({"call_start_hour": "9", "call_end_hour": 17}, "calling_guardrails.call_start_hour must be an integer"),
        ({"call_start_hour": 9.0, "call_end_hour": 17}, "calling_guardrails.call_start_hour must be an integer"),
        ({"call_start_hour": True, "call_end_hour": 17}, "calling_guardrails.call_start_hour must be an integer"),
        ({"call_start_hour": 9}, "calling_guardrails.call_end_hour is required"),
        ("9-17", "calling_guardrails must be an object"),
    ],
)  # fmt: skip
async def test_calling_guardrails(alice: httpx.AsyncClient, guardrails: Any, message: str) -> None:
    response = await create(alice, agent_body(calling_guardrails=guardrails))
    assert_agent_error(response, 400, message)


@pytest.mark.parametrize(("start", "end"), [(0, 0), (0, 23), (23, 23), (9, 17)])
async def test_calling_guardrails_bounds_accepted(
    alice: httpx.AsyncClient, start: int, end: int
) -> None:
    guardrails = {"call_start_hour": start, "call_end_hour": end}
    agent_id = await make_agent(alice, agent_body(calling_guardrails=guardrails))
    assert (await alice.get(f"/v2/agent/{agent_id}")).json()["calling_guardrails"] == guardrails


PROVIDERS_MESSAGE = (
    "telephony_provider must be one of 'twilio', 'plivo', 'exotel', 'vobiz', 'sip-trunk' or "
    "'default'"
)


@pytest.mark.parametrize("provider", ["twilio", "plivo", "exotel", "vobiz", "sip-trunk", "default"])
async def test_telephony_providers_accepted(alice: httpx.AsyncClient, provider: str) -> None:
    agent_id = await make_agent(alice, agent_body(telephony_provider=provider))
    assert (await alice.get(f"/v2/agent/{agent_id}")).json()["telephony_provider"] == provider


@pytest.mark.parametrize("provider", ["vonage", "Twilio", "sip_trunk", "", 3])
async def test_telephony_provider_enum(alice: httpx.AsyncClient, provider: Any) -> None:
    response = await create(alice, agent_body(telephony_provider=provider))
    assert_agent_error(response, 400, PROVIDERS_MESSAGE)


@pytest.mark.parametrize("source_type", ["api", "csv", "google_sheet"])
async def test_source_types_accepted(alice: httpx.AsyncClient, source_type: str) -> None:
    body = agent_body(ingest_source_config={"source_type": source_type})
    agent_id = await make_agent(alice, body)
    agent = (await alice.get(f"/v2/agent/{agent_id}")).json()
    assert agent["ingest_source_config"] == {"source_type": source_type}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            {"source_type": "sftp"},
            "ingest_source_config.source_type must be one of 'api', 'csv' or 'google_sheet'",
        ),
        ({"source_url": "https://x.example"}, "ingest_source_config.source_type is required"),
        ({"source_type": "api", "source_auth_token": 5}, "ingest_source_config.source_auth_token must be a string"),
        ({"source_type": "csv", "source_name": None}, "ingest_source_config.source_name must be a string"),
        ([], "ingest_source_config must be an object"),
    ],
)  # fmt: skip
async def test_ingest_source_config(alice: httpx.AsyncClient, source: Any, message: str) -> None:
    response = await create(alice, agent_body(ingest_source_config=source))
    assert_agent_error(response, 400, message)
