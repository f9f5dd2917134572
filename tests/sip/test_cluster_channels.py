"""Cluster-wide channel counts (SPEC §7): two edges ("nodes") share a trunk's limit through a
real Redis (127.0.0.1:6379, ``SIPEDGE_TEST_REDIS_URL``), and a node admits on its own count when
Redis cannot be reached.

The agent is a bound UDP socket that never answers: an accepted call stays up (its agent INVITE
retransmitted), holding its channel, until the edge stops."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator, Collection, Iterator, Mapping

import pytest
import redis.asyncio
from harness import HOST
from inbound_env import raw_invite, running_edge, snapshot, statuses, trunk, udp_exchange

from sipedge.metrics import REGISTRY
from sipedge.runtime.redis_channels import RedisChannels

REDIS_URL = os.environ.get("SIPEDGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ONE_CHANNEL = snapshot(trunk(channels=1))


@pytest.fixture
async def shared() -> AsyncIterator[tuple[redis.asyncio.Redis, str]]:
    """A client on the test Redis and a key prefix of this test's own (deleted after)."""
    client = redis.asyncio.Redis.from_url(REDIS_URL, socket_timeout=2)
    try:
        await client.ping()
    except (OSError, redis.RedisError) as exc:
        await client.aclose()
        message = f"Redis unreachable at {REDIS_URL}: {exc!r}"
        if os.environ.get("SIPEDGE_TEST_SKIP_REDIS") == "1":
            pytest.skip(message)
        pytest.fail(message + " (set SIPEDGE_TEST_SKIP_REDIS=1 to skip the Redis tests)")
    prefix = f"sipedge-test:{secrets.token_hex(6)}:"
    try:
        yield client, prefix
    finally:
        keys = [key async for key in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


def store(client: redis.asyncio.Redis, prefix: str) -> RedisChannels:
    return RedisChannels(client, prefix=prefix, lease_seconds=60.0)


@contextlib.contextmanager
def silent_agent(port: int) -> Iterator[None]:
    """Something bound where the agent should be (no ICMP errors), that never answers."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind((HOST, port))
    try:
        yield
    finally:
        sink.close()


def distinct(codes: list[int]) -> list[int]:
    """Each status once, in order (a final answer is retransmitted until an ACK we never send)."""
    return list(dict.fromkeys(codes))


async def invite(port: int, call_id: str) -> list[int]:
    replies = await udp_exchange(raw_invite(port, call_id=call_id), (HOST, port), wait=0.4)
    return distinct(statuses(replies))


def store_errors(op: str) -> float:
    value = REGISTRY.get_sample_value("sipedge_channel_store_errors_total", {"op": op})
    return value or 0.0


async def test_two_nodes_share_a_trunks_channel_limit(shared, tmp_path) -> None:
    redis_client, prefix = shared
    node_a = running_edge(str(tmp_path), ONE_CHANNEL, channel_store=store(redis_client, prefix))
    async with (
        node_a as a,
        running_edge(str(tmp_path), ONE_CHANNEL, channel_store=store(redis_client, prefix)) as b,
    ):
        with silent_agent(a.agent_port), silent_agent(b.agent_port):
            assert await invite(a.port, "first@cluster") == [100]  # up, ringing the agent
            assert a.limiter.active("trunk-1") == 1
            # Node B holds no call of its own, yet the trunk's one channel is taken.
            replies = await udp_exchange(
                raw_invite(b.port, call_id="second@cluster"), (HOST, b.port), wait=0.4
            )
            assert distinct(statuses(replies)) == [100, 486]
            assert b'Warning: 399 sipedge "channel limit reached"' in replies[-1]
            assert b.limiter.active("trunk-1") == 0  # its local channel was given back
            assert len(b.records.events) == 1 and b.records.events[0].final_sip_code == 486
            assert await redis_client.zcard(prefix + "trunk-1") == 1
    # Node A stopped: its call ended and its lease was released; a node takes the channel.
    assert await redis_client.zcard(prefix + "trunk-1") == 0
    async with running_edge(
        str(tmp_path), ONE_CHANNEL, channel_store=store(redis_client, prefix)
    ) as c:
        with silent_agent(c.agent_port):
            assert await invite(c.port, "third@cluster") == [100]


async def test_unreachable_redis_admits_on_the_nodes_own_count(tmp_path) -> None:
    client = redis.asyncio.Redis.from_url(
        "redis://127.0.0.1:1/0", socket_timeout=0.2, socket_connect_timeout=0.2
    )
    before = store_errors("acquire")
    try:
        async with running_edge(
            str(tmp_path), ONE_CHANNEL, channel_store=store(client, "sipedge-test:down:")
        ) as edge:
            with silent_agent(edge.agent_port):
                assert await invite(edge.port, "first@down") == [100]
                assert store_errors("acquire") == before + 1
                # The node's own limit still holds.
                assert await invite(edge.port, "second@down") == [100, 486]
    finally:
        await client.aclose()


class SlowStore:
    """A store that takes its time to confirm (and says yes)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.released: list[tuple[str, str]] = []

    async def acquire(self, trunk_id: str, limit: int, call_id: str) -> bool:
        await asyncio.sleep(self.delay)
        return True

    async def release(self, trunk_id: str, call_id: str) -> None:
        self.released.append((trunk_id, call_id))

    async def refresh(self, held: Mapping[str, Collection[str]]) -> int:
        return 0

    async def active_many(self, trunk_ids: Collection[str]) -> dict[str, int]:
        return {}

    async def trunk_ids(self) -> list[str]:
        return []


class Carrier(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.received: list[bytes] = []

    def datagram_received(self, data: bytes, addr: object) -> None:
        self.received.append(data)


async def test_a_cancel_while_the_channel_is_confirmed_ends_the_invite(tmp_path) -> None:
    store = SlowStore(delay=0.4)
    async with running_edge(str(tmp_path), ONE_CHANNEL, channel_store=store) as edge:
        loop = asyncio.get_running_loop()
        transport, carrier = await loop.create_datagram_endpoint(Carrier, local_addr=(HOST, 0))
        try:
            with silent_agent(edge.agent_port):
                sport = str(transport.get_extra_info("sockname")[1]).encode()
                invite = raw_invite(edge.port, call_id="cancel@cluster").replace(b"{SRC}", sport)
                cancel = invite.replace(b"INVITE sip:", b"CANCEL sip:", 1).replace(
                    b"CSeq: 1 INVITE", b"CSeq: 1 CANCEL"
                )
                transport.sendto(invite, (HOST, edge.port))
                await asyncio.sleep(0.1)
                assert edge.limiter.active("trunk-1") == 1  # held while Redis is asked
                transport.sendto(cancel, (HOST, edge.port))
                await asyncio.sleep(0.6)  # the confirmation comes back meanwhile
                got = sorted(  # a set: the 487 is retransmitted until an ACK we do not send
                    {
                        (d.split(b"\r\n", 1)[0], d.split(b"CSeq: ", 1)[1].split(b"\r\n", 1)[0])
                        for d in carrier.received
                    }
                )
                assert got == [
                    (b"SIP/2.0 100 Trying", b"1 INVITE"),
                    (b"SIP/2.0 200 OK", b"1 CANCEL"),
                    (b"SIP/2.0 487 Request Terminated", b"1 INVITE"),
                ], got
                assert edge.limiter.active("trunk-1") == 0
                assert store.released == [("trunk-1", "cancel@cluster")]
                assert edge.edge.active_calls == 0  # no call was started
                # ... but the INVITE crossed the trunk: its record, as for any CANCELled call
                (record,) = edge.records.events
                assert (record.final_sip_code, record.decided_by, record.hangup_side) == (
                    487,
                    "canceled",
                    "carrier",
                )
                assert record.carrier_call_id == "cancel@cluster"
                assert edge.activity.crossed == [("trunk-1", record.number_id)]
        finally:
            transport.close()
