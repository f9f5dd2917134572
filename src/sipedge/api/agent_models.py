"""What the agent API knows about language models: one table, easy to extend.

Providers add models faster than we do, so a model name not listed here is accepted with any
`reasoning_effort`; the rules below apply only to the families named. A name is matched
case-insensitively, after dropping a provider prefix (`azure/gpt-5` is `gpt-5`), against the
longest listed prefix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

# reasoning_effort values each model family accepts; an empty tuple: the family takes none, so a
# non-null reasoning_effort is refused.
REASONING_EFFORTS: Mapping[str, tuple[str, ...]] = {
    "gpt-5.1": ("none", "low", "medium", "high"),
    "gpt-5-pro": ("high",),
    "gpt-5-chat": (),
    "gpt-5": ("minimal", "low", "medium", "high"),
    "o1-mini": (),
    "o1-preview": (),
    "o1": ("low", "medium", "high"),
    "o3": ("low", "medium", "high"),
    "o4-mini": ("low", "medium", "high"),
    "gpt-4": (),  # gpt-4, gpt-4o, gpt-4.1 and their minis
    "gpt-3.5": (),
}
# Models that accept only temperature 1 (seed: "GPT-5-series models accept only 1").
FIXED_TEMPERATURE_PREFIXES = ("gpt-5",)
FIXED_TEMPERATURE = 1.0
DEFAULT_TEMPERATURE = 0.1


def model_key(model: str) -> str:
    """`Azure/GPT-5-mini` -> `gpt-5-mini`."""
    return model.rsplit("/", 1)[-1].strip().lower()


def _family(model: str) -> str | None:
    key = model_key(model)
    matches = [prefix for prefix in REASONING_EFFORTS if key.startswith(prefix)]
    return max(matches, key=len) if matches else None


def accepted_efforts(model: str) -> tuple[str, ...] | None:
    """The reasoning_effort values `model` accepts; None: unknown model, anything goes."""
    family = _family(model)
    return None if family is None else REASONING_EFFORTS[family]


def effort_supported(model: str | None, effort: str) -> bool:
    if model is None:
        return True
    accepted = accepted_efforts(model)
    return accepted is None or effort in accepted


def fixed_temperature(model: str | None) -> float | None:
    """The only temperature `model` accepts, or None when any is fine."""
    if model is not None and model_key(model).startswith(FIXED_TEMPERATURE_PREFIXES):
        return FIXED_TEMPERATURE
    return None


def default_temperature(model: str | None) -> float:
    """0.1 (seed), except for models that accept one value only: that value."""
    fixed = fixed_temperature(model)
    return DEFAULT_TEMPERATURE if fixed is None else fixed


def temperature_allowed(model: str | None, temperature: float) -> bool:
    fixed = fixed_temperature(model)
    return fixed is None or math.isclose(temperature, fixed)
