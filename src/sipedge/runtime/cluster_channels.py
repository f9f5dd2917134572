"""Cluster-wide channel counts (SPEC §7): this node's counter, confirmed in Redis.

The INVITE pipeline takes a channel from the node's own ``ChannelLimiter`` (synchronous, no I/O:
a node never exceeds a trunk's limit on its own). With ``redis.url`` set, the runtime then
confirms the call in the trunk's Redis sorted set (``RedisChannels.acquire``, one atomic script)
before the call goes on: the limit holds across every node. A refusal there answers 486 like
the local one. The node refreshes the leases of its live calls every third of the lease time,
so the channels of a node that dies free themselves within ``redis.lease_seconds``.

Redis unreachable or slow (``redis.timeout_seconds``): the call is admitted on the local count
alone (fail open: carriers enforce their own limit, and refusing every call while Redis is away
would take the whole edge down), ``sipedge_channel_store_errors_total`` counts it and a warning
is logged at most once a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Protocol

from redis.exceptions import RedisError

from sipedge.edge.channels import ChannelLimiter
from sipedge.metrics import channel_store_errors_total

__all__ = ["ChannelStore", "ClusterChannels"]

log = logging.getLogger(__name__)

WARN_EVERY = 60.0  # seconds between two warnings about an unreachable channel store
COUNT_EVERY = 2.0  # seconds between two reads of the cluster-wide counts the API shows
_ERRORS = {op: channel_store_errors_total.labels(op) for op in ("acquire", "release", "refresh")}
# What a store that is away or slow raises (ConnectionError is an OSError).
_STORE_ERRORS = (OSError, TimeoutError, RedisError)


class ChannelStore(Protocol):
    """The cluster-wide store (``runtime.redis_channels.RedisChannels``)."""

    async def acquire(self, trunk_id: str, limit: int, call_id: str) -> bool: ...

    async def release(self, trunk_id: str, call_id: str) -> None: ...

    async def refresh(self, held: Mapping[str, Collection[str]]) -> int: ...

    async def active_many(self, trunk_ids: Collection[str]) -> dict[str, int]: ...

    async def trunk_ids(self) -> list[str]: ...


class ClusterChannels:
    """``confirm`` after the local acquire, ``release`` with the local release; ``start()``
    refreshes this node's leases (and the cluster-wide counts the API shows)."""

    def __init__(
        self,
        store: ChannelStore,
        limiter: ChannelLimiter,
        *,
        lease_seconds: float,
        timeout: float,
        trunks: Callable[[], Collection[str]] = tuple,
        closing: Callable[[], Awaitable[object]] | None = None,
        discover: bool = False,
    ) -> None:
        self._store = store
        self._limiter = limiter
        self._trunks = trunks  # the live trunks (the snapshot's), for the counts the API shows
        self._closing = closing  # closes the store's client once stopped
        # Count every trunk the store has a set for (a process with no snapshot: `api`).
        self._discover = discover
        self._lease = lease_seconds
        self._timeout = timeout
        self._task: asyncio.Task[None] | None = None
        self._releases: set[asyncio.Task[None]] = set()
        self._last_warning = float("-inf")
        self._counts: dict[str, int] = {}  # trunk -> cluster-wide count at the last count
        self._local_at_count: dict[str, int] = {}  # trunk -> this node's share of that count

    # --- the call path ---------------------------------------------------------------------

    async def confirm(self, trunk_id: str, limit: int, call_id: str) -> bool:
        """Whether the cluster has a channel of ``trunk_id`` for ``call_id`` (which already
        holds a local one). True when the store cannot be asked (fail open)."""
        try:
            return await asyncio.wait_for(
                self._store.acquire(trunk_id, limit, call_id), self._timeout
            )
        except _STORE_ERRORS as exc:
            self._failed("acquire", exc)
            return True
        except Exception:
            # Any other failure (a store bug) must not leave the INVITE unanswered with its
            # local channel held either: fail open the same way, with the traceback.
            _ERRORS["acquire"].inc()
            log.exception("channel store acquire failed: counting channels on this node")
            return True

    def release(self, trunk_id: str, call_id: str) -> None:
        """Give the call's cluster lease back, in the background (never awaited on the call
        path). A release that fails is left to the lease's expiry."""
        task = asyncio.get_running_loop().create_task(self._release(trunk_id, call_id))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def _release(self, trunk_id: str, call_id: str) -> None:
        try:
            await asyncio.wait_for(self._store.release(trunk_id, call_id), self._timeout)
        except _STORE_ERRORS as exc:
            self._failed("release", exc)

    def active(self, trunk_id: str) -> int:
        """Channels in use on ``trunk_id`` across the cluster: the other nodes' as of the last
        count (at most ``COUNT_EVERY`` old), this node's as of now."""
        local = self._limiter.active(trunk_id)
        counted = self._counts.get(trunk_id)
        if counted is None:
            return local
        others = max(counted - self._local_at_count.get(trunk_id, 0), 0)
        return others + local

    # --- leases ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._refresh_forever(), name="channel-leases"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._releases:
            await asyncio.wait(set(self._releases), timeout=self._timeout + 1.0)
        if self._closing is not None:
            await self._closing()

    async def refresh(self) -> None:
        """Extend the leases of this node's live calls, then count."""
        held = self._limiter.held()
        try:
            if held:
                await asyncio.wait_for(self._store.refresh(held), self._timeout)
        except _STORE_ERRORS as exc:
            self._failed("refresh", exc)
        await self.count()

    async def count(self) -> None:
        """Read the cluster-wide counts of the live trunks (what the API shows)."""
        held = self._limiter.held()
        trunks = {*held, *self._trunks()}
        local = {trunk_id: len(calls) for trunk_id, calls in held.items()}
        try:
            if self._discover:
                trunks.update(await asyncio.wait_for(self._store.trunk_ids(), self._timeout))
            counts = await asyncio.wait_for(self._store.active_many(trunks), self._timeout)
        except _STORE_ERRORS as exc:
            self._failed("refresh", exc)
            return
        self._counts, self._local_at_count = counts, local

    async def _refresh_forever(self) -> None:
        refresh_every = self._lease / 3
        next_refresh = time.monotonic() + refresh_every
        while True:
            await asyncio.sleep(min(COUNT_EVERY, refresh_every))
            if time.monotonic() >= next_refresh - 0.01:  # a loop timer may fire a tick early
                next_refresh += refresh_every
                await self.refresh()  # counts too
            else:
                await self.count()

    def _failed(self, op: str, exc: BaseException) -> None:
        _ERRORS[op].inc()
        now = time.monotonic()
        if now - self._last_warning >= WARN_EVERY:
            self._last_warning = now
            log.warning("channel store %s failed (%r): counting channels on this node", op, exc)
