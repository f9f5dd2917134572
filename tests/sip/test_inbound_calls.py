"""Bridged inbound calls end to end: SIPp carrier -> SipEdge -> SIPp agent, on loopback.

Each case asserts SIPp's verdict on both sides (the scenarios check the X-Sipedge-* headers, the
codec filtering and the topology hiding with <ereg>) and the edge's own state afterwards: no
channel held, exactly one call record with the right code, rule and hangup side."""

from __future__ import annotations

import asyncio

import pytest
from inbound_env import (
    messages,
    ok,
    run_pair,
    running_edge,
    snapshot,
    trunk,
)
from sipp_runner import SIPP, sipp, wait_bound

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]


def only_record(env):
    assert len(env.records.events) == 1, env.records.events
    return env.records.events[0]


async def test_answered_call_carrier_hangs_up(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(
            env, "uac-answered-expect-200.xml", "uas-answer-wait-bye.xml"
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        record = only_record(env)
        assert (record.final_sip_code, record.decided_by, record.hangup_side) == (
            200,
            "answered",
            "carrier",
        )
        assert record.answered_at is not None and record.agent_call_id != record.carrier_call_id
        assert (record.number_id, record.agent_id, record.to_number) == (
            "number-1",
            "agent-1",
            "+14155550100",
        )
        assert record.from_number == "+14155550999"
        assert env.activity.crossed == [("trunk-1", "number-1")]
        assert env.activity.outcomes == [("trunk-1", "answered")]  # lifts a degraded trunk
        # The agent saw this call's run id; the carrier saw one Via (its own) in every response.
        assert f"X-Sipedge-Run-Id: {record.run_id}" in messages(
            env.workdir, "uas-answer-wait-bye.xml"
        )
        carrier_trace = messages(env.workdir, "uac-answered-expect-200.xml")
        received = [b for b in carrier_trace.split("\n-----") if "message received" in b]
        assert len(received) >= 4  # 100, 180, 200, 200 (BYE)
        for block in received:
            assert block.count("\nVia:") == 1, block
            assert "X-Sipedge" not in block and "agent-internal" not in block


async def test_answered_call_over_tcp(tmp_path) -> None:
    async with running_edge(str(tmp_path), snapshot(trunk(transport="tcp"))) as env:
        carrier, agent = await run_pair(
            env, "uac-answered-expect-200.xml", "uas-answer-wait-bye.xml", tcp=True
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        assert only_record(env).decided_by == "answered"


async def test_agent_hangs_up_first(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(
            env, "uac-agent-hangs-up-expect-200.xml", "uas-agent-bye.xml"
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        record = only_record(env)
        assert (record.final_sip_code, record.decided_by, record.hangup_side) == (
            200,
            "answered",
            "agent",
        )


async def test_hold_reinvite_and_dtmf_info_are_relayed(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(env, "uac-hold-expect-200.xml", "uas-answer-reinvite.xml")
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        assert only_record(env).hangup_side == "carrier"


async def test_cancel_while_ringing_gives_487_and_cancels_the_agent(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(env, "uac-cancel-expect-487.xml", "uas-ring-cancel.xml")
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        record = only_record(env)
        assert (record.final_sip_code, record.decided_by, record.hangup_side) == (
            487,
            "canceled",
            "carrier",
        )
        assert record.answered_at is None


async def test_max_call_duration_hangs_up_both_legs(tmp_path) -> None:
    async with running_edge(str(tmp_path), max_call_duration=0.5) as env:
        carrier, agent = await run_pair(
            env, "uac-agent-hangs-up-expect-200.xml", "uas-answer-wait-bye.xml"
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        record = only_record(env)
        assert (record.decided_by, record.hangup_side) == ("max_duration", "edge")


async def test_stop_ends_live_calls_with_bye_on_both_legs(tmp_path) -> None:
    from inbound_env import agent_args, carrier_args

    async with running_edge(str(tmp_path)) as env:
        async with sipp(agent_args(env, "uas-answer-wait-bye.xml"), workdir=env.workdir) as a:
            await wait_bound(env.agent_port, "udp")
            async with sipp(
                carrier_args(env, "uac-agent-hangs-up-expect-200.xml"), workdir=env.workdir
            ) as c:
                await env.wait_calls(1)
                await asyncio.sleep(0.2)  # the carrier's ACK
                assert_held_call_is_lean(env)
                await env.edge.stop()
                carrier = await c.wait(timeout=10)
            agent = await a.wait(timeout=10)
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        record = only_record(env)
        assert (record.decided_by, record.hangup_side) == ("shutdown", "edge")


def assert_held_call_is_lean(env) -> None:
    """An answered, confirmed call keeps its dialogs, not its INVITEs (RFC 6026 Accepted states
    keep no messages to re-send), and its timers are heap entries, not loop handles."""
    (call,) = env.edge.services.live.values()
    assert call.phase.value == "confirmed"
    tx = call.invite_tx
    assert tx.state.value == "accepted" and tx.fsm.last_response is None
    # The call points at the transactions' skeletons, not at the full offers; it keeps its
    # agent INVITE transaction no longer (the layer retired both to records).
    for request in (call.invite, call.agent_invite):
        assert request.body == b"" and "content-type" not in request.headers
    assert call.invite is tx.request and call.agent_tx is None
    assert env.edge._layer._client == {} and env.edge._layer._server == {}
    assert call.carrier.ok is None and call.agent.ok is None  # both ACKs seen / sent
    assert "max" in call.timers and call.timers._deadlines is env.edge.services.call_deadlines


async def test_missing_ack_ends_the_call_after_64_t1(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(env, "uac-no-ack-expect-200.xml", "uas-answer-wait-bye.xml")
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        record = only_record(env)
        assert (record.decided_by, record.hangup_side, record.final_sip_code) == (
            "no_ack",
            "edge",
            200,
        )
        # The 2xx was retransmitted (T1 doubling) while the ACK was missing.
        trace = messages(env.workdir, "uac-no-ack-expect-200.xml")
        assert trace.count("SIP/2.0 200 OK\nVia") >= 3


async def test_late_offer_answer_travels_in_the_acks(tmp_path) -> None:
    """No SDP in the carrier's INVITE: the agent's offer reaches the carrier filtered to the
    trunk's codecs, and the edge holds its ACK to the agent until the carrier's ACK brings the
    answer (also filtered)."""
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(env, "uac-late-offer-expect-200.xml", "uas-late-offer.xml")
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        assert only_record(env).decided_by == "answered"


async def test_agent_2xx_crossing_our_cancel_is_acked_and_hung_up(tmp_path) -> None:
    """CANCEL race: the agent's 200 arrives after the call ended; the edge ACKs and BYEs it, and
    the call is still recorded once, as cancelled."""
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(
            env, "uac-cancel-expect-487.xml", "uas-answers-despite-cancel.xml"
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        assert only_record(env).decided_by == "canceled"


async def test_reinvite_without_a_trunk_codec_gets_488_and_the_call_survives(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(
            env, "uac-hold-g729-expect-488.xml", "uas-answer-wait-bye.xml"
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output  # the agent never saw the refused re-INVITE
        assert env.channels_in_use() == 0
        record = only_record(env)
        assert (record.decided_by, record.hangup_side) == ("answered", "carrier")


async def test_wildcard_bind_advertises_the_address_peers_reach(tmp_path) -> None:
    # The default config listens on 0.0.0.0 with no advertised address: Via and Contact must
    # still name an address the peers can reach, never the wildcard.
    async with running_edge(str(tmp_path), host="0.0.0.0") as env:
        carrier, agent = await run_pair(
            env, "uac-answered-expect-200.xml", "uas-answer-wait-bye.xml"
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        agent_trace = messages(env.workdir, "uas-answer-wait-bye.xml")
        carrier_trace = messages(env.workdir, "uac-answered-expect-200.xml")
        assert "0.0.0.0" not in agent_trace
        assert "0.0.0.0" not in carrier_trace
        assert f"Contact: <sip:127.0.0.1:{env.port}" in carrier_trace.replace("sipedge@", "")


class _Statuses:
    def __init__(self) -> None:
        self.events: list[str] = []

    def status_changed(self, event) -> None:
        self.events.append(event.status)


@pytest.mark.parametrize(("has_webhook", "expected"), [(True, 3), (False, 0)])
async def test_statuses_are_only_queued_for_agents_with_a_webhook(
    tmp_path, has_webhook: bool, expected: int
) -> None:
    """The routing snapshot knows which agents have a webhook_url: the others' calls queue no
    status at all (no outbox work per call); unknown counts as having one."""
    from inbound_env import NUMBER

    from sipedge.edge.snapshot import AgentView, NumberView, build_snapshot

    number = NumberView("number-1", "trunk-1", NUMBER, NUMBER[1:], agent_id="agent-1")
    agent = AgentView("agent-1", has_webhook=has_webhook)
    snap = build_snapshot([trunk()], [number], [agent], version=2)
    sink = _Statuses()
    async with running_edge(str(tmp_path), snap, statuses=sink) as env:
        carrier, agent = await run_pair(
            env, "uac-answered-expect-200.xml", "uas-answer-wait-bye.xml"
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert len(env.records.events) == 1  # the call record is written either way
    assert len(sink.events) == expected
    if expected:
        assert sink.events == ["ringing", "in-progress", "completed"]
