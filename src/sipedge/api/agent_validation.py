"""Agent request bodies in, safe one-line messages out (seed "Agent error": HTTP 400).

A body is first checked as a whole (only JSON objects, storable text, finite numbers, bounded
nesting), then validated by the schemas. Of all failures, the seed's five create errors are
reported first, in the seed's order; then the first other failure in field order. A message
names the field by its path (`tasks[0].task_config.voicemail must be a boolean`) and never
repeats the rejected input: only our own field names and list positions are shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from sipedge.api.errors import AgentError
from sipedge.api.schemas import agent_tasks
from sipedge.api.schemas.agents import PROMPT_KEY, AgentConfigPatch, AgentCreate, AgentPatch
from sipedge.api.schemas.common import is_storable
from sipedge.store.agent_config import AgentChanges, AgentConfig

MAX_DEPTH = 32
# The seed's create errors, in the seed's order: reported before any other failure.
_SEED_ORDER = {
    "seed_agent_config": 0,
    "seed_tasks": 1,
    "seed_pipelines": 2,
    "seed_temperature": 3,
    "seed_reasoning_effort": 4,
}
_SEED_MISSING = {("agent_config",): "seed_agent_config", ("agent_config", "tasks"): "seed_tasks"}
_OWN_MESSAGE_TYPES = {*_SEED_ORDER, "agent_rule"}
_TYPE_WORDS = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be a boolean",
    "bool_parsing": "must be a boolean",
    "string_type": "must be a string",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be an array",
    "string_too_short": "must not be empty",
    "finite_number": "must be a finite number",
}


def _known_names() -> frozenset[str]:
    names: set[str] = {"agent_config", "agent_prompts"}
    models: list[type[BaseModel]] = [AgentCreate, AgentPatch, AgentConfigPatch]
    models += [
        value
        for value in vars(agent_tasks).values()
        if isinstance(value, type) and issubclass(value, BaseModel)
    ]
    seen: set[type[BaseModel]] = set()
    while models:
        model = models.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            names.add(name)
            annotation = info.annotation
            for arg in (annotation, *getattr(annotation, "__args__", ())):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    models.append(arg)
    return frozenset(names)


KNOWN_NAMES = _known_names()


def field_path(loc: Sequence[str | int]) -> str:
    """`("agent_config", "tasks", 0, "toolchain")` -> `tasks[0].toolchain`; unknown keys -> `*`."""
    parts = list(loc)
    if parts[:1] == ["agent_config"] and len(parts) > 1:
        parts = parts[1:]
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        name = part if part in KNOWN_NAMES or PROMPT_KEY.match(part) else "*"
        text += f".{name}" if text else name
    return text or "body"


def error_message(error: Mapping[str, Any]) -> str:
    type_ = str(error.get("type", ""))
    if type_ in _OWN_MESSAGE_TYPES:
        return str(error.get("msg", "invalid value"))
    path = field_path(error.get("loc", ()))
    ctx = error.get("ctx") or {}
    if type_ == "missing":
        return f"{path} is required"
    if type_ in _TYPE_WORDS:
        return f"{path} {_TYPE_WORDS[type_]}"
    if type_ == "agent_number_range":
        return f"{path} must be between -1000000000 and 1000000000"
    if type_ == "literal_error":
        return f"{path} must be one of {ctx.get('expected', 'the documented values')}"
    if type_ == "string_too_long":
        return f"{path} is too long (at most {ctx.get('max_length')} characters)"
    if type_ == "too_long":
        return f"{path} has too many entries (at most {ctx.get('max_length')})"
    if type_ == "too_short":
        return f"{path} needs at least {ctx.get('min_length')} entries"
    for bound, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if bound in ctx and type_.startswith(("greater", "less")):
            return f"{path} must be {word} {ctx[bound]}"
    return f"{path} is invalid"


def _priority(error: Mapping[str, Any]) -> int:
    type_ = str(error.get("type"))
    if type_ == "missing":
        type_ = _SEED_MISSING.get(tuple(error.get("loc", ())), type_)
    return _SEED_ORDER.get(type_, len(_SEED_ORDER))


def _first_message(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    return error_message(min(errors, key=_priority))  # min() keeps the first of equals


def check_json(body: Any) -> dict[str, Any]:
    """The whole body: a JSON object, storable text, finite numbers, nesting <= MAX_DEPTH."""
    if not isinstance(body, dict):
        raise AgentError(400, "request body must be a JSON object")
    if not is_storable(body):
        raise AgentError(400, "text cannot contain NUL characters or unpaired surrogates")
    pending: list[tuple[Any, int]] = [(body, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise AgentError(400, "numbers must be finite")
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise AgentError(400, f"the body is nested deeper than {MAX_DEPTH} levels")
            items = value.values() if isinstance(value, dict) else value
            pending.extend((item, depth + 1) for item in items)
    return body


def _context(allow_private_webhooks: bool) -> dict[str, Any]:
    return {"allow_private_webhooks": allow_private_webhooks}


def parse_config(body: Any, *, allow_private_webhooks: bool) -> AgentConfig:
    """A create or PUT body as a whole configuration, else `AgentError` 400."""
    data = check_json(body)
    try:
        parsed = AgentCreate.model_validate(data, context=_context(allow_private_webhooks))
    except ValidationError as exc:
        raise AgentError(400, _first_message(exc)) from None
    return parsed.config()


def parse_changes(body: Any, *, allow_private_webhooks: bool) -> AgentChanges:
    """A PATCH body as the changes it asks for (seed PATCH rules 1-2), else `AgentError` 400."""
    data = check_json(body)
    try:
        parsed = AgentPatch.model_validate(data, context=_context(allow_private_webhooks))
    except ValidationError as exc:
        raise AgentError(400, _first_message(exc)) from None
    return AgentChanges(parsed.changes())
