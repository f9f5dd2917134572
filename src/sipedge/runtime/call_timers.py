"""Per-call timers: a few named deadlines per call (ring bound, 2xx retransmission/ACK wait per
leg, maximum duration), never one per message; ending the call cancels them all.

Every call's deadlines live on one process-wide ``DeadlineHeap`` (``call_deadlines``) rather than
a loop timer handle each: a held call keeps its maximum-duration timer for hours, and a handle
costs about 1.6 KiB against a heap entry's one tuple.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sipedge.stack.deadlines import DeadlineHeap

__all__ = ["CallTimers", "call_deadlines"]

log = logging.getLogger(__name__)


def _fire(timers: CallTimers, name: str, now: float) -> None:
    callback = timers.callbacks.pop(name, None)
    if callback is None:
        return
    try:
        callback()
    except Exception:
        # A timer callback must never take the loop down; the traceback says what broke.
        log.exception("call timer %s failed", name)


def call_deadlines(loop: asyncio.AbstractEventLoop) -> DeadlineHeap[CallTimers]:
    """The heap a process's calls share (``EdgeServices`` keeps one)."""
    return DeadlineHeap(loop, _fire)


class CallTimers:
    __slots__ = ("_deadlines", "callbacks", "timers")

    def __init__(self, deadlines: DeadlineHeap[CallTimers]) -> None:
        self._deadlines = deadlines
        self.timers: dict[str, int] = {}  # name -> seq of its live heap entry
        self.callbacks: dict[str, Callable[[], None]] = {}

    def start(self, name: str, delay: float, callback: Callable[[], None]) -> None:
        """(Re)arm ``name`` to run ``callback`` after ``delay`` seconds."""
        self.callbacks[name] = callback
        deadlines = self._deadlines
        deadlines.arm(self, name, deadlines.now() + delay)

    def cancel(self, name: str) -> None:
        if self._deadlines.cancel(self, name):
            del self.callbacks[name]

    def cancel_all(self) -> None:
        self._deadlines.cancel_all(self)
        self.callbacks.clear()

    def __contains__(self, name: object) -> bool:
        return name in self.timers

    def __len__(self) -> int:
        return len(self.timers)
