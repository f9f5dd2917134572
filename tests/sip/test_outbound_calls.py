"""Outbound calls end to end: POST /call -> dialer -> SipEdge -> SIPp carrier gateway, bridged on
answer to a SIPp agent. Each case asserts the call's status through the API, the channels back to
0, the call record and the trunk health."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from harness import free_port
from inbound_env import messages
from outbound_env import FROM, agent, blackhole, carrier, drained, ok, running

from sipedge.metrics import REGISTRY
from sipedge.runtime.dialer import EDGE_LOST, STALE_HEARTBEATS

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(
        __import__("sipp_runner").SIPP is None, reason="sipp not installed (sip-tester)"
    ),
]


def record_of(env, run_id):
    found = [e for e in env.records.events if e.run_id == run_id]
    assert len(found) == 1, env.records.events
    return found[0]


@pytest.mark.parametrize("plus", [True, False])
async def test_answered_call_is_bridged_to_the_agent(tmp_path, plus: bool) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with carrier(env, "uas-carrier-answer.xml") as gw, agent(env) as ag:
            trunk_id = await env.trunk(
                agent_id, [("127.0.0.1", gw.port)], outbound_leading_plus_enabled=plus
            )
            assert await env.health(trunk_id) == "waiting_for_carrier"
            run_id = await env.place(agent_id)
            up = await env.wait_status(run_id, lambda s: s == "in-progress")
            assert up["status"] == "in-progress" and up["answered_at"] is not None
            gw_result = await gw.wait(timeout=20)
            ag_result = await ag.wait(timeout=20)
        assert ok(gw_result), gw_result.output
        assert ok(ag_result), ag_result.output
        state = await env.wait_status(run_id)
        assert state["status"] == "completed", state
        assert state["final_sip_code"] == 200 and state["reason"] == "answered"
        assert state["carrier_call_id"] and state["agent_call_id"]
        assert env.channels(trunk_id) == 0
        record = record_of(env, run_id)
        assert (record.direction, record.final_sip_code, record.hangup_side) == (
            "outbound", 200, "agent",
        )  # fmt: skip
        assert (record.from_number, record.to_number) == (FROM, "+12125550123")
        assert await env.health(trunk_id) == "ready"
        trunk = (await env.client.get(f"/trunk/trunks/{trunk_id}")).json()
        assert trunk["last_outbound_at"] is not None and trunk["last_inbound_at"] is None
        assert trunk["numbers"][0]["last_outbound_at"] is not None
        trace = messages(env.workdir, "uas-carrier-answer.xml")
        want = "+12125550123" if plus else "12125550123"
        assert f"INVITE sip:{want}@127.0.0.1:{gw.port} SIP/2.0" in trace
        assert f"To: <sip:{want}@127.0.0.1>" in trace
        caller = FROM if plus else FROM[1:]
        assert f"From: <sip:{caller}@" in trace
        if not plus:
            assert "sip:+1212" not in trace
        agent_trace = messages(env.workdir, "uas-agent-outbound.xml")
        assert f"X-Sipedge-Run-Id: {run_id}" in agent_trace
        assert f"X-Sipedge-Agent-Id: {agent_id}" in agent_trace
        assert f"X-Sipedge-Trunk-Id: {trunk_id}" in agent_trace


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_busy_carrier_is_not_a_carrier_failure(tmp_path, transport: str) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with carrier(env, "uas-carrier-reject-486.xml", tcp=transport == "tcp") as gw:
            trunk_id = await env.trunk(agent_id, [("127.0.0.1", gw.port)], transport=transport)
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id)
            result = await gw.wait(timeout=10)
        assert ok(result), result.output
        assert (state["status"], state["final_sip_code"], state["reason"]) == ("busy", 486, "busy")
        assert env.channels(trunk_id) == 0
        record = record_of(env, run_id)
        assert (record.final_sip_code, record.decided_by, record.answered_at) == (486, "busy", None)
        assert await env.health(trunk_id) == "ready"  # the carrier answered: no failure
        trace = messages(env.workdir, "uas-carrier-reject-486.xml")
        suffix = ";transport=tcp" if transport == "tcp" else ""
        assert f"INVITE sip:+12125550123@127.0.0.1:{gw.port}{suffix} SIP/2.0" in trace
        assert f"SIP/2.0/{transport.upper()} " in trace


def attempts(result: str) -> float:
    value = REGISTRY.get_sample_value("sipedge_outbound_attempts_total", {"result": result})
    return value or 0.0


async def test_failover_to_the_next_gateway(tmp_path) -> None:
    before = {r: attempts(r) for r in ("server_error", "answered")}
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with (
            carrier(env, "uas-carrier-reject-503.xml") as first,
            carrier(env, "uas-carrier-answer.xml") as second,
            agent(env) as ag,
        ):
            trunk_id = await env.trunk(
                agent_id, [("127.0.0.1", first.port), ("127.0.0.1", second.port)]
            )
            run_id = await env.place(agent_id)
            results = [await r.wait(timeout=20) for r in (first, second, ag)]
        assert all(ok(r) for r in results), [r.output for r in results]
        state = await env.wait_status(run_id)
        assert (state["status"], state["final_sip_code"]) == ("completed", 200)
        assert env.channels(trunk_id) == 0
        assert await env.health(trunk_id) == "ready"
        assert {r: attempts(r) - before[r] for r in before} == {"server_error": 1, "answered": 1}


async def test_silent_gateway_times_out_then_the_next_answers(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        with blackhole() as silent:
            async with carrier(env, "uas-carrier-reject-486.xml") as gw:
                trunk_id = await env.trunk(
                    agent_id, [("127.0.0.1", silent.getsockname()[1]), ("127.0.0.1", gw.port)]
                )
                run_id = await env.place(agent_id)
                ringing = await env.wait_status(run_id, lambda s: s != "queued", timeout=2)
                assert ringing["status"] == "queued"  # nothing answered the first INVITE yet
                state = await env.wait_status(run_id, timeout=10)
                result = await gw.wait(timeout=10)
            invites = [d for d in drained(silent) if d.startswith(b"INVITE ")]
        assert ok(result), result.output
        assert len(invites) > 1  # retransmitted (Timer A) until Timer B, then failover
        assert state["status"] == "busy", state
        assert env.channels(trunk_id) == 0


async def test_401_challenge_is_answered_with_the_trunk_credentials(tmp_path, caplog) -> None:
    caplog.set_level("DEBUG")
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with carrier(env, "uas-carrier-challenge-401.xml") as gw:
            trunk_id = await env.trunk(
                agent_id, [("127.0.0.1", gw.port)],
                auth_username="carrier-user", auth_password="s3cret-Pa55",
            )  # fmt: skip
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id)
            result = await gw.wait(timeout=10)
            trunk_body = (await env.client.get(f"/trunk/trunks/{trunk_id}")).text
        assert ok(result), result.output
        # verifyauth passed: the gateway answered 486, not 403
        assert (state["status"], state["final_sip_code"]) == ("busy", 486), state
        trace = messages(env.workdir, "uas-carrier-challenge-401.xml")
        assert f'uri="sip:+12125550123@127.0.0.1:{gw.port}"' in trace
        assert env.channels(trunk_id) == 0
        for text in (caplog.text, trace, trunk_body, str(state)):
            assert "s3cret-Pa55" not in text


async def test_three_carrier_failures_degrade_then_an_answer_restores(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with carrier(env, "uas-carrier-reject-503.xml", calls=3) as gw:
            trunk_id = await env.trunk(agent_id, [("127.0.0.1", gw.port)])
            for _ in range(3):
                run_id = await env.place(agent_id)
                state = await env.wait_status(run_id)
                assert (state["status"], state["reason"]) == ("failed", "carrier_failure")
            result = await gw.wait(timeout=10)
            assert ok(result, 3), result.output
            assert await env.health(trunk_id) == "degraded"
        # the next answered call lifts it
        async with carrier(env, "uas-carrier-answer.xml") as gw, agent(env) as ag:
            trunk = (await env.client.get(f"/trunk/trunks/{trunk_id}")).json()
            old = trunk["gateways"][0]["id"]
            await env.client.delete(f"/trunk/trunks/{trunk_id}/gateways/{old}")
            added = await env.client.post(
                f"/trunk/trunks/{trunk_id}/gateways", json={"host": "127.0.0.1", "port": gw.port}
            )
            assert added.status_code == 201, added.text
            await env.loader.load()
            run_id = await env.place(agent_id)
            results = [await gw.wait(timeout=20), await ag.wait(timeout=20)]
        assert all(ok(r) for r in results), [r.output for r in results]
        assert (await env.wait_status(run_id))["status"] == "completed"
        assert await env.health(trunk_id) == "ready"
        assert env.channels(trunk_id) == 0


async def test_channels_full_fails_the_call_without_an_invite(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        with blackhole() as gateway:
            trunk_id = await env.trunk(
                agent_id, [("127.0.0.1", gateway.getsockname()[1])], channels=1
            )
            assert env.limiter.try_acquire(trunk_id, 1, "an-inbound-call")
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id)
            await asyncio.sleep(0.2)
            assert drained(gateway) == []
        assert (state["status"], state["reason"], state["final_sip_code"]) == (
            "failed", "channel limit reached", 486,
        )  # fmt: skip
        assert record_of(env, run_id).decided_by == "channels"
        assert env.channels(trunk_id) == 1  # only the inbound call's
        env.limiter.release("an-inbound-call")


class FullCluster:
    """A cluster-wide channel store whose trunks are all full (other nodes hold them)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int, str]] = []

    async def acquire(self, trunk_id: str, limit: int, call_id: str) -> bool:
        self.asked.append((trunk_id, limit, call_id))
        return False

    async def release(self, trunk_id: str, call_id: str) -> None:
        raise AssertionError("nothing was taken")

    async def refresh(self, held: object) -> int:
        return 0

    async def active_many(self, trunk_ids: object) -> dict[str, int]:
        return {}

    async def trunk_ids(self) -> list[str]:
        return []


