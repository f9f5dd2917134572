"""Per-call timers: a few named ``loop.call_later`` handles per call, never one per message.

A call arms at most a handful at once (ring bound, 2xx retransmission/ACK wait per leg, maximum
duration); ending the call cancels them all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

__all__ = ["CallTimers"]

log = logging.getLogger(__name__)


class CallTimers:
    __slots__ = ("_handles", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def start(self, name: str, delay: float, callback: Callable[[], None]) -> None:
        """(Re)arm ``name`` to run ``callback`` after ``delay`` seconds."""
        old = self._handles.pop(name, None)
        if old is not None:
            old.cancel()
        self._handles[name] = self._loop.call_later(delay, self._fire, name, callback)

    def cancel(self, name: str) -> None:
        handle = self._handles.pop(name, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def __contains__(self, name: object) -> bool:
        return name in self._handles

    def __len__(self) -> int:
        return len(self._handles)

    def _fire(self, name: str, callback: Callable[[], None]) -> None:
        self._handles.pop(name, None)
        try:
            callback()
        except Exception:
            # A timer callback must never take the loop down; the traceback says what broke.
            log.exception("call timer %s failed", name)
