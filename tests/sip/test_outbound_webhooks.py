"""Call status webhooks of outbound calls, end to end: `POST /call` through the in-process API,
the dialer and the edge to a SIPp carrier and agent; the statuses (written with the call's own
status changes) reach a real HTTP receiver on 127.0.0.1 in order, signed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from outbound_env import FROM, TO, OutboundEnv, agent, carrier, ok, running
from sipp_runner import SIPP
from sqlalchemy import update
from webhook_receiver import http_receiver

from sipedge.config import WebhooksSettings
from sipedge.runtime.webhook_sender import WebhookSender
from sipedge.store.models import Agent
from sipedge.store.webhook_outbox import secret_for

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]

FAST = WebhooksSettings(poll_interval_seconds=0.05, backoff_base_seconds=0.1)


@contextlib.asynccontextmanager
async def sending(env: OutboundEnv) -> AsyncIterator[WebhookSender]:
    sender = WebhookSender(env.sessions, FAST, allow_private=True)
    sender.start()
    try:
        yield sender
    finally:
        await sender.stop()


async def _hooked_agent(env: OutboundEnv, url: str) -> str:
    """An agent whose webhook is the loopback receiver (written to the store directly: this
    API instance refuses private webhook URLs)."""
    agent_id = await env.agent_id()
    async with env.sessions() as session:
        await session.execute(update(Agent).where(Agent.id == agent_id).values(webhook_url=url))
        await session.commit()
    return agent_id


async def test_an_answered_outbound_call_posts_its_statuses_in_order(tmp_path: Path) -> None:
    async with (
        http_receiver() as receiver,
        running(str(tmp_path)) as env,
        sending(env),
    ):
        agent_id = await _hooked_agent(env, receiver.url)
        async with carrier(env, "uas-carrier-answer.xml") as gw, agent(env) as ag:
            await env.trunk(agent_id, [("127.0.0.1", gw.port)])
            run_id = await env.place(agent_id)
            gw_result = await gw.wait(timeout=20)
            ag_result = await ag.wait(timeout=20)
        assert ok(gw_result), gw_result.output
        assert ok(ag_result), ag_result.output
        assert (await env.wait_status(run_id))["status"] == "completed"
        await receiver.wait_for(4)
        async with env.sessions() as session:
            secret = await secret_for(session, "user:alice")
            await session.commit()
    assert receiver.statuses(run_id) == ["queued", "ringing", "in-progress", "completed"]
    assert all(r.signed_with(secret) for r in receiver.received)
    final = receiver.received[-1].payload
    data = final["telephony_data"]
    assert (data["direction"], data["from_number"], data["to_number"]) == ("outbound", FROM, TO)
    assert (data["provider"], data["sip_status"], data["hangup_reason"]) == (
        "sip-trunk",
        200,
        "answered",
    )
    assert data["sip_call_id"] and data["duration_s"] is not None
    assert final["agent_id"] == agent_id
