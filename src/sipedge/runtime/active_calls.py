"""The trunk API's `active_calls` figure, read from the edge's channel counter (SPEC §4).

`create_app(settings, active_calls=active_calls_from(limiter))` shows each trunk's live channel
count; the read is a dictionary lookup, so listing trunks costs nothing extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["ActiveCounter", "active_calls_from"]


class ActiveCounter(Protocol):
    """What the API needs of a channel counter (`edge.channels.ChannelLimiter` is one)."""

    def active(self, trunk_id: str) -> int: ...


def active_calls_from(counter: ActiveCounter) -> Callable[[str], int]:
    """`trunk_id -> channels in use now`, for `create_app(active_calls=...)`."""

    def active_calls(trunk_id: str) -> int:
        return counter.active(trunk_id)

    return active_calls
