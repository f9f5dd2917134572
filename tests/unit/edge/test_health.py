"""Trunk health from call outcomes (SPEC §5 "Trunk health")."""

from __future__ import annotations

import itertools

import pytest

from sipedge.edge.health import (
    TRANSITIONS,
    Health,
    HealthOutcome,
    HealthState,
    reported_health,
    transition,
)

W, R, D = Health.WAITING_FOR_CARRIER, Health.READY, Health.DEGRADED
IN = HealthOutcome.INBOUND_ACCEPTED
RESP = HealthOutcome.CARRIER_RESPONDED
ANS = HealthOutcome.ANSWERED
FAIL = HealthOutcome.CARRIER_FAILURE
BUSY = HealthOutcome.CALLEE_REFUSED

SEQUENCES: list[tuple[str, list[HealthOutcome], Health]] = [
    ("fresh trunk", [], W),
    ("inbound call crossed", [IN], R),
    ("carrier responded to an outbound INVITE", [RESP], R),
    ("answered", [ANS], R),
    ("busy is a crossing", [BUSY], R),
    ("timeouts only: nothing crossed", [FAIL, FAIL, FAIL, FAIL], W),
    ("three failures after crossing", [IN, FAIL, FAIL, FAIL], D),
    ("two failures are not enough", [IN, FAIL, FAIL], R),
    ("a crossing after silent failures", [FAIL, FAIL, FAIL, RESP], D),
    ("busy breaks the streak", [IN, FAIL, FAIL, BUSY, FAIL], R),
    ("degraded until an answer", [IN, FAIL, FAIL, FAIL, IN, RESP, BUSY], D),
    ("answered lifts degraded", [IN, FAIL, FAIL, FAIL, ANS], R),
    ("answer resets the count", [IN, FAIL, FAIL, FAIL, ANS, FAIL, FAIL], R),
    ("and again", [IN, FAIL, FAIL, FAIL, ANS, FAIL, FAIL, FAIL], D),
]


@pytest.mark.parametrize(("name", "outcomes", "expected"), SEQUENCES, ids=[s[0] for s in SEQUENCES])
def test_sequences(name: str, outcomes: list[HealthOutcome], expected: Health) -> None:
    state = HealthState()
    for outcome in outcomes:
        state = transition(state, outcome)
    assert state.health is expected


def test_every_kept_state_handles_every_outcome() -> None:
    kept = (W, R, D)
    assert set(TRANSITIONS) == set(itertools.product(kept, HealthOutcome))


@pytest.mark.parametrize("state", [HealthState(W), HealthState(R), HealthState(D, 5)])
def test_disabled_while_inactive(state: HealthState) -> None:
    assert reported_health(state, is_active=False) is Health.DISABLED
    assert reported_health(state, is_active=True) is state.health


@pytest.mark.parametrize(
    ("stored", "expected"),
    [("waiting_for_carrier", HealthState()), ("ready", HealthState(R)), ("degraded", HealthState(D, 3)),
     ("bogus", HealthState())],
)  # fmt: skip
def test_from_stored(stored: str, expected: HealthState) -> None:
    assert HealthState.from_stored(stored) == expected


def test_disabled_state_is_inert() -> None:
    state = HealthState(Health.DISABLED)
    assert transition(state, ANS) is state
