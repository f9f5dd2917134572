"""Call status webhooks of inbound calls, end to end: a SIPp carrier calls through the real edge,
the statuses go through the durable outbox (SQLite file) and the sender to a real HTTP receiver
on 127.0.0.1, in order and signed. A receiver that is down while sipedge restarts still gets
every event once it is back."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from inbound_env import NUMBER, Env, run_carrier, run_pair, running_edge, trunk
from sipp_runner import SIPP
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from webhook_receiver import http_receiver

from sipedge.config import WebhooksSettings
from sipedge.edge.snapshot import AgentView, NumberView, RoutingSnapshot, build_snapshot
from sipedge.runtime.webhook_outbox_writer import WebhookOutboxWriter
from sipedge.runtime.webhook_sender import WebhookSender
from sipedge.store.agents import create_agent
from sipedge.store.db import make_engine, make_session_factory
from sipedge.store.migrate import upgrade_engine
from sipedge.store.ownership import Principal
from sipedge.store.webhook_outbox import secret_for

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]

FAST = WebhooksSettings(
    backoff_base_seconds=0.1, backoff_max_seconds=0.3, poll_interval_seconds=0.1
)


@dataclass
class Store:
    sessions: async_sessionmaker[AsyncSession]
    agent_id: str

    async def secret(self) -> str:
        async with self.sessions() as session:
            value = await secret_for(session, "user:alice")
            await session.commit()
        return value


@contextlib.asynccontextmanager
async def store(tmp_path: Path, url: str) -> AsyncIterator[Store]:
    engine = make_engine(f"sqlite:///{tmp_path / 'hooks.db'}")
    await upgrade_engine(engine)
    sessions = make_session_factory(engine)
    async with sessions() as session:
        agent = await create_agent(session, owner=Principal("alice"), agent_name="Front desk")
        agent.webhook_url = url
        await session.commit()
    try:
        yield Store(sessions, agent.id)
    finally:
        await engine.dispose()


def routed_to(agent_id: str) -> RoutingSnapshot:
    numbers = [NumberView("number-1", "trunk-1", NUMBER, NUMBER[1:], agent_id=agent_id)]
    return build_snapshot([trunk()], numbers, [AgentView(agent_id)], version=1)


@contextlib.asynccontextmanager
async def webhooks(db: Store) -> AsyncIterator[WebhookOutboxWriter]:
    """One sipedge process's webhook side: the outbox writer and the sender, stopped in order."""
    sender = WebhookSender(db.sessions, FAST, allow_private=True)
    writer = WebhookOutboxWriter(db.sessions, flush_interval=0.05, on_written=sender.wake)
    writer.start()
    sender.start()
    try:
        yield writer
    finally:
        await writer.stop()
        await sender.stop()


async def _answered_call(env: Env) -> None:
    carrier, agent = await run_pair(env, "uac-answered-expect-200.xml", "uas-answer-any.xml")
    assert carrier.returncode == 0, carrier.output
    assert agent.returncode == 0, agent.output


async def test_an_answered_call_posts_ringing_in_progress_completed_signed(
    tmp_path: Path,
) -> None:
    async with http_receiver() as receiver, store(tmp_path, receiver.url) as db:
        async with (
            webhooks(db) as writer,
            running_edge(str(tmp_path), routed_to(db.agent_id), statuses=writer) as env,
        ):
            await _answered_call(env)
            await receiver.wait_for(3)
        secret = await db.secret()
    assert receiver.statuses() == ["ringing", "in-progress", "completed"]
    assert all(r.signed_with(secret) for r in receiver.received)
    assert {r.path for r in receiver.received} == {"/hooks/calls"}
    run_ids = {r.payload["id"] for r in receiver.received}
    assert run_ids == {env.records.events[0].run_id}
    ringing, answered, completed = (r.payload for r in receiver.received)
    assert ringing["telephony_data"]["sip_status"] == 180
    assert answered["telephony_data"]["sip_status"] == 200
    data = completed["telephony_data"]
    assert (data["direction"], data["provider"], data["to_number"]) == (
        "inbound",
        "sip-trunk",
        NUMBER,
    )
    assert (data["trunk_id"], data["number_id"], data["hangup_by"]) == (
        "trunk-1",
        "number-1",
        "carrier",
    )
    assert data["hangup_reason"] == "answered" and data["duration_s"] >= 0
    assert completed["agent_id"] == db.agent_id and completed["user_data"] is None


async def test_a_refused_call_posts_one_final_status(tmp_path: Path) -> None:
    async with (
        http_receiver() as receiver,
        store(tmp_path, receiver.url) as db,
        webhooks(db) as writer,
        running_edge(str(tmp_path), routed_to(db.agent_id), statuses=writer) as env,
    ):
        result = await run_carrier(env, "uac-no-common-codec-expect-488.xml")
        assert result.returncode == 0, result.output
        await receiver.wait_for(1)
        await asyncio.sleep(0.3)  # nothing else follows
    assert receiver.statuses() == ["failed"]
    assert receiver.received[0].payload["telephony_data"]["sip_status"] == 488


async def test_a_receiver_down_across_a_restart_gets_everything_in_order(
    tmp_path: Path,
) -> None:
    async with http_receiver(status=503) as receiver, store(tmp_path, receiver.url) as db:
        async with (
            webhooks(db) as writer,
            running_edge(str(tmp_path), routed_to(db.agent_id), statuses=writer) as env,
        ):
            await _answered_call(env)
            await _until(lambda: receiver.attempts >= 2)  # tried, refused, tried again
        assert receiver.received == []
        # sipedge is down (writer flushed, sender stopped); it starts again, the receiver is back.
        receiver.status = 200
        async with webhooks(db):
            await receiver.wait_for(3)
        secret = await db.secret()
    assert receiver.statuses() == ["ringing", "in-progress", "completed"]
    assert all(r.signed_with(secret) for r in receiver.received)


async def _until(predicate: object, timeout: float = 10.0) -> None:
    async def wait() -> None:
        while not predicate():  # type: ignore[operator]
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)
