"""Loads the routing snapshot from the store and swaps it in whole (STYLE habit 6).

`SnapshotLoader.load()` reads every live trunk (with its gateways and carrier IPs), number and
agent in one read transaction, turns the rows into the edge's plain views, builds the snapshot and
replaces `current` with one assignment; INVITEs only ever read `current`. `subscribe(notifier)`
turns the API's change signal into debounced reloads: a burst of changes gives at most one load in
flight plus one pending. A failed load keeps the snapshot in force, logs one WARNING per failure
streak, bumps `sipedge_snapshot_reload_failures_total` and is retried after `retry_after`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge import metrics
from sipedge.edge.snapshot import RoutingSnapshot, build_snapshot, empty_snapshot
from sipedge.runtime.ports import SnapshotSource
from sipedge.runtime.snapshot_rows import RoutingRows, read_routing_rows
from sipedge.store.agents import mark_agents_processed
from sipedge.store.changes import Change, ChangeNotifier, changes_routing

__all__ = ["MarkProcessed", "SnapshotLoader", "SwapCallback", "removed_trunks"]

log = logging.getLogger(__name__)

SwapCallback = Callable[[RoutingSnapshot, RoutingSnapshot], None]  # (old, new)
MarkProcessed = Callable[[AsyncSession, Mapping[str, int]], Awaitable[int]]


async def _mark_agents_processed(session: AsyncSession, versions: Mapping[str, int]) -> int:
    """The agent store's hook: agents whose configuration the snapshot now holds -> processed."""
    return await mark_agents_processed(session, versions=versions)


def removed_trunks(old: RoutingSnapshot, new: RoutingSnapshot) -> frozenset[str]:
    """Trunks live in `old` and gone from `new` (deleted): their calls should end."""
    return frozenset(old.trunks.keys() - new.trunks.keys())


class SnapshotLoader:
    """Implements `runtime.ports.SnapshotSource`.

    `session_factory` makes sessions on the store; `debounce` (seconds) is how long a change
    waits for others to coalesce with; `retry_after` (seconds) is when a failed load is tried
    again; `mark_processed` records the agent versions a swapped-in snapshot holds (default:
    `store.agents.mark_agents_processed`; None turns it off).
    """

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        *,
        debounce: float = 0.05,
        retry_after: float = 5.0,
        mark_processed: MarkProcessed | None = _mark_agents_processed,
    ) -> None:
        self._sessions = session_factory
        self._debounce = debounce
        self._retry_after = retry_after
        self._mark_processed = mark_processed
        self._current = empty_snapshot()
        self._version = 0
        self._on_swap: list[SwapCallback] = []
        self._dirty = False
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._failing = False
        self._problems: tuple[str, ...] = ()
        self.loads = 0  # load attempts, successful or not (for tests and diagnostics)

    @property
    def current(self) -> RoutingSnapshot:
        return self._current

    @property
    def version(self) -> int:
        return self._version

    def on_swap(self, callback: SwapCallback) -> Callable[[], None]:
        """Call `callback(old, new)` after every swap; returns a function that removes it."""
        self._on_swap.append(callback)

        def remove() -> None:
            if callback in self._on_swap:
                self._on_swap.remove(callback)

        return remove

    async def load(self) -> bool:
        """Read the store, build a snapshot and swap it in. False (old snapshot kept) on failure."""
        self.loads += 1
        try:
            rows = await self._read()
            snapshot = build_snapshot(
                rows.trunks, rows.numbers, rows.agents, version=self._version + 1
            )
        except Exception as exc:  # any failure keeps the snapshot in force; never propagates
            metrics.snapshot_reload_failures_total.inc()
            if not self._failing:
                log.warning(
                    "routing snapshot reload failed, keeping version %d: %s: %s",
                    self._version,
                    type(exc).__name__,
                    exc,
                    exc_info=True,
                )
            self._failing = True
            return False
        if self._failing:
            log.info("routing snapshot reload recovered")
        self._failing = False
        self._swap(snapshot)
        await self._mark(rows.seeding)
        return True

    def _swap(self, snapshot: RoutingSnapshot) -> None:
        old = self._current
        self._current = snapshot  # the one assignment readers observe
        self._version = snapshot.version
        metrics.snapshot_version.set(snapshot.version)
        metrics.snapshot_reloads_total.inc()
        if snapshot.problems != self._problems:
            for problem in snapshot.problems:
                log.warning("routing snapshot %d: %s", snapshot.version, problem)
            self._problems = snapshot.problems
        for callback in list(self._on_swap):
            try:
                callback(old, snapshot)
            except Exception:
                log.exception("snapshot swap callback failed")

    async def _mark(self, seeding: Mapping[str, int]) -> None:
        if self._mark_processed is None or not seeding:
            return
        try:
            async with self._sessions() as session:
                await self._mark_processed(session, seeding)
                await session.commit()
        except Exception:  # the snapshot is in force; the agents stay seeding until the next load
            log.warning("marking %d agents processed failed", len(seeding), exc_info=True)

    async def _read(self) -> RoutingRows:
        async with self._sessions() as session, session.begin():
            return await read_routing_rows(session)

    # -- debounced reloads ---------------------------------------------------------------------

    def subscribe(self, notifier: ChangeNotifier) -> Callable[[], None]:
        """Reload (debounced) after every change the notifier announces; returns unsubscribe.

        Call it from the event loop that should run the reloads."""
        self._loop = asyncio.get_running_loop()
        unsubscribe = notifier.subscribe(self._on_change)
        self._unsubscribe = unsubscribe
        return unsubscribe

    def _on_change(self, change: Change) -> None:
        if changes_routing(change.kind):  # a queued call or a hangup changes no routing data
            self.request_reload()

    def request_reload(self) -> None:
        """Schedule a reload: coalesced with any pending one, never more than one in flight."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called from another thread: hand it to the loop we serve
            if self._loop is None:
                raise
            self._loop.call_soon_threadsafe(self.request_reload)
            return
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain(), name="snapshot-reload")

    async def _drain(self) -> None:
        while self._dirty:
            await asyncio.sleep(self._debounce)
            self._dirty = False
            if not await self.load():
                await asyncio.sleep(self._retry_after)
                self._dirty = True

    async def settle(self) -> None:
        """Wait until no reload is pending or in flight (tests; orderly shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        """Unsubscribe and cancel any pending reload."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        task, self._task = self._task, None
        self._dirty = False
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _implements_port(instance: SnapshotLoader) -> SnapshotSource:
    return instance  # mypy checks SnapshotLoader against the port's Protocol
