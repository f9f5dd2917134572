"""Changes across processes on PostgreSQL (runtime.change_bridge): NOTIFY after a local change,
LISTEN replays other nodes' changes into the local notifier, no echo, reconnect with a resync.

Two bridges on one database stand for two processes (each its own notifier and node id)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from api.conftest import Api
from sipedge.runtime.change_bridge import CHANNEL, PgChangeBridge, supports_notify
from sipedge.store.changes import Change, ChangeNotifier


class Node:
    def __init__(self, api: Api, *, publish: bool, listen: bool) -> None:
        self.notifier = ChangeNotifier()
        self.seen: list[Change] = []
        self.notifier.subscribe(self.seen.append)
        self.bridge = PgChangeBridge(
            api.engine, self.notifier, publish=publish, listen=listen, reconnect_delay=0.1
        )

    def remote(self) -> list[Change]:
        return [change for change in self.seen if change.origin is not None]


@contextlib.asynccontextmanager
async def nodes(api: Api, *specs: tuple[bool, bool]) -> AsyncIterator[list[Node]]:
    if not supports_notify(api.engine):
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's; SQLite deployments re-read the store")
    started = [Node(api, publish=p, listen=ln) for p, ln in specs]
    try:
        for node in started:
            await node.bridge.start()
        for node, (_, listens) in zip(started, specs, strict=True):
            if listens:
                await asyncio.wait_for(node.bridge.listening.wait(), 5)
        yield started
    finally:
        for node in started:
            await node.bridge.stop()


async def until(predicate: object, timeout: float = 5.0) -> None:
    async def wait() -> None:
        while not predicate():  # type: ignore[operator]
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


async def test_a_change_reaches_the_other_process(api: Api) -> None:
    async with nodes(api, (True, False), (False, True)) as (api_node, sip_node):
        api_node.notifier.notify("trunk.updated", "trunk-1")
        api_node.notifier.notify("call.queued", None, "agent-7")
        await until(lambda: len(sip_node.remote()) == 2)
        assert sip_node.remote() == [
            Change("trunk.updated", "trunk-1", None, api_node.bridge.node_id),
            Change("call.queued", None, "agent-7", api_node.bridge.node_id),
        ]
        assert api_node.bridge.published == 2


async def test_no_echo_between_two_nodes_that_both_publish_and_listen(api: Api) -> None:
    async with nodes(api, (True, True), (True, True)) as (first, second):
        first.notifier.notify("number.created", "trunk-1")
        await until(lambda: len(second.remote()) == 1)
        await asyncio.sleep(0.5)  # time for an echo to come back, if there were one
        assert first.remote() == []  # its own notification is ignored
        assert second.bridge.published == 0  # a replayed change is not published again
        assert len(second.remote()) == 1


async def test_local_signals_stay_local(api: Api) -> None:
    async with nodes(api, (True, False), (False, True)) as (sender, receiver):
        sender.notifier.notify("poll", None)
        sender.notifier.notify("resync", None)
        sender.notifier.notify("agent.updated", None, "agent-1")
        await until(lambda: len(receiver.remote()) == 1)
        assert [c.kind for c in receiver.remote()] == ["agent.updated"]
        assert sender.bridge.published == 1


async def test_malformed_notifications_are_ignored(api: Api) -> None:
    async with nodes(api, (True, False), (False, True)) as (sender, receiver):
        async with api.engine.connect() as connection:
            for junk in ("not json", "[]", '{"k": "trunk.updated"}'):
                await connection.execute(
                    text("SELECT pg_notify(:c, :p)"), {"c": CHANNEL, "p": junk}
                )
            await connection.commit()
        sender.notifier.notify("trunk.deleted", "trunk-9")
        await until(lambda: len(receiver.remote()) == 1)
        assert receiver.remote()[0].kind == "trunk.deleted"


async def test_a_lost_listener_reconnects_and_asks_for_a_full_reload(api: Api) -> None:
    async with nodes(api, (True, False), (False, True)) as (sender, receiver):
        async with api.engine.connect() as connection:
            killed = await connection.scalar(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND query LIKE 'LISTEN%'"
                )
            )
        assert killed == 1
        await until(lambda: any(c.kind == "resync" for c in receiver.seen))
        await asyncio.wait_for(receiver.bridge.listening.wait(), 5)
        sender.notifier.notify("gateway.created", "trunk-2")
        await until(lambda: any(c.kind == "gateway.created" for c in receiver.remote()))
