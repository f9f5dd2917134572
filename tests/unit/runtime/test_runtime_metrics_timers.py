"""Closed-vocabulary metric labels bound once, and the per-call timer helper."""

from __future__ import annotations

import asyncio

from sipedge.edge.decisions import MetricReason
from sipedge.metrics import (
    DROP_CHILDREN,
    ENDING_CHILDREN,
    INBOUND_CHILDREN,
    CallEnd,
    InboundAction,
    InboundOutcome,
)
from sipedge.runtime.call_timers import CallTimers, call_deadlines


def test_every_edge_reason_has_a_bound_metric_child() -> None:
    for reason in MetricReason:
        outcome = InboundOutcome(reason.value)
        assert (InboundAction.REJECTED, outcome) in INBOUND_CHILDREN
        assert (InboundAction.DROPPED, outcome) in INBOUND_CHILDREN
        assert outcome in DROP_CHILDREN
    assert (InboundAction.ACCEPTED, InboundOutcome.ACCEPTED) in INBOUND_CHILDREN
    assert set(ENDING_CHILDREN) == set(CallEnd)


async def test_call_timers_fire_replace_and_cancel() -> None:
    loop = asyncio.get_running_loop()
    timers = CallTimers(call_deadlines(loop))
    fired: list[str] = []
    timers.start("a", 0.01, lambda: fired.append("a1"))
    timers.start("a", 0.02, lambda: fired.append("a2"))  # replaces the first
    timers.start("b", 0.01, lambda: fired.append("b"))
    timers.cancel("b")
    timers.start("c", 0.01, lambda: 1 / 0)  # a failing callback is logged, not raised
    await asyncio.sleep(0.05)
    assert fired == ["a2"] and len(timers) == 0
    timers.start("d", 0.01, lambda: fired.append("d"))
    assert "d" in timers
    timers.cancel_all()
    await asyncio.sleep(0.03)
    assert fired == ["a2"]
