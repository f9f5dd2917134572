"""An agent's configuration as the store takes it, and the rules applied to stored JSON.

The API validates request bodies into these values; the repository (`store/agents.py`) writes
them. Nothing here touches the database.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TELEPHONY_PROVIDERS = ("twilio", "plivo", "exotel", "vobiz", "sip-trunk", "default")
# Seed PATCH rule 3. `default` is absent: it keeps the tasks' formats as they are.
AUDIO_FORMAT_BY_PROVIDER: Mapping[str, str] = {
    "twilio": "wav",
    "plivo": "wav",
    "exotel": "wav",
    "vobiz": "wav",
    "sip-trunk": "ulaw",
}
AGENT_STATUSES = ("seeding", "processed")
# What GET shows instead of `ingest_source_config.source_auth_token`. Sent back unchanged in a PUT
# or PATCH, it means "keep the stored token", so a read-modify-write never loses the secret.
SECRET_MASK = "********"
SECRET_KEY = "source_auth_token"


@dataclass(frozen=True, slots=True)
class CallingGuardrails:
    call_start_hour: int
    call_end_hour: int


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """A whole, validated configuration: what create and PUT store."""

    agent_name: str
    agent_welcome_message: str
    webhook_url: str | None
    tasks: list[dict[str, Any]]
    agent_type: str = "other"
    telephony_provider: str | None = None
    call_summary_enabled: bool = False
    calling_guardrails: CallingGuardrails | None = None
    ingest_source_config: dict[str, Any] | None = None
    synthesizer: dict[str, Any] | None = None
    agent_prompts: dict[str, dict[str, Any]] = field(default_factory=dict)


# The attributes PATCH may change (seed PATCH rule 1); `agent_prompts` is top-level in the body.
PATCHABLE = frozenset(
    {
        "agent_name",
        "agent_welcome_message",
        "webhook_url",
        "synthesizer",
        "ingest_source_config",
        "telephony_provider",
        "calling_guardrails",
        "call_summary_enabled",
        "agent_prompts",
    }
)


@dataclass(frozen=True, slots=True)
class AgentChanges:
    """A validated PATCH: only the keys present in `values` change (seed PATCH rule 2).

    `values` maps names in `PATCHABLE` to new values: `webhook_url`, `ingest_source_config` and
    `calling_guardrails` may be None (removed); `agent_prompts` is merged per task key.
    """

    values: Mapping[str, Any]

    def __post_init__(self) -> None:
        unknown = set(self.values) - PATCHABLE
        if unknown:
            raise ValueError(f"not patchable: {', '.join(sorted(unknown))}")


def keep_stored_secret(
    incoming: dict[str, Any] | None, stored: dict[str, Any] | None
) -> dict[str, Any] | None:
    """`incoming` with a masked `source_auth_token` replaced by the stored token (or dropped)."""
    if incoming is None or incoming.get(SECRET_KEY) != SECRET_MASK:
        return incoming
    result = dict(incoming)
    previous = (stored or {}).get(SECRET_KEY)
    if previous is None:
        del result[SECRET_KEY]
    else:
        result[SECRET_KEY] = previous
    return result


def masked_source(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """`ingest_source_config` as shown to callers: the token replaced by `SECRET_MASK`."""
    if config is None or not config.get(SECRET_KEY):
        return config
    return {**config, SECRET_KEY: SECRET_MASK}


def with_audio_format(tasks: list[dict[str, Any]], provider: str) -> list[dict[str, Any]]:
    """Seed PATCH rule 3: every task's input and output format follows the telephony provider.

    `default` (and any provider without a format) leaves the tasks as they are."""
    audio_format = AUDIO_FORMAT_BY_PROVIDER.get(provider)
    result = copy.deepcopy(tasks)
    if audio_format is None:
        return result
    for task in result:
        tools = _tools_config(task)
        for side in ("input", "output"):
            current = tools.get(side)
            tools[side] = {**(current if isinstance(current, dict) else {}), "format": audio_format}
    return result


def with_synthesizer(
    tasks: list[dict[str, Any]], synthesizer: dict[str, Any]
) -> list[dict[str, Any]]:
    """A PATCHed `synthesizer` replaces every task's `tools_config.synthesizer`."""
    result = copy.deepcopy(tasks)
    for task in result:
        _tools_config(task)["synthesizer"] = copy.deepcopy(synthesizer)
    return result


def _tools_config(task: dict[str, Any]) -> dict[str, Any]:
    tools = task.get("tools_config")
    if not isinstance(tools, dict):
        tools = task["tools_config"] = {}
    return tools
