"""Inbound refusals end to end: each SPEC §5 rule answers its code with
`Warning: 399 sipedge "<rule>"` (checked by the SIPp scenario), keeps one call record once the
call passed step 3, and never leaves a channel held. Unknown sources: silence, or 403."""

from __future__ import annotations

import pytest
from inbound_env import (
    HOST,
    NUMBER,
    NUMBER_NO_AGENT,
    agent_args,
    carrier_args,
    messages,
    ok,
    raw_invite,
    run_carrier,
    run_pair,
    running_edge,
    snapshot,
    statuses,
    trunk,
    udp_exchange,
)
from sipp_runner import SIPP, sipp, wait_bound

from sipedge.metrics import REGISTRY

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def refusal_record(env, code: int, rule: str):
    assert len(env.records.events) == 1, env.records.events
    record = env.records.events[0]
    assert (record.final_sip_code, record.decided_by, record.trunk_id) == (code, rule, "trunk-1")
    assert record.answered_at is None
    return record


@pytest.mark.parametrize(
    ("scenario", "service", "snap", "code", "rule"),
    [
        ("uac-unknown-number-expect-404.xml", "+14155550199", None, 404, "no_number"),
        ("uac-no-agent-expect-480.xml", NUMBER_NO_AGENT, None, 480, "no_agent"),
        ("uac-no-common-codec-expect-488.xml", NUMBER, None, 488, "codecs"),
        (
            "uac-transport-expect-403.xml",
            NUMBER,
            snapshot(trunk(transport="tcp")),
            403,
            "transport",
        ),
    ],
)
async def test_rule_refuses_with_warning_and_record(
    tmp_path, scenario, service, snap, code, rule
) -> None:
    before = sample("sipedge_inbound_invites_total", action="rejected", outcome=rule)
    async with running_edge(str(tmp_path), snap) as env:
        result = await run_carrier(env, scenario, service=service)
        assert ok(result), result.output
        assert env.channels_in_use() == 0
        refusal_record(env, code, rule)
        assert env.activity.crossed == [("trunk-1", env.records.events[0].number_id)]
        assert env.activity.outcomes == []  # a refused call is no health outcome
    assert sample("sipedge_inbound_invites_total", action="rejected", outcome=rule) == before + 1


async def test_channel_limit_gives_486_while_a_call_is_up_and_frees_after(tmp_path) -> None:
    snap = snapshot(trunk(channels=1))
    async with running_edge(str(tmp_path), snap, max_call_duration=1.5) as env:
        # Call 1 holds the only channel until the maximum duration hangs it up.
        async with sipp(agent_args(env, "uas-answer-wait-bye.xml"), workdir=env.workdir) as a:
            await wait_bound(env.agent_port, "udp")
            async with sipp(
                carrier_args(env, "uac-agent-hangs-up-expect-200.xml"), workdir=env.workdir
            ) as c:
                await env.wait_calls(1)
                assert env.channels_in_use() == 1
                busy = await run_carrier(env, "uac-busy-channels-expect-486.xml")
                first = await c.wait(timeout=10)
            await a.wait(timeout=10)
        assert ok(busy), busy.output
        assert ok(first), first.output
        await env.settle()
        assert env.channels_in_use() == 0
        assert sorted((r.final_sip_code, r.decided_by) for r in env.records.events) == [
            (200, "max_duration"),
            (486, "channels"),
        ]
        # The channel is free again: the next call goes through.
        env.records.events.clear()
        carrier, agent = await run_pair(
            env, "uac-answered-expect-200.xml", "uas-answer-wait-bye.xml"
        )
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        await env.settle()
        assert env.channels_in_use() == 0


async def test_number_without_agent_falls_back_to_trunk_default(tmp_path) -> None:
    snap = snapshot(trunk(default_inbound_agent_id="agent-default"))
    async with running_edge(str(tmp_path), snap) as env:
        carrier, agent = await run_pair(
            env, "uac-answered-expect-200.xml", "uas-answer-any.xml", service=NUMBER_NO_AGENT
        )
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        trace = messages(env.workdir, "uas-answer-any.xml")
        assert "X-Sipedge-Agent-Id: agent-default" in trace
        assert "X-Sipedge-Number-Id: number-2" in trace
        assert env.channels_in_use() == 0
        [record] = env.records.events
        assert record.agent_id == "agent-default"


