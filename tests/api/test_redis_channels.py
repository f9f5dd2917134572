"""Cluster-wide channel leases (SPEC §7) against a real Redis.

Redis at SIPEDGE_TEST_REDIS_URL (default redis://127.0.0.1:6379/0); unreachable -> these tests
fail, unless SIPEDGE_TEST_SKIP_REDIS=1. Each test works under its own key prefix and deletes its
keys at the end. Two ``RedisChannels`` on one prefix stand for two nodes of a cluster.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from sipedge.runtime.redis_channels import KEY_TTL_LEASES, RedisChannels

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
LEASE = 0.3  # seconds, for the tests that wait for leases to run out
TRUNK = "trunk-1"


@pytest.fixture
async def client() -> AsyncIterator[Redis]:
    url = os.environ.get("SIPEDGE_TEST_REDIS_URL", DEFAULT_REDIS_URL)
    redis = Redis.from_url(url, decode_responses=True, socket_connect_timeout=2)
    try:
        await redis.ping()
    except (RedisError, OSError) as exc:
        await redis.aclose()
        if os.environ.get("SIPEDGE_TEST_SKIP_REDIS") == "1":
            pytest.skip(f"Redis at {url} unreachable ({exc})")
        pytest.fail(
            f"Redis at {url} unreachable ({exc}): start it, point SIPEDGE_TEST_REDIS_URL "
            "at one, or set SIPEDGE_TEST_SKIP_REDIS=1 to skip these tests"
        )
    yield redis
    await redis.aclose()


@pytest.fixture
async def prefix(client: Redis) -> AsyncIterator[str]:
    prefix = f"sipedge-test:{secrets.token_hex(6)}:"
    yield prefix
    keys = [key async for key in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.delete(*keys)


def node(client: Redis, prefix: str, lease_seconds: float = 60.0) -> RedisChannels:
    return RedisChannels(client, prefix=prefix, lease_seconds=lease_seconds)


async def test_two_nodes_share_a_trunks_limit(client: Redis, prefix: str) -> None:
    a, b = node(client, prefix), node(client, prefix)
    assert await a.acquire(TRUNK, 2, "call-a1")
    assert await b.acquire(TRUNK, 2, "call-b1")
    assert not await a.acquire(TRUNK, 2, "call-a2")
    await b.release(TRUNK, "call-b1")
    assert await a.acquire(TRUNK, 2, "call-a2")
    assert await b.active(TRUNK) == 2
    assert not await b.acquire(TRUNK, 2, "call-b2")


async def test_acquire_is_idempotent_per_call_id(client: Redis, prefix: str) -> None:
    a, b = node(client, prefix), node(client, prefix)
    assert await a.acquire(TRUNK, 2, "call-1")
    assert await a.acquire(TRUNK, 2, "call-1")
    assert await b.acquire(TRUNK, 2, "call-1")  # the same call seen by another node
    assert await a.active(TRUNK) == 1
    # At the limit, the holder is still admitted and a newcomer is not.
    assert await a.acquire(TRUNK, 2, "call-2")
    assert await a.acquire(TRUNK, 2, "call-1")
    assert not await a.acquire(TRUNK, 2, "call-3")


async def test_release_frees_only_the_given_call(client: Redis, prefix: str) -> None:
    channels = node(client, prefix)
    assert await channels.acquire(TRUNK, 5, "call-1")
    assert await channels.acquire(TRUNK, 5, "call-2")
    await channels.release(TRUNK, "call-1")
    await channels.release(TRUNK, "call-1")  # twice: nothing more happens
    await channels.release(TRUNK, "never-held")
    await channels.release("other-trunk", "call-2")  # a trunk it does not hold
    assert await client.zrange(channels.key(TRUNK), 0, -1) == ["call-2"]


async def test_limit_zero_refuses(client: Redis, prefix: str) -> None:
    channels = node(client, prefix)
    assert not await channels.acquire(TRUNK, 0, "call-1")
    assert await channels.active(TRUNK) == 0
    assert not await client.exists(channels.key(TRUNK))


async def test_a_crashed_nodes_leases_expire_while_a_refreshing_node_keeps_its_own(
    client: Redis, prefix: str
) -> None:
    crashed, alive = node(client, prefix, LEASE), node(client, prefix, LEASE)
    assert await crashed.acquire(TRUNK, 2, "call-crashed")
    assert await alive.acquire(TRUNK, 2, "call-alive")
    assert not await alive.acquire(TRUNK, 2, "call-new")
    # Refreshes every third of a lease for two leases: the crashed node never refreshes.
    for _ in range(6):
        await asyncio.sleep(LEASE / 3)
        assert await alive.refresh({TRUNK: ["call-alive"]}) == 1
    assert await alive.active(TRUNK) == 1
    assert await alive.acquire(TRUNK, 2, "call-new")
    assert sorted(await client.zrange(alive.key(TRUNK), 0, -1)) == ["call-alive", "call-new"]


async def test_refresh_never_takes_back_an_expired_or_released_lease(
    client: Redis, prefix: str
) -> None:
    channels = node(client, prefix, LEASE)
    assert await channels.acquire(TRUNK, 5, "call-released")
    assert await channels.acquire(TRUNK, 5, "call-expired")
    await channels.release(TRUNK, "call-released")
    await asyncio.sleep(LEASE + 0.1)
    assert await channels.refresh({TRUNK: ["call-released", "call-expired"]}) == 0
    assert await channels.active(TRUNK) == 0
    assert await client.zcard(channels.key(TRUNK)) == 0  # the expired member was swept
    # A live lease among them is extended, counted once however often it is listed.
    assert await channels.acquire(TRUNK, 5, "call-live")
    refreshed = await channels.refresh(
        {TRUNK: ["call-expired", "call-live", "call-live"], "idle-trunk": [], "gone": ["x"]}
    )
    assert refreshed == 1
    assert await client.zrange(channels.key(TRUNK), 0, -1) == ["call-live"]
    assert not await client.exists(channels.key("gone"))
    assert await channels.refresh({}) == 0


async def test_leases_expire_by_the_server_clock_in_milliseconds(
    client: Redis, prefix: str
) -> None:
    channels = node(client, prefix, lease_seconds=60.0)
    before = await client.time()
    assert await channels.acquire(TRUNK, 1, "call-1")
    after = await client.time()
    score = await client.zscore(channels.key(TRUNK), "call-1")
    assert score is not None
    low = before[0] * 1000 + before[1] // 1000 + 60_000
    high = after[0] * 1000 + after[1] // 1000 + 60_000
    assert low <= score <= high


async def test_a_trunks_key_vanishes_after_its_last_lease(client: Redis, prefix: str) -> None:
    channels = node(client, prefix, LEASE)
    key = channels.key(TRUNK)
    assert await channels.acquire(TRUNK, 1, "call-1")
    assert LEASE * 1000 < await client.pttl(key) <= KEY_TTL_LEASES * round(LEASE * 1000)
    # A node with a shorter lease never cuts the key short under a longer lease's member.
    assert await node(client, prefix, 0.01).acquire(TRUNK, 5, "call-2")
    assert await client.pttl(key) > LEASE * 1000
    await asyncio.sleep(KEY_TTL_LEASES * LEASE + 0.1)
    assert not await client.exists(key)


async def test_active_and_active_many(client: Redis, prefix: str) -> None:
    a, b = node(client, prefix), node(client, prefix)
    assert await a.acquire("t1", 5, "c1")
    assert await b.acquire("t1", 5, "c2")
    assert await b.acquire("t2", 5, "c3")
    assert await a.active("t1") == 2
    assert await a.active("unknown") == 0
    assert await b.active_many(["t1", "t2", "unknown", "t1"]) == {"t1": 2, "t2": 1, "unknown": 0}
    assert await b.active_many([]) == {}
    await a.release("t1", "c1")
    assert await a.active_many({"t1", "t2"}) == {"t1": 1, "t2": 1}


async def test_trunk_ids_lists_this_prefixs_trunks_only(client: Redis, prefix: str) -> None:
    channels = node(client, prefix)
    other = node(client, prefix + "x*[other]:")  # glob characters in a prefix match literally
    assert await channels.trunk_ids() == []
    assert await channels.acquire("t1", 5, "c1") and await channels.acquire("t2", 5, "c2")
    assert await other.acquire("t3", 5, "c3")
    assert sorted(await channels.trunk_ids()) == ["t1", "t2", "x*[other]:t3"]
    assert await other.trunk_ids() == ["t3"]


async def test_active_ignores_expired_leases_before_any_sweep(client: Redis, prefix: str) -> None:
    channels = node(client, prefix, LEASE)
    assert await channels.acquire(TRUNK, 5, "call-1")
    await asyncio.sleep(LEASE + 0.1)
    assert await channels.active(TRUNK) == 0
    assert await client.zcard(channels.key(TRUNK)) == 1  # reads never write


async def test_concurrent_acquires_never_exceed_the_limit(client: Redis, prefix: str) -> None:
    nodes = [node(client, prefix), node(client, prefix)]
    results = await asyncio.gather(
        *(nodes[i % 2].acquire(TRUNK, 10, f"call-{i}") for i in range(50))
    )
    assert results.count(True) == 10
    assert await nodes[0].active(TRUNK) == 10


async def test_errors_reach_the_caller() -> None:
    # Nothing listens on port 1: the caller sees the client's error and decides (fail open).
    unreachable = Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0)
    )
    channels = RedisChannels(unreachable, prefix="sipedge-test:down:")
    try:
        with pytest.raises((RedisError, OSError)):
            await channels.acquire(TRUNK, 1, "call-1")
        with pytest.raises((RedisError, OSError)):
            await channels.refresh({TRUNK: ["call-1"]})
    finally:
        await unreachable.aclose()


def test_lease_must_be_positive() -> None:
    unconnected = Redis(host="127.0.0.1", port=1)  # never used: the constructor sends nothing
    with pytest.raises(ValueError):
        RedisChannels(unconnected, lease_seconds=0)
