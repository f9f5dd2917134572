"""A realistic agent body and helpers shared by the agent API tests."""

from __future__ import annotations

import copy
from typing import Any

import httpx

# The seed's response shape plus the request fields it leaves out (documented in AgentOut).
AGENT_KEYS = {
    "id",
    "agent_name",
    "agent_type",
    "agent_status",
    "created_at",
    "updated_at",
    "tasks",
    "ingest_source_config",
    "call_summary_enabled",
    "agent_prompts",
    "agent_welcome_message",
    "webhook_url",
    "telephony_provider",
    "calling_guardrails",
    "synthesizer",
}
TOKEN = "crm-token-SECRET-91f2"
WEBHOOK = "https://hooks.example.com/calls"


def synthesizer(voice: str = "Riya") -> dict[str, Any]:
    return {
        "provider": "elevenlabs",
        "provider_config": {"voice": voice, "voice_id": "v-123", "model": "eleven_turbo_v2_5"},
        "stream": True,
        "buffer_size": 250,
        "audio_format": "wav",
    }


def task(model: str = "gpt-4.1-mini", **llm: Any) -> dict[str, Any]:
    return {
        "task_type": "conversation",
        "toolchain": {
            "execution": "parallel",
            "pipelines": [["transcriber", "llm", "synthesizer"]],
        },
        "tools_config": {
            "llm_agent": {
                "agent_type": "simple_llm_agent",
                "agent_flow_type": "streaming",
                "routes": {
                    "embedding_model": "snowflake/snowflake-arctic-embed-m",
                    "routes": [
                        {
                            "route_name": "politics",
                            "utterances": ["Who are you voting for?"],
                            "response": "I cannot talk about that.",
                            "score_threshold": 0.9,
                        }
                    ],
                },
                "llm_config": {
                    "agent_flow_type": "streaming",
                    "provider": "openai",
                    "family": "openai",
                    "model": model,
                    "summarization_details": None,
                    "extraction_details": None,
                    "max_tokens": 150,
                    "presence_penalty": 0,
                    "frequency_penalty": 0,
                    "base_url": "https://api.openai.com/v1",
                    "top_p": 0.9,
                    "min_p": 0.1,
                    "top_k": 0,
                    "request_json": True,
                    **llm,
                },
            },
            "synthesizer": synthesizer(),
            "transcriber": {
                "provider": "deepgram",
                "model": "nova-3",
                "language": "en",
                "stream": True,
                "sampling_rate": 16000,
                "encoding": "linear16",
                "endpointing": 100,
            },
            "input": {"provider": "plivo", "format": "wav"},
            "output": {"provider": "plivo", "format": "wav"},
            "api_tools": None,
        },
        "task_config": {
            "hangup_after_silence": 10,
            "incremental_delay": 400,
            "number_of_words_for_interruption": 2,
            "hangup_after_LLMCall": False,
            "call_cancellation_prompt": None,
            "backchanneling": False,
            "backchanneling_message_gap": 5,
            "backchanneling_start_delay": 5,
            "ambient_noise": False,
            "ambient_noise_track": "office-ambience",
            "call_terminate": 90,
            "voicemail": False,
            "inbound_limit": -1,
            "whitelist_phone_numbers": None,
            "disallow_unknown_numbers": False,
            "dtmf_enabled": False,
            "call_hangup_message": "Thanks for your time, goodbye.",
        },
    }


def agent_body(**config: Any) -> dict[str, Any]:
    """A full create/PUT body; keyword arguments replace `agent_config` fields."""
    body: dict[str, Any] = {
        "agent_config": {
            "agent_name": "Alfred",
            "agent_welcome_message": "Hello {customer_name}, this is Alfred.",
            "webhook_url": WEBHOOK,
            "agent_type": "other",
            "tasks": [task()],
            "ingest_source_config": {
                "source_type": "api",
                "source_url": "https://crm.example.com/leads",
                "source_auth_token": TOKEN,
                "source_name": "crm",
            },
            "calling_guardrails": {"call_start_hour": 9, "call_end_hour": 17},
            "call_summary_enabled": True,
            "telephony_provider": "plivo",
            "synthesizer": synthesizer(),
        },
        "agent_prompts": {"task_1": {"system_prompt": "You are Alfred, a polite assistant."}},
    }
    body["agent_config"].update(config)
    return copy.deepcopy(body)


async def create(client: httpx.AsyncClient, body: Any) -> httpx.Response:
    return await client.post("/v2/agent", json=body)


async def make_agent(client: httpx.AsyncClient, body: dict[str, Any] | None = None) -> str:
    """Create an agent over the API; asserts 201 and returns its id."""
    response = await client.post("/v2/agent", json=agent_body() if body is None else body)
    assert response.status_code == 201, response.text
    agent_id: str = response.json()["agent_id"]
    return agent_id


def assert_agent_error(response: httpx.Response, status: int, message: str | None = None) -> str:
    """The seed's Agent error: `{error: <status>, message}` with the given HTTP status."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message"}, body
    assert body["error"] == status and isinstance(body["message"], str), body
    if message is not None:
        assert body["message"] == message, body
    result: str = body["message"]
    return result


def llm_config(agent: dict[str, Any], index: int = 0) -> dict[str, Any]:
    config: dict[str, Any] = agent["tasks"][index]["tools_config"]["llm_agent"]["llm_config"]
    return config