async def test_agent_error_response_gives_503_and_releases(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(env, "uac-agent-down-expect-503.xml", "uas-answer-503.xml")
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        record = refusal_record(env, 503, "agent_failure")
        assert record.hangup_side == "agent"


async def test_agent_busy_is_relayed_as_is(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        carrier, agent = await run_pair(env, "uac-agent-busy-expect-486.xml", "uas-answer-486.xml")
        await env.settle()
        assert ok(carrier), carrier.output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        refusal_record(env, 486, "agent_declined")


async def test_agent_not_answering_gives_503_after_timer_b(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:  # nothing listens on the agent port
        result = await run_carrier(env, "uac-agent-down-expect-503.xml")
        await env.settle()
        assert ok(result), result.output
        assert env.channels_in_use() == 0
        record = refusal_record(env, 503, "agent_timeout")
        assert record.hangup_side == "edge"


async def test_unknown_source_is_dropped_silently(tmp_path) -> None:
    before = sample("sipedge_inbound_drops_total", reason="unknown_source")
    async with running_edge(str(tmp_path)) as env:
        port = env.port
        invite = raw_invite(port, "127.0.0.2", call_id="drop-1@127.0.0.2")
        assert await udp_exchange(invite, (HOST, port), source_host="127.0.0.2") == []
        options = invite.replace(b"INVITE", b"OPTIONS").replace(b"1 OPTIONS", b"1 OPTIONS")
        assert await udp_exchange(options, (HOST, port), source_host="127.0.0.2") == []
        # The ACL'd carrier address still gets its answers.
        assert statuses(await udp_exchange(options, (HOST, port))) == [200]
        assert env.records.events == [] and env.activity.crossed == []
    assert sample("sipedge_inbound_drops_total", reason="unknown_source") == before + 2


async def test_unknown_source_gets_403_in_reject_mode(tmp_path) -> None:
    async with running_edge(str(tmp_path), unknown_source="reject") as env:
        invite = raw_invite(env.port, "127.0.0.2", call_id="reject-1@127.0.0.2")
        replies = await udp_exchange(invite, (HOST, env.port), source_host="127.0.0.2")
        assert statuses(replies) == [403]  # no 100 Trying first: no transaction for strangers
        assert b'Warning: 399 sipedge "unknown source"' in replies[0]
        assert env.records.events == []


async def test_options_from_carrier_and_405_for_unsupported(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        options = raw_invite(env.port, call_id="opt-1@x").replace(b"INVITE", b"OPTIONS")
        [reply] = await udp_exchange(options, (HOST, env.port))
        assert reply.startswith(b"SIP/2.0 200 ") and b"Allow: INVITE" in reply
        register = raw_invite(env.port, call_id="reg-1@x").replace(b"INVITE", b"REGISTER")
        [reply] = await udp_exchange(register, (HOST, env.port))
        assert reply.startswith(b"SIP/2.0 405 ") and b"Allow:" in reply
        bye = raw_invite(env.port, call_id="bye-1@x").replace(b"INVITE", b"BYE")
        assert statuses(await udp_exchange(bye, (HOST, env.port))) == [481]
        cancel = raw_invite(env.port, call_id="cancel-1@x").replace(b"INVITE", b"CANCEL")
        assert statuses(await udp_exchange(cancel, (HOST, env.port))) == [481]


async def test_max_forwards_zero_gets_483(tmp_path) -> None:
    async with running_edge(str(tmp_path)) as env:
        invite = raw_invite(env.port, call_id="mf-1@x").replace(
            b"Max-Forwards: 70", b"Max-Forwards: 0"
        )
        assert statuses(await udp_exchange(invite, (HOST, env.port)))[-1] == 483
        assert env.channels_in_use() == 0 and env.records.events == []


async def test_at_max_dialogs_a_new_call_gets_503_with_retry_after(tmp_path) -> None:
    # max_dialogs = 2: one call (carrier leg + agent leg) fits, the next is refused, with the
    # process's one Retry-After (flood.retry_after_seconds).
    async with running_edge(
        str(tmp_path), max_dialogs=2, max_call_duration=1.5, flood={"retry_after_seconds": 7}
    ) as env:
        before = sample("sipedge_sip_limit_hits_total", limit="dialogs")
        async with sipp(agent_args(env, "uas-answer-wait-bye.xml"), workdir=env.workdir) as a:
            await wait_bound(env.agent_port, "udp")
            async with sipp(
                carrier_args(env, "uac-agent-hangs-up-expect-200.xml"), workdir=env.workdir
            ) as c:
                await env.wait_calls(1)
                got = await udp_exchange(
                    raw_invite(env.port, call_id="over-cap@x"), (HOST, env.port)
                )
                first = await c.wait(timeout=10)
            await a.wait(timeout=10)
        assert ok(first), first.output
        final = [d for d in got if d.startswith(b"SIP/2.0 503")]
        assert statuses(got)[-1] == 503 and final, got
        assert b"\r\nRetry-After: 7\r\n" in final[0]
        assert sample("sipedge_sip_limit_hits_total", limit="dialogs") == before + 1
        await env.settle()
        assert env.channels_in_use() == 0 and env.edge.active_calls == 0
