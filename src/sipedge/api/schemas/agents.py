"""Agent schemas: the create/PUT body, the PATCH body (seed rules 1-5) and the response shapes.

Agent-level objects (`agent_config`, `calling_guardrails`, `ingest_source_config`, the body
itself) ignore keys the seed does not name; tasks and synthesizers keep them (agent_tasks.py).
Validation runs with `context={"allow_private_webhooks": bool}`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sipedge.api.schemas.agent_tasks import UNSET, Name, Synthesizer, Task, Url
from sipedge.api.webhook_urls import WebhookUrlError, validate_webhook_url
from sipedge.store.agent_config import AgentConfig, CallingGuardrails, masked_source
from sipedge.store.models import Agent

TelephonyProvider = Literal["twilio", "plivo", "exotel", "vobiz", "sip-trunk", "default"]
SourceType = Literal["api", "csv", "google_sheet"]
Hour = Annotated[int, Field(ge=0, le=23)]
MAX_TASKS = 20
MAX_PROMPT = 200_000
PROMPT_KEY = re.compile(r"^task_[1-9][0-9]{0,3}$")


class ClosedModel(BaseModel):
    """Named fields checked; other keys ignored (not stored)."""

    model_config = ConfigDict(strict=True, extra="ignore")


def _rule(message: str, type_: str = "agent_rule") -> PydanticCustomError:
    return PydanticCustomError(type_, message)


class CallingGuardrailsIn(ClosedModel):
    call_start_hour: Hour
    call_end_hour: Hour

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.call_end_hour < self.call_start_hour:
            raise _rule("calling_guardrails.call_end_hour must be >= call_start_hour")
        return self

    def value(self) -> CallingGuardrails:
        return CallingGuardrails(self.call_start_hour, self.call_end_hour)


class IngestSourceConfig(ClosedModel):
    source_type: SourceType
    source_url: Url = UNSET
    source_auth_token: Annotated[str, Field(max_length=4096)] = UNSET
    source_name: Name = UNSET


class Prompt(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    system_prompt: Annotated[str, Field(max_length=MAX_PROMPT)]


Prompts = Annotated[dict[str, Prompt], Field(max_length=MAX_TASKS)]


def check_prompt_keys(value: Any) -> Any:
    if isinstance(value, dict) and not all(
        isinstance(key, str) and PROMPT_KEY.match(key) for key in value
    ):
        raise _rule("agent_prompts keys must be task_<n> (task_1, task_2, ...)")
    return value


def check_webhook(value: str | None, info: ValidationInfo) -> str | None:
    if value is None:
        return None
    allow_private = bool((info.context or {}).get("allow_private_webhooks", False))
    try:
        return validate_webhook_url(value, allow_private=allow_private)
    except WebhookUrlError as exc:
        raise _rule(str(exc)) from None


class AgentConfigIn(ClosedModel):
    """`agent_config` of create and PUT (seed "Agent (request shape)")."""

    agent_name: Annotated[str, Field(min_length=1, max_length=200)]
    agent_welcome_message: Annotated[str, Field(max_length=5_000)]
    webhook_url: Url | None
    tasks: Annotated[list[Task], Field(max_length=MAX_TASKS)]
    agent_type: Annotated[str, Field(min_length=1, max_length=50)] = "other"
    ingest_source_config: IngestSourceConfig | None = None
    calling_guardrails: CallingGuardrailsIn | None = None
    call_summary_enabled: bool = False
    telephony_provider: TelephonyProvider | None = None
    synthesizer: Synthesizer | None = None

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks_present(cls, value: Any) -> Any:
        if value is None or value == []:
            raise _rule("tasks is required", "seed_tasks")
        return value

    _webhook = field_validator("webhook_url")(check_webhook)


class AgentCreate(ClosedModel):
    """The body of create and PUT: `agent_config` plus its sibling `agent_prompts`."""

    agent_config: AgentConfigIn
    agent_prompts: Prompts = Field(default_factory=dict)

    @field_validator("agent_config", mode="before")
    @classmethod
    def _config_present(cls, value: Any) -> Any:
        if value is None:
            raise _rule("agent_config is required", "seed_agent_config")
        return value

    _prompt_keys = field_validator("agent_prompts", mode="before")(check_prompt_keys)

    def config(self) -> AgentConfig:
        body = self.agent_config
        return AgentConfig(
            agent_name=body.agent_name,
            agent_welcome_message=body.agent_welcome_message,
            webhook_url=body.webhook_url,
            tasks=[task.model_dump(mode="json", exclude_unset=True) for task in body.tasks],
            agent_type=body.agent_type,
            telephony_provider=body.telephony_provider,
            call_summary_enabled=body.call_summary_enabled,
            calling_guardrails=(
                None if body.calling_guardrails is None else body.calling_guardrails.value()
            ),
            ingest_source_config=_dump(body.ingest_source_config),
            synthesizer=_dump(body.synthesizer),
            agent_prompts={
                key: prompt.model_dump(mode="json") for key, prompt in self.agent_prompts.items()
            },
        )


def _dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(mode="json", exclude_unset=True)


# PATCH: attributes that may not be null (the others: null removes them).
NOT_NULL_ON_PATCH = (
    "agent_name",
    "agent_welcome_message",
    "synthesizer",
    "telephony_provider",
    "call_summary_enabled",
)


class AgentConfigPatch(ClosedModel):
    """The patchable part of `agent_config` (seed PATCH rule 1); anything else is ignored."""

    agent_name: Annotated[str, Field(min_length=1, max_length=200)] = UNSET
    agent_welcome_message: Annotated[str, Field(max_length=5_000)] = UNSET
    webhook_url: Url | None = UNSET
    synthesizer: Synthesizer = UNSET
    ingest_source_config: IngestSourceConfig | None = UNSET
    telephony_provider: TelephonyProvider = UNSET
    calling_guardrails: CallingGuardrailsIn | None = UNSET
    call_summary_enabled: bool = UNSET

    @field_validator(*NOT_NULL_ON_PATCH, mode="before")
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            raise _rule(f"{info.field_name} cannot be null")
        return value

    _webhook = field_validator("webhook_url")(check_webhook)


class AgentPatch(ClosedModel):
    agent_config: AgentConfigPatch = UNSET
    agent_prompts: Prompts = UNSET

    _prompt_keys = field_validator("agent_prompts", mode="before")(check_prompt_keys)

    def changes(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        if "agent_config" in self.model_fields_set:
            body = self.agent_config
            for name in body.model_fields_set:
                value = getattr(body, name)
                if isinstance(value, CallingGuardrailsIn):
                    value = value.value()
                elif isinstance(value, BaseModel):
                    value = value.model_dump(mode="json", exclude_unset=True)
                values[name] = value
        if "agent_prompts" in self.model_fields_set:
            values["agent_prompts"] = {
                key: prompt.model_dump(mode="json") for key, prompt in self.agent_prompts.items()
            }
        return values


class CallingGuardrailsOut(BaseModel):
    call_start_hour: int
    call_end_hour: int


class AgentOut(BaseModel):
    """The seed's Agent response shape, plus the request fields it leaves out (so a GET can be
    edited and PUT back): agent_welcome_message, webhook_url, telephony_provider,
    calling_guardrails, synthesizer. `source_auth_token` is masked."""

    id: str
    agent_name: str
    agent_type: str
    agent_status: Literal["seeding", "processed"]
    created_at: datetime
    updated_at: datetime
    tasks: list[dict[str, Any]]
    ingest_source_config: dict[str, Any] | None
    call_summary_enabled: bool
    agent_prompts: dict[str, dict[str, Any]]
    agent_welcome_message: str
    webhook_url: str | None
    telephony_provider: str | None
    calling_guardrails: CallingGuardrailsOut | None
    synthesizer: dict[str, Any] | None

    @classmethod
    def from_row(cls, agent: Agent) -> AgentOut:
        guardrails = None
        if agent.call_start_hour is not None and agent.call_end_hour is not None:
            guardrails = CallingGuardrailsOut(
                call_start_hour=agent.call_start_hour, call_end_hour=agent.call_end_hour
            )
        return cls(
            id=agent.id,
            agent_name=agent.agent_name,
            agent_type=agent.agent_type,
            agent_status=agent.agent_status,  # type: ignore[arg-type]
            created_at=agent.created_at,
            updated_at=agent.updated_at,
            tasks=agent.tasks,
            ingest_source_config=masked_source(agent.ingest_source_config),
            call_summary_enabled=agent.call_summary_enabled,
            agent_prompts=agent.agent_prompts,
            agent_welcome_message=agent.agent_welcome_message,
            webhook_url=agent.webhook_url,
            telephony_provider=agent.telephony_provider,
            calling_guardrails=guardrails,
            synthesizer=agent.synthesizer,
        )


class AgentPage(BaseModel):
    items: list[AgentOut]
    total: int
    limit: int
    offset: int


class AgentCreated(BaseModel):
    agent_id: str
    state: Literal["created"] = "created"


class AgentReplaced(BaseModel):
    agent_id: str
    status: Literal["updated"] = "updated"


class AgentPatched(BaseModel):
    message: Literal["success"] = "success"
    state: Literal["updated"] = "updated"


class AgentDeleted(BaseModel):
    agent_id: str
    is_deleted: Literal[True] = True


class AgentErrorBody(BaseModel):
    error: int
    message: str
