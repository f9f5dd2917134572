"""ClusterChannels over a fake store: the store's answer wins, failures admit on the node's own
count (fail open) and are counted, releases run in the background, refresh sends this node's
leases and keeps the cluster-wide counts the API shows."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping

from redis.exceptions import ConnectionError as RedisConnectionError

from sipedge.edge.channels import ChannelLimiter
from sipedge.metrics import REGISTRY
from sipedge.runtime.cluster_channels import ClusterChannels


class FakeStore:
    def __init__(self) -> None:
        self.answer = True
        self.fail: BaseException | None = None
        self.delay = 0.0
        self.released: list[tuple[str, str]] = []
        self.refreshed: list[dict[str, list[str]]] = []
        self.counts: dict[str, int] = {}

    async def _maybe_fail(self) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail is not None:
            raise self.fail

    async def acquire(self, trunk_id: str, limit: int, call_id: str) -> bool:
        await self._maybe_fail()
        return self.answer

    async def release(self, trunk_id: str, call_id: str) -> None:
        await self._maybe_fail()
        self.released.append((trunk_id, call_id))

    async def refresh(self, held: Mapping[str, Collection[str]]) -> int:
        await self._maybe_fail()
        self.refreshed.append({k: sorted(v) for k, v in held.items()})
        return sum(len(v) for v in held.values())

    async def active_many(self, trunk_ids: Collection[str]) -> dict[str, int]:
        await self._maybe_fail()
        return {t: self.counts.get(t, 0) for t in trunk_ids}

    async def trunk_ids(self) -> list[str]:
        await self._maybe_fail()
        return list(self.counts)


def errors(op: str) -> float:
    value = REGISTRY.get_sample_value("sipedge_channel_store_errors_total", {"op": op})
    return value or 0.0


def cluster(
    store: FakeStore, limiter: ChannelLimiter | None = None, **kw: object
) -> ClusterChannels:
    return ClusterChannels(
        store,
        limiter or ChannelLimiter(),
        lease_seconds=kw.pop("lease_seconds", 60.0),  # type: ignore[arg-type]
        timeout=kw.pop("timeout", 0.2),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


async def test_the_stores_answer_decides() -> None:
    store = FakeStore()
    channels = cluster(store)
    assert await channels.confirm("t1", 2, "c1")
    store.answer = False
    assert not await channels.confirm("t1", 2, "c2")


async def test_a_failing_or_slow_store_admits_and_is_counted() -> None:
    store = FakeStore()
    channels = cluster(store, timeout=0.05)
    before = errors("acquire")
    store.answer, store.fail = False, RedisConnectionError("down")
    assert await channels.confirm("t1", 1, "c1")
    store.fail, store.delay = None, 0.5
    assert await channels.confirm("t1", 1, "c2")
    assert errors("acquire") == before + 2


async def test_an_unexpected_store_failure_admits_too_and_is_counted(caplog) -> None:
    # Not a connection error but a bug: the INVITE must still be answered and its local
    # channel used, never left waiting on a task that died.
    store = FakeStore()
    channels = cluster(store)
    before = errors("acquire")
    store.answer, store.fail = False, ValueError("unexpected reply")
    assert await channels.confirm("t1", 1, "c1")
    assert errors("acquire") == before + 1
    assert "unexpected reply" in caplog.text


async def test_releases_run_in_the_background_and_stop_waits_for_them() -> None:
    store = FakeStore()
    closed: list[bool] = []

    async def closing() -> None:
        closed.append(True)

    channels = cluster(store, closing=closing)
    channels.release("t1", "c1")
    assert store.released == []  # not on the caller's time
    await channels.stop()
    assert store.released == [("t1", "c1")] and closed == [True]


async def test_a_failed_release_is_counted_and_left_to_the_lease() -> None:
    store = FakeStore()
    store.fail = RedisConnectionError("down")
    channels = cluster(store)
    before = errors("release")
    channels.release("t1", "c1")
    await channels.stop()
    assert errors("release") == before + 1


async def test_refresh_sends_this_nodes_leases_and_keeps_the_cluster_counts() -> None:
    store, limiter = FakeStore(), ChannelLimiter()
    assert limiter.try_acquire("t1", 5, "c1") and limiter.try_acquire("t1", 5, "c2")
    assert limiter.try_acquire("t2", 5, "c3")
    store.counts = {"t1": 4, "t2": 1, "t3": 7}
    channels = cluster(store, limiter, trunks=lambda: ("t1", "t2", "t3", "t4"))
    assert channels.active("t3") == 0  # nothing read yet
    await channels.refresh()
    assert store.refreshed == [{"t1": ["c1", "c2"], "t2": ["c3"]}]
    assert [channels.active(t) for t in ("t1", "t2", "t3", "t4")] == [4, 1, 7, 0]
    # This node's own calls count as of now, the others' as of the last count.
    assert limiter.try_acquire("t2", 5, "c4") and limiter.try_acquire("t2", 5, "c5")
    assert channels.active("t2") == 3  # c3, c4, c5: none of the others
    assert limiter.release("c1")
    assert channels.active("t1") == 3  # 2 others + c2
    store.fail = RedisConnectionError("down")
    before = errors("refresh")
    await channels.refresh()
    assert errors("refresh") == before + 2  # the lease refresh and the count
    assert channels.active("t3") == 7  # the last counts stand


async def test_a_process_without_calls_or_snapshot_counts_every_trunk_in_the_store() -> None:
    store = FakeStore()
    store.counts = {"t1": 3, "t9": 1}
    channels = cluster(store, discover=True)  # the `api` role
    await channels.count()
    assert (channels.active("t1"), channels.active("t9"), channels.active("t5")) == (3, 1, 0)
    without = cluster(store)  # only the trunks it is told about
    await without.count()
    assert without.active("t1") == 0


async def test_start_refreshes_every_third_of_the_lease() -> None:
    store, limiter = FakeStore(), ChannelLimiter()
    assert limiter.try_acquire("t1", 5, "c1")
    channels = cluster(store, limiter, lease_seconds=0.15)
    channels.start()
    await asyncio.sleep(0.28)
    await channels.stop()
    assert len(store.refreshed) >= 4


async def test_counts_are_read_more_often_than_leases_are_refreshed(monkeypatch) -> None:
    monkeypatch.setattr("sipedge.runtime.cluster_channels.COUNT_EVERY", 0.02)
    store, limiter = FakeStore(), ChannelLimiter()
    assert limiter.try_acquire("t1", 5, "c1")
    channels = cluster(store, limiter, lease_seconds=0.3, trunks=lambda: ("t1",))
    channels.start()
    await asyncio.sleep(0.05)
    store.counts = {"t1": 6}  # another node took five more
    await asyncio.sleep(0.06)
    assert channels.active("t1") == 6
    await channels.stop()
    assert len(store.refreshed) <= 1  # leases every 0.1 s, counts every 0.02 s
