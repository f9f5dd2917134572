"""Create and PUT validation of the task fields (the seed's task_config table, tools_config),
agent_prompts and webhook_url, exact bodies."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api.agent_helpers import agent_body, assert_agent_error, create, make_agent
from api.conftest import Api

TASK_INTS = [
    "hangup_after_silence",
    "incremental_delay",
    "number_of_words_for_interruption",
    "backchanneling_message_gap",
    "backchanneling_start_delay",
    "call_terminate",
    "inbound_limit",
    "welcome_message_delay",
    "trigger_user_online_message_after",
    "voicemail_detection_duration",
    "voicemail_check_interval",
    "voicemail_min_transcript_length",
]
TASK_BOOLS = [
    "hangup_after_LLMCall",
    "backchanneling",
    "ambient_noise",
    "disallow_unknown_numbers",
    "dtmf_enabled",
    "auto_reschedule",
    "check_if_user_online",
    "voicemail",
]
TASK_TEXT_OR_NULL = ["call_cancellation_prompt", "call_hangup_message"]
TASK_ANY = ["whitelist_phone_numbers", "noise_cancellation_level", "voicemail_detection_time"]


def with_task_config(**fields: Any) -> dict[str, Any]:
    body = agent_body()
    body["agent_config"]["tasks"][0]["task_config"].update(fields)
    return body


# --- task_config: every field of the seed's table ------------------------------------------


@pytest.mark.parametrize("field", TASK_INTS)
async def test_task_config_integers(alice: httpx.AsyncClient, field: str) -> None:
    for value in (True, "10", 1.5, None, [1]):  # bool is not an integer here
        response = await create(alice, with_task_config(**{field: value}))
        assert_agent_error(response, 400, f"tasks[0].task_config.{field} must be an integer")


@pytest.mark.parametrize("field", TASK_BOOLS)
async def test_task_config_booleans(alice: httpx.AsyncClient, field: str) -> None:
    for value in (1, 0, "true", None):
        response = await create(alice, with_task_config(**{field: value}))
        assert_agent_error(response, 400, f"tasks[0].task_config.{field} must be a boolean")


@pytest.mark.parametrize("field", TASK_TEXT_OR_NULL)
async def test_task_config_strings_or_null(alice: httpx.AsyncClient, field: str) -> None:
    for value in (5, True, {"text": "x"}):
        response = await create(alice, with_task_config(**{field: value}))
        assert_agent_error(response, 400, f"tasks[0].task_config.{field} must be a string")
    assert (await create(alice, with_task_config(**{field: None}))).status_code == 201
    assert (await create(alice, with_task_config(**{field: "bye"}))).status_code == 201


async def test_task_config_ambient_noise_track_is_a_string(alice: httpx.AsyncClient) -> None:
    for value in (None, 1):
        response = await create(alice, with_task_config(ambient_noise_track=value))
        message = "tasks[0].task_config.ambient_noise_track must be a string"
        assert_agent_error(response, 400, message)


async def test_task_config_accepts_every_field_typed_right(alice: httpx.AsyncClient) -> None:
    fields: dict[str, Any] = {name: 3 for name in TASK_INTS}
    fields.update({name: True for name in TASK_BOOLS})
    fields.update({name: "text" for name in TASK_TEXT_OR_NULL})
    fields.update(dict(zip(TASK_ANY, [["+14155550123"], "high", 2.5], strict=True)))
    agent_id = await make_agent(alice, with_task_config(**fields))
    agent = (await alice.get(f"/v2/agent/{agent_id}")).json()
    for name, value in fields.items():
        assert agent["tasks"][0]["task_config"][name] == value, name


@pytest.mark.parametrize("field", TASK_ANY)
async def test_task_config_unspecified_types(alice: httpx.AsyncClient, field: str) -> None:
    for value in (None, 1, "x", [1, "a"], {"k": True}):
        assert (await create(alice, with_task_config(**{field: value}))).status_code == 201


async def test_task_config_integer_range(alice: httpx.AsyncClient) -> None:
    response = await create(alice, with_task_config(call_terminate=2**31))
    assert_agent_error(response, 400, "tasks[0].task_config.call_terminate must be <= 2147483647")


# --- tools_config and task shapes ----------------------------------------------------------


def _set(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    target = body["agent_config"]["tasks"][0]
    *parents, last = path.split(".")
    for part in parents:
        target = target[part]
    target[last] = value
    return body


@pytest.mark.parametrize(
    ("path", "value", "word"),
    [
        ("tools_config.synthesizer.stream", "yes", "must be a boolean"),
        ("tools_config.synthesizer.buffer_size", 1.5, "must be an integer"),
        ("tools_config.synthesizer.provider_config.voice", 1, "must be a string"),
        ("tools_config.synthesizer.provider_config", "Riya", "must be an object"),
        ("tools_config.transcriber.sampling_rate", "16000", "must be an integer"),
        ("tools_config.transcriber.endpointing", False, "must be an integer"),
        ("tools_config.transcriber.language", None, "must be a string"),
        ("tools_config.input.format", 1, "must be a string"),
        ("tools_config.output", "wav", "must be an object"),
        ("tools_config.llm_agent.llm_config.max_tokens", True, "must be an integer"),
        ("tools_config.llm_agent.llm_config.top_p", "0.9", "must be a number"),
        ("tools_config.llm_agent.llm_config.presence_penalty", False, "must be a number"),
        ("tools_config.llm_agent.llm_config.use_responses_api", 1, "must be a boolean"),
        ("tools_config.llm_agent.llm_config.compact_threshold", 1.5, "must be an integer"),
        ("tools_config.llm_agent.llm_config.summarization_details", "x", "must be an object"),
        ("tools_config.llm_agent.llm_config.model", 5, "must be a string"),
        ("tools_config.llm_agent.routes.routes", {}, "must be an array"),
        ("tools_config.llm_agent.agent_type", 1, "must be a string"),
        ("tools_config.api_tools", [], "must be an object"),
        ("tools_config", None, "must be an object"),
        ("task_config", [], "must be an object"),
        ("toolchain.execution", 1, "must be a string"),
        ("task_type", None, "must be a string"),
    ],
)
async def test_task_field_types(alice: httpx.AsyncClient, path: str, value: Any, word: str) -> None:
    response = await create(alice, _set(agent_body(), path, value))
    assert_agent_error(response, 400, f"tasks[0].{path} {word}")


async def test_route_score_threshold_is_a_number(alice: httpx.AsyncClient) -> None:
    body = agent_body()
    routes = body["agent_config"]["tasks"][0]["tools_config"]["llm_agent"]["routes"]["routes"]
    routes[0]["score_threshold"] = "high"
    message = "tasks[0].tools_config.llm_agent.routes.routes[0].score_threshold must be a number"
    assert_agent_error(await create(alice, body), 400, message)


async def test_nullable_task_fields_accept_null(alice: httpx.AsyncClient) -> None:
    body = agent_body()
    for path in (
        "tools_config.llm_agent.llm_config.compact_threshold",
        "tools_config.llm_agent.llm_config.extraction_details",
        "tools_config.llm_agent.routes",
        "tools_config.api_tools",
        "tools_config.s2s",
        "tools_config.multilingual_config",
        "tools_config.transcriber",
    ):
        _set(body, path, None)
    assert (await create(alice, body)).status_code == 201


# --- agent_prompts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompts", "message"),
    [
        ({"first": {"system_prompt": "x"}}, "agent_prompts keys must be task_<n> (task_1, task_2, ...)"),
        ({"task_0": {"system_prompt": "x"}}, "agent_prompts keys must be task_<n> (task_1, task_2, ...)"),
        ({"task_2": {"system_prompt": "x"}}, "agent_prompts has a prompt for a task that does not exist"),
        ({"task_1": {}}, "agent_prompts.task_1.system_prompt is required"),
        ({"task_1": {"system_prompt": 5}}, "agent_prompts.task_1.system_prompt must be a string"),
        ({"task_1": "x"}, "agent_prompts.task_1 must be an object"),
        ([], "agent_prompts must be an object"),
    ],
)  # fmt: skip
async def test_agent_prompts(alice: httpx.AsyncClient, prompts: Any, message: str) -> None:
    body = agent_body()
    body["agent_prompts"] = prompts
    assert_agent_error(await create(alice, body), 400, message)


# --- webhook_url ---------------------------------------------------------------------------

INVALID_URL = "webhook_url must be an http or https URL"
PRIVATE_URL = "webhook_url must not point at a private, loopback or link-local address"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.com/x", INVALID_URL),
        ("hooks.example.com/x", INVALID_URL),
        ("https://", INVALID_URL),
        ("https://hooks.example.com:99999/x", INVALID_URL),
        ("https://hooks .example.com/", INVALID_URL),
        ("http://2130706433/", INVALID_URL),
        ("http://0x7f.1/", INVALID_URL),
        ("http://127.1/", INVALID_URL),
        ("https://" + "a" * 2050 + ".com/", INVALID_URL),
        ("http://127.0.0.1:8080/hook", PRIVATE_URL),
        ("http://10.1.2.3/hook", PRIVATE_URL),
        ("http://192.168.0.10/hook", PRIVATE_URL),
        ("http://169.254.169.254/latest/meta-data", PRIVATE_URL),
        ("http://0.0.0.0/", PRIVATE_URL),
        ("http://[::1]/hook", PRIVATE_URL),
        ("http://[::ffff:127.0.0.1]/hook", PRIVATE_URL),
        ("http://[fd00::1]/hook", PRIVATE_URL),
        ("http://localhost:9000/hook", PRIVATE_URL),
        ("http://api.localhost/hook", PRIVATE_URL),
        ("http://metadata.google.internal/", PRIVATE_URL),
        ("http://printer.local/", PRIVATE_URL),
        ("http://webhook-receiver/", PRIVATE_URL),
    ],
)
async def test_webhook_url_refused(alice: httpx.AsyncClient, url: str, message: str) -> None:
    response = await create(alice, agent_body(webhook_url=url))
    assert_agent_error(
        response,
        400,
        "webhook_url is too long (at most 2048 characters)" if len(url) > 2048 else message,
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/calls?token=abc",
        "http://hooks.example.cafe:8080/x",
        "https://8.8.8.8/hook",
        "https://[2001:4860:4860::8888]/hook",
        "HTTPS://Hooks.Example.com/",
    ],
)
async def test_webhook_url_accepted(alice: httpx.AsyncClient, url: str) -> None:
    agent_id = await make_agent(alice, agent_body(webhook_url=url))
    assert (await alice.get(f"/v2/agent/{agent_id}")).json()["webhook_url"] == url


async def test_private_webhooks_allowed_by_the_setting(api: Api) -> None:
    client = await api.client("alice", allow_private=True)
    for url in ("http://127.0.0.1:8080/hook", "http://localhost/x", "http://receiver/"):
        assert (await create(client, agent_body(webhook_url=url))).status_code == 201
    # the scheme rule still holds
    response = await create(client, agent_body(webhook_url="file:///etc/passwd"))
    assert_agent_error(response, 400, INVALID_URL)
