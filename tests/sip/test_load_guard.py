"""Issue #7 item 5: a functional check under load, not a timing assertion.

SIPp places 2,000 answered calls at 200 calls/s (10 s, 200 ms hold) through the in-process edge
to a SIPp agent: every call must succeed, every call must leave exactly one call record, and no
call, channel or transaction may be left once the RFC timers have run out. The edge shares this
test's event loop (the plain asyncio loop, slower than production's uvloop), so it also guards
against a regression that makes 200 calls/s unaffordable. Timing targets live in ``bench/``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from harness import free_port
from inbound_env import HOST, NUMBER, SCENARIOS, running_edge, snapshot, trunk
from sipp_runner import SIPP, sipp, wait_bound

from sipedge.runtime.serve import GC_THRESHOLDS

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (apt-get install sip-tester)"),
]

RATE = 200
CALLS = 2000


@pytest.fixture
def production_gc() -> Iterator[None]:
    """The collector as ``sipedge serve`` sets it up after start (runtime.serve): without it a
    full collection of this test process's large heap stalls the shared loop for long enough
    (hundreds of ms) to make both SIPps retransmit."""
    thresholds = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


async def test_200_calls_per_second_for_10_seconds_all_succeed(tmp_path, production_gc) -> None:
    snap = snapshot(trunk(channels=1000))
    # RFC default timers (T1 = 500 ms): the suite's short T1 would retransmit under load.
    async with running_edge(str(tmp_path), snap, t1=0.5, t2=4.0) as env:
        agent = [
            "-sf", str(SCENARIOS / "uas-answer-wait-bye.xml"), "-i", HOST,
            "-p", str(env.agent_port), "-t", "u1", "-timeout", "60", "-timeout_error", "-trace_err",
        ]  # fmt: skip
        carrier = [
            "-sf", str(SCENARIOS / "uac-answered-expect-200.xml"), f"{HOST}:{env.port}",
            "-i", HOST, "-p", str(free_port("udp")), "-t", "u1", "-s", NUMBER,
            "-r", str(RATE), "-m", str(CALLS), "-l", str(CALLS),
            "-timeout", "60", "-timeout_error", "-trace_err",
        ]  # fmt: skip
        async with sipp(agent, workdir=env.workdir) as agent_run:
            await wait_bound(env.agent_port, "udp")
            async with sipp(carrier, workdir=env.workdir) as carrier_run:
                placed = await carrier_run.wait(timeout=60)
            agent_run.proc.terminate()  # the agent scenario has no call count: it serves until told
            await agent_run.wait(timeout=10)
        await env.settle(timeout=10)
        stats = placed.stats
        assert placed.returncode == 0, placed.output + _errors(tmp_path)
        assert stats.get("SuccessfulCall(C)") == str(CALLS), placed.output
        assert stats.get("FailedCall(C)") == "0", placed.output
        assert len(env.records.events) == CALLS
        assert {(r.final_sip_code, r.decided_by) for r in env.records.events} == {(200, "answered")}
        assert env.edge.active_calls == 0 and env.channels_in_use() == 0


def _errors(workdir) -> str:
    """SIPp's -trace_err log(s): why calls failed, for the assertion message."""
    return "".join(p.read_text(errors="replace")[-3000:] for p in workdir.glob("*_errors.log"))
