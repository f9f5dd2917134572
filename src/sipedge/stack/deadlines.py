"""Many named deadlines on one ``loop.call_at`` handle: a heap instead of a timer handle each.

A loop timer handle costs about 1.6 KiB (the handle, libuv's timer, the callback's arguments); a
heap entry is one tuple. The transaction layer arms several timers per transaction and a held call
keeps its maximum-duration timer for hours, so both keep their deadlines here.

Each owner carries ``timers: dict[name, seq]``, the sequence number of its live entry per name.
Cancelling is lazy: the owner forgets the name, the entry stays in the heap and is skipped when it
surfaces; the heap is rebuilt when stale entries dominate.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

__all__ = ["DeadlineHeap", "DeadlineOwner"]

# A deadline may fire up to this much early: the loop's clock resolution would otherwise make us
# re-arm for the same instant in a tight loop.
_SLACK = 0.001
# Rebuild the heap when it holds this many times more entries than live deadlines.
_COMPACT_RATIO = 2
_COMPACT_MIN = 256


class DeadlineOwner(Protocol):
    timers: dict[str, int]


OwnerT = TypeVar("OwnerT", bound=DeadlineOwner)


class DeadlineHeap(Generic[OwnerT]):
    """``fire(owner, name, now)`` runs when a live deadline is due; it may arm new ones."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fire: Callable[[OwnerT, str, float], None]):
        self._loop = loop
        self._fire = fire
        self._heap: list[tuple[float, int, OwnerT, str]] = []
        self._live = 0
        self._seq = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._handle_at = float("inf")
        self._ticking = False

    @property
    def live(self) -> int:
        """Deadlines armed and not yet fired or cancelled."""
        return self._live

    def now(self) -> float:
        return self._loop.time()

    def arm(self, owner: OwnerT, name: str, at: float) -> None:
        """(Re)arm ``owner``'s ``name`` for loop time ``at``."""
        seq = next(self._seq)
        if name not in owner.timers:
            self._live += 1
        owner.timers[name] = seq
        heapq.heappush(self._heap, (at, seq, owner, name))
        if not self._ticking and at < self._handle_at:
            self._schedule(at)
        if len(self._heap) > _COMPACT_MIN and len(self._heap) > _COMPACT_RATIO * self._live:
            self._compact()

    def cancel(self, owner: OwnerT, name: str) -> bool:
        if owner.timers.pop(name, None) is None:
            return False
        self._live -= 1
        return True

    def cancel_all(self, owner: OwnerT) -> None:
        self._live -= len(owner.timers)
        owner.timers.clear()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._handle_at = float("inf")
        self._heap.clear()

    def _schedule(self, at: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_at(at, self._tick)
        self._handle_at = at

    def _compact(self) -> None:
        # In place: _tick may be iterating this very list when a fired deadline re-arms.
        self._heap[:] = [e for e in self._heap if e[2].timers.get(e[3]) == e[1]]
        heapq.heapify(self._heap)

    def _tick(self) -> None:
        self._handle = None
        self._handle_at = float("inf")
        self._ticking = True
        heap = self._heap
        try:
            now = self._loop.time()
            while heap and heap[0][0] <= now + _SLACK:
                _, seq, owner, name = heapq.heappop(heap)
                if owner.timers.get(name) != seq:
                    continue  # cancelled or re-armed since: a stale entry
                del owner.timers[name]
                self._live -= 1
                self._fire(owner, name, now)
        finally:
            self._ticking = False
            # Drop stale heads so the next wake-up is for a live deadline.
            while heap and heap[0][2].timers.get(heap[0][3]) != heap[0][1]:
                heapq.heappop(heap)
            if heap:
                self._schedule(heap[0][0])
