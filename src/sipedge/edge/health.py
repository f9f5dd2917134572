"""Trunk health from call outcomes (SPEC §5 "Trunk health", the seed's States table).

``transition(state, outcome) -> state`` is a lookup in ``TRANSITIONS``; the consecutive
carrier-failure count rides along. ``disabled`` is not a state the machine keeps: it is what
``reported_health`` shows while the trunk is not active, whatever the calls did.

- ``waiting_for_carrier`` until a call crosses the trunk (an INVITE past step 3, or any response
  from the carrier to an outbound INVITE);
- ``degraded`` after three or more consecutive outbound calls that were carrier failures with no
  answered call since; only an answered call brings it back to ``ready``;
- ``ready`` otherwise. A callee's own answer (busy, no answer, declined, other 4xx/6xx) breaks a
  failure streak below the threshold but does not lift ``degraded``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = [
    "DEGRADED_AFTER",
    "TRANSITIONS",
    "Health",
    "HealthOutcome",
    "HealthState",
    "reported_health",
    "transition",
]

DEGRADED_AFTER: Final = 3


class Health(StrEnum):
    WAITING_FOR_CARRIER = "waiting_for_carrier"
    READY = "ready"
    DEGRADED = "degraded"
    DISABLED = "disabled"  # reported only, never kept (see reported_health)


class HealthOutcome(StrEnum):
    INBOUND_ACCEPTED = "inbound_accepted"  # an INVITE passed step 3
    CARRIER_RESPONDED = "carrier_responded"  # any response to an outbound INVITE
    ANSWERED = "answered"  # a call on the trunk was answered (either direction)
    CARRIER_FAILURE = "carrier_failure"  # an outbound call ended as a carrier failure
    CALLEE_REFUSED = "callee_refused"  # busy, no answer, declined, other final 4xx/6xx


@dataclass(frozen=True, slots=True)
class HealthState:
    health: Health = Health.WAITING_FOR_CARRIER
    failures: int = 0  # consecutive outbound carrier failures

    @classmethod
    def from_stored(cls, name: str, failures: int = 0) -> HealthState:
        """From the persisted ``health_state`` and streak (degraded means a streak ≥ 3)."""
        if name == Health.DEGRADED:
            return cls(Health.DEGRADED, max(failures, DEGRADED_AFTER))
        if name == Health.READY:
            return cls(Health.READY, failures)
        return cls(failures=failures)


_BY_COUNT = "by_count"  # degraded when the streak reached DEGRADED_AFTER, else ready

_W, _R, _D = Health.WAITING_FOR_CARRIER, Health.READY, Health.DEGRADED
_O = HealthOutcome

TRANSITIONS: dict[tuple[Health, HealthOutcome], Health | str] = {
    (_W, _O.INBOUND_ACCEPTED): _BY_COUNT,
    (_W, _O.CARRIER_RESPONDED): _BY_COUNT,
    (_W, _O.ANSWERED): _R,
    (_W, _O.CARRIER_FAILURE): _W,  # nothing crossed yet (timeouts, unreachable gateways)
    (_W, _O.CALLEE_REFUSED): _R,
    (_R, _O.INBOUND_ACCEPTED): _R,
    (_R, _O.CARRIER_RESPONDED): _R,
    (_R, _O.ANSWERED): _R,
    (_R, _O.CARRIER_FAILURE): _BY_COUNT,
    (_R, _O.CALLEE_REFUSED): _R,
    (_D, _O.INBOUND_ACCEPTED): _D,
    (_D, _O.CARRIER_RESPONDED): _D,
    (_D, _O.ANSWERED): _R,
    (_D, _O.CARRIER_FAILURE): _D,
    (_D, _O.CALLEE_REFUSED): _D,
}


def _failures(state: HealthState, outcome: HealthOutcome) -> int:
    if outcome is HealthOutcome.ANSWERED:
        return 0
    if outcome is HealthOutcome.CARRIER_FAILURE:
        return state.failures + 1
    if outcome is HealthOutcome.CALLEE_REFUSED and state.health is not Health.DEGRADED:
        return 0
    return state.failures


def transition(state: HealthState, outcome: HealthOutcome) -> HealthState:
    """The next state; a state not in the table (``DISABLED``) is left unchanged."""
    target = TRANSITIONS.get((state.health, outcome))
    if target is None:
        return state
    failures = _failures(state, outcome)
    if target == _BY_COUNT:
        health = Health.DEGRADED if failures >= DEGRADED_AFTER else Health.READY
    else:
        health = Health(target)
    if health is state.health and failures == state.failures:
        return state
    return HealthState(health, failures)


def reported_health(state: HealthState, *, is_active: bool) -> Health:
    """What the trunk API shows: ``disabled`` while not active, else the state's health."""
    return state.health if is_active else Health.DISABLED