async def test_a_trunk_full_across_the_cluster_fails_the_call_without_an_invite(tmp_path) -> None:
    store = FullCluster()
    async with running(str(tmp_path), channel_store=store) as env:  # type: ignore[arg-type]
        agent_id = await env.agent_id()
        with blackhole() as gateway:
            trunk_id = await env.trunk(
                agent_id, [("127.0.0.1", gateway.getsockname()[1])], channels=2
            )
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id)
            await asyncio.sleep(0.2)
            assert drained(gateway) == []
        assert (state["status"], state["reason"], state["final_sip_code"]) == (
            "failed", "channel limit reached", 486,
        )  # fmt: skip
        assert store.asked == [(trunk_id, 2, run_id)]  # this node had a channel free
        assert record_of(env, run_id).decided_by == "channels"
        assert env.channels(trunk_id) == 0  # the local channel went back


async def test_hangup_while_ringing_cancels(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with carrier(env, "uas-carrier-ring-cancel.xml") as gw:
            trunk_id, run_id = await env.ringing_call(agent_id, gw.port)
            assert (await env.client.post(f"/call/{run_id}/hangup")).status_code == 200
            state = await env.wait_status(run_id)
            result = await gw.wait(timeout=10)
        assert ok(result), result.output
        assert (state["status"], state["final_sip_code"]) == ("canceled", 487), state
        assert env.channels(trunk_id) == 0
        assert record_of(env, run_id).answered_at is None


async def test_callee_that_never_answers_is_cancelled_at_the_ring_timeout(tmp_path) -> None:
    # [outbound] ring_timeout_seconds: the ringing carrier leg is CANCELled (the SIPp carrier
    # answers the CANCEL 200 and the INVITE 487) and the call ends "no-answer", not "canceled".
    async with running(str(tmp_path), ring_timeout=1.0) as env:
        agent_id = await env.agent_id()
        async with carrier(env, "uas-carrier-ring-cancel.xml") as gw:
            trunk_id, run_id = await env.ringing_call(agent_id, gw.port)
            rang_at = asyncio.get_running_loop().time()
            state = await env.wait_status(run_id)
            waited = asyncio.get_running_loop().time() - rang_at
            result = await gw.wait(timeout=10)
        assert ok(result), result.output
        assert (state["status"], state["final_sip_code"]) == ("no-answer", 487), state
        assert 0.5 < waited < 5.0, waited  # the 1 s timeout, not the 120 s default
        assert env.channels(trunk_id) == 0
        record = record_of(env, run_id)
        assert record.answered_at is None and record.final_sip_code == 487


async def test_a_dialer_that_died_leaves_no_call_in_progress(tmp_path) -> None:
    # Its calls stop being stamped; another dialer (another process or node) ends them
    # "failed", reason "edge lost", once they are STALE_HEARTBEATS intervals old.
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with carrier(env, "uas-carrier-ring-cancel.xml") as gw:
            _trunk_id, run_id = await env.ringing_call(agent_id, gw.port)
            crashed = env.dialer
            await crashed.stop()  # as if its process were gone: no more stamps
            survivor = env.make_dialer()  # type: ignore[misc]
            assert survivor.node_id != crashed.node_id
            assert await survivor.keep_claims() == []  # stamped recently: not stale yet
            env.clock[0] += timedelta(seconds=STALE_HEARTBEATS * 10.0 + 1)
            assert await survivor.keep_claims() == [run_id]
            state = await env.state(run_id)
            assert (state["status"], state["reason"]) == ("failed", EDGE_LOST), state
            assert state["ended_at"] is not None
            assert await survivor.keep_claims() == []  # ended once
            crashed.calls[run_id].hangup()  # let the SIPp carrier finish its scenario
            result = await gw.wait(timeout=10)
        assert ok(result), result.output


async def test_hangup_in_progress_ends_both_legs(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with (
            carrier(env, "uas-carrier-answer.xml") as gw,
            agent(env, "uas-agent-outbound-wait-bye.xml") as ag,
        ):
            trunk_id = await env.trunk(agent_id, [("127.0.0.1", gw.port)])
            run_id = await env.place(agent_id)
            up = await env.wait_status(run_id, lambda s: s == "in-progress")
            assert up["status"] == "in-progress"
            for _ in range(100):  # the agent leg is up and the carrier's re-INVITE answered
                if (await env.state(run_id))["agent_call_id"] and env.dialer.calls[
                    run_id
                ].carrier.reinvite_ack:
                    break
                await asyncio.sleep(0.05)
                await env.dialer.flush()
            assert (await env.client.post(f"/call/{run_id}/hangup")).status_code == 200
            results = [await gw.wait(timeout=10), await ag.wait(timeout=10)]
        assert all(ok(r) for r in results), [r.output for r in results]
        state = await env.wait_status(run_id)
        assert (state["status"], state["reason"]) == ("completed", "hangup"), state
        assert env.channels(trunk_id) == 0
        assert record_of(env, run_id).hangup_side == "edge"


async def test_scheduled_call_is_placed_when_the_window_opens(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        env.clock[0] = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)  # 07:00 in New York
        agent_id = await env.agent_id(guardrails=(9, 17))
        async with carrier(env, "uas-carrier-reject-486.xml") as gw:
            trunk_id = await env.trunk(agent_id, [("127.0.0.1", gw.port)])
            run_id = await env.place(agent_id)
            state = await env.state(run_id)
            assert state["status"] == "scheduled"
            assert state["scheduled_at"] == "2026-01-15T14:00:00Z"
            await env.restart_dialer()  # scheduled calls live in the database
            env.clock[0] = datetime(2026, 1, 15, 13, 59, 59, tzinfo=UTC)
            await asyncio.sleep(0.4)
            assert (await env.state(run_id))["status"] == "scheduled"
            env.clock[0] = datetime(2026, 1, 15, 14, 0, tzinfo=UTC)  # 09:00 in New York
            state = await env.wait_status(run_id)
            result = await gw.wait(timeout=10)
        assert ok(result), result.output
        assert state["status"] == "busy", state
        assert env.channels(trunk_id) == 0


async def test_carrier_bye_ends_both_legs(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        async with (
            carrier(env, "uas-carrier-answer-then-bye.xml") as gw,
            agent(env, "uas-agent-outbound-wait-bye.xml") as ag,
        ):
            trunk_id = await env.trunk(agent_id, [("127.0.0.1", gw.port)])
            run_id = await env.place(agent_id)
            results = [await gw.wait(timeout=20), await ag.wait(timeout=20)]
        assert all(ok(r) for r in results), [r.output for r in results]
        state = await env.wait_status(run_id)
        assert (state["status"], state["reason"]) == ("completed", "answered"), state
        assert record_of(env, run_id).hangup_side == "carrier"
        assert env.channels(trunk_id) == 0


async def test_unreachable_gateway_fails_over(tmp_path) -> None:
    """TCP connection refused is a transport error: the next gateway at once (no Timer B)."""
    before = attempts("transport_error")
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        dead_port = free_port("tcp")  # nothing listens there
        async with carrier(env, "uas-carrier-reject-486.xml", tcp=True) as gw:
            trunk_id = await env.trunk(
                agent_id, [("127.0.0.1", dead_port), ("127.0.0.1", gw.port)], transport="tcp"
            )
            run_id = await env.place(agent_id)
            state = await env.wait_status(run_id, timeout=2.5)
            result = await gw.wait(timeout=10)
        assert ok(result), result.output
        assert state["status"] == "busy", state
        assert env.channels(trunk_id) == 0
    assert attempts("transport_error") == before + 1


async def test_trunk_disabled_after_queueing_fails_the_call(tmp_path) -> None:
    async with running(str(tmp_path)) as env:
        agent_id = await env.agent_id()
        with blackhole() as gateway:
            trunk_id = await env.trunk(agent_id, [("127.0.0.1", gateway.getsockname()[1])])
            await env.dialer.stop()  # the call waits in the table, as for a `sip` node that is down
            run_id = await env.place(agent_id)
            patched = await env.client.patch(
                f"/trunk/trunks/{trunk_id}", json={"outbound_enabled": False}
            )
            assert patched.status_code == 200
            await env.loader.load()
            await env.restart_dialer()
            state = await env.wait_status(run_id)
            assert drained(gateway) == []
        assert (state["status"], state["reason"]) == ("failed", "trunk unavailable")
        assert env.channels(trunk_id) == 0
