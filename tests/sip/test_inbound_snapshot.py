"""Snapshot swaps take effect on the very next INVITE (no restart, no database on the call path),
and calls on a trunk that leaves the snapshot are hung up on both legs."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from inbound_env import (
    HOST,
    NUMBER_NO_AGENT,
    agent_args,
    carrier_args,
    ok,
    raw_invite,
    running_edge,
    snapshot,
    statuses,
    trunk,
    udp_exchange,
)
from sipp_runner import SIPP, sipp, wait_bound

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]


async def test_disabling_a_trunk_refuses_the_next_invite(tmp_path) -> None:
    async with running_edge(str(tmp_path), unknown_source="reject") as env:
        dest = (HOST, env.port)
        first = await udp_exchange(
            raw_invite(env.port, number=NUMBER_NO_AGENT, call_id="s-1"), dest
        )
        assert sorted(set(statuses(first))) == [100, 480]  # admitted: the agent rule answers
        env.snapshots.current = snapshot(trunk(is_active=False), version=2)
        second = await udp_exchange(
            raw_invite(env.port, number=NUMBER_NO_AGENT, call_id="s-2"), dest
        )
        assert set(statuses(second)) == {403}  # stateless: no 100 Trying
        assert b'"unknown source"' in second[0]
        # Another inbound trunk listing the same range still admits the address (the number
        # stays trunk-1's, which no longer takes inbound calls: 404 from trunk-2's view).
        other = replace(trunk(), id="trunk-2", cidrs=("127.0.0.0/24",))
        env.snapshots.current = snapshot(trunk(inbound_enabled=False), other, version=3)
        third = await udp_exchange(
            raw_invite(env.port, number=NUMBER_NO_AGENT, call_id="s-3"), dest
        )
        assert sorted(set(statuses(third))) == [100, 404]
        assert env.channels_in_use() == 0


async def test_calls_on_a_removed_trunk_end_on_both_legs(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        async with sipp(agent_args(env, "uas-answer-wait-bye.xml"), workdir=env.workdir) as a:
            await wait_bound(env.agent_port, "udp")
            async with sipp(
                carrier_args(env, "uac-agent-hangs-up-expect-200.xml"), workdir=env.workdir
            ) as c:
                await env.wait_calls(1)
                await asyncio.sleep(0.2)
                other = replace(trunk(), id="trunk-2", cidrs=("127.0.0.2/32",))
                env.snapshots.current = snapshot(other, version=2)  # trunk-1 deleted
                carrier = await c.wait(timeout=10)
            agent = await a.wait(timeout=10)
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        [record] = env.records.events
        assert (record.decided_by, record.hangup_side, record.final_sip_code) == (
            "trunk_deleted",
            "edge",
            200,
        )
