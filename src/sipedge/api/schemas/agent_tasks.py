"""The seed's Task: toolchain, tools_config (llm_agent, synthesizer, transcriber, input, output)
and task_config, with the type of every field the seed names.

Inside a task, keys the seed does not name are kept as sent (provider settings change faster
than this table); the named ones are type-checked strictly: `true` is not an integer, `"10"` is
not a number, and `null` is refused unless the seed allows it. Fields not sent stay unset, so
the stored task holds exactly what the caller sent (plus the temperature default).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sipedge.api import agent_models

# Unset fields are never dumped (`exclude_unset`); typing them as their own type keeps an
# explicit `null` a type error.
UNSET: Any = None
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

Int = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]


def _number(value: Any) -> Any:
    """A JSON number kept as sent (`0` stays `0`); booleans are not numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("float_type", "Input should be a valid number")
    if not -1e9 <= value <= 1e9:
        raise PydanticCustomError("agent_number_range", "out of range")
    return value


Number = Annotated[int | float, PlainValidator(_number)]
Name = Annotated[str, Field(max_length=200)]
Url = Annotated[str, Field(max_length=2048)]
Text = Annotated[str, Field(max_length=20_000)]
MAX_PIPELINES = 20
MAX_COMPONENTS = 20
PIPELINES_MESSAGE = "toolchain.pipelines must be array of arrays"
_TOKEN = re.compile(r"^[A-Za-z0-9._:/-]{1,64}$")


class OpenModel(BaseModel):
    """Named fields checked; other keys kept as sent."""

    model_config = ConfigDict(strict=True, extra="allow")


class Toolchain(OpenModel):
    execution: Name = UNSET
    pipelines: list[list[Name]] = Field(default=None, validate_default=True)

    @field_validator("pipelines", mode="before")
    @classmethod
    def _array_of_arrays(cls, value: Any) -> Any:
        if not isinstance(value, list) or not all(isinstance(p, list) for p in value):
            raise PydanticCustomError("seed_pipelines", PIPELINES_MESSAGE)
        if not value or len(value) > MAX_PIPELINES:
            raise PydanticCustomError(
                "agent_rule", f"toolchain.pipelines must hold 1-{MAX_PIPELINES} pipelines"
            )
        for pipeline in value:
            if not pipeline or len(pipeline) > MAX_COMPONENTS:
                raise PydanticCustomError(
                    "agent_rule",
                    f"each toolchain pipeline must list 1-{MAX_COMPONENTS} component names",
                )
            if not all(isinstance(name, str) and name for name in pipeline):
                raise PydanticCustomError(
                    "agent_rule", "toolchain pipelines hold component names (strings)"
                )
        return value


class Route(OpenModel):
    route_name: Name = UNSET
    utterances: list[Text] = Field(default=UNSET, max_length=1000)
    response: Text = UNSET
    score_threshold: Number = UNSET


class Routes(OpenModel):
    embedding_model: Name = UNSET
    routes: list[Route] = Field(default=UNSET, max_length=200)


def _token(value: str) -> str | None:
    return value if _TOKEN.match(value) else None


class LlmConfig(OpenModel):
    agent_flow_type: Name = UNSET
    provider: Name = UNSET
    family: Name = UNSET
    model: Name = UNSET
    summarization_details: dict[str, Any] | None = UNSET
    extraction_details: dict[str, Any] | None = UNSET
    max_tokens: Count = UNSET
    temperature: Number | None = UNSET
    reasoning_effort: Name | None = UNSET
    verbosity: Name = UNSET
    use_responses_api: bool = UNSET
    compact_threshold: Int | None = UNSET
    presence_penalty: Number = UNSET
    frequency_penalty: Number = UNSET
    top_p: Number = UNSET
    min_p: Number = UNSET
    top_k: Int = UNSET
    base_url: Url = UNSET
    request_json: bool = UNSET

    @model_validator(mode="after")
    def _model_rules(self) -> Self:
        model = self.model if "model" in self.model_fields_set else None
        temperature = self.temperature
        if temperature is None:
            self.temperature = agent_models.default_temperature(model)
        elif not agent_models.temperature_allowed(model, temperature):
            raise PydanticCustomError("seed_temperature", "For GPT-5 models, temperature must be 1")
        elif temperature < 0 or temperature > 2:
            raise PydanticCustomError("agent_rule", "temperature must be between 0 and 2")
        effort = self.reasoning_effort
        if effort is not None and not agent_models.effort_supported(model, effort):
            shown_effort, shown_model = _token(effort), _token(model or "")
            if shown_effort is None or shown_model is None:
                message = "reasoning_effort is not supported for this model"
            else:
                message = (
                    f"reasoning_effort '{shown_effort}' is not supported for model '{shown_model}'"
                )
            raise PydanticCustomError("seed_reasoning_effort", message)
        return self


class LlmAgent(OpenModel):
    agent_type: Name = UNSET
    agent_flow_type: Name = UNSET
    routes: Routes | None = UNSET
    llm_config: LlmConfig = UNSET


class ProviderConfig(OpenModel):
    voice: Name = UNSET
    voice_id: Name = UNSET
    model: Name = UNSET


class Synthesizer(OpenModel):
    provider: Name = UNSET
    provider_config: ProviderConfig = UNSET
    stream: bool = UNSET
    buffer_size: Count = UNSET
    audio_format: Name = UNSET


class Transcriber(OpenModel):
    provider: Name = UNSET
    model: Name = UNSET
    language: Name = UNSET
    encoding: Name = UNSET
    stream: bool = UNSET
    sampling_rate: Count = UNSET
    endpointing: Int = UNSET


class AudioIO(OpenModel):
    provider: Name = UNSET
    format: Name = UNSET


class ToolsConfig(OpenModel):
    llm_agent: LlmAgent | None = UNSET
    synthesizer: Synthesizer | None = UNSET
    transcriber: Transcriber | None = UNSET
    input: AudioIO | None = UNSET
    output: AudioIO | None = UNSET
    api_tools: dict[str, Any] | None = UNSET
    s2s: dict[str, Any] | None = UNSET
    multilingual_config: dict[str, Any] | None = UNSET


class TaskConfig(OpenModel):
    """The seed's `task_config` table; units and meanings are not shown, so only types."""

    hangup_after_silence: Int = UNSET
    incremental_delay: Int = UNSET
    number_of_words_for_interruption: Int = UNSET
    backchanneling_message_gap: Int = UNSET
    backchanneling_start_delay: Int = UNSET
    call_terminate: Int = UNSET
    inbound_limit: Int = UNSET
    welcome_message_delay: Int = UNSET
    trigger_user_online_message_after: Int = UNSET
    voicemail_detection_duration: Int = UNSET
    voicemail_check_interval: Int = UNSET
    voicemail_min_transcript_length: Int = UNSET
    hangup_after_LLMCall: bool = UNSET
    backchanneling: bool = UNSET
    ambient_noise: bool = UNSET
    disallow_unknown_numbers: bool = UNSET
    dtmf_enabled: bool = UNSET
    auto_reschedule: bool = UNSET
    check_if_user_online: bool = UNSET
    voicemail: bool = UNSET
    call_cancellation_prompt: Text | None = UNSET
    call_hangup_message: Text | None = UNSET
    ambient_noise_track: Name = UNSET
    whitelist_phone_numbers: Any = UNSET
    noise_cancellation_level: Any = UNSET
    voicemail_detection_time: Any = UNSET


class Task(OpenModel):
    task_type: Name = UNSET
    toolchain: Toolchain = UNSET
    tools_config: ToolsConfig = UNSET
    task_config: TaskConfig = UNSET
