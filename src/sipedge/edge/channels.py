"""Channel accounting (SPEC §5 Inbound step 7; shared with outbound calls).

``ChannelLimiter`` is the single-node counter: one in-memory count per trunk, inbound and outbound
together. It is synchronous and never awaits, so ``try_acquire`` is atomic on the event loop; the
runtime calls ``release`` on every path that ends a call (BYE, CANCEL, error, timeout, deletion) and
``release`` is idempotent, so releasing twice never frees someone else's channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sipedge.edge.decisions import MetricReason, Reject

__all__ = [
    "ChannelCounter",
    "ChannelLease",
    "ChannelLimiter",
    "channels_reject",
]


@dataclass(frozen=True, slots=True)
class ChannelLease:
    """Proof that ``call_id`` holds one of ``trunk_id``'s channels; release with the call id."""

    trunk_id: str
    call_id: str


class ChannelCounter(Protocol):
    """What the pipeline needs of a channel counter (a cluster-wide one may stand in)."""

    def try_acquire(self, trunk_id: str, limit: int, call_id: str) -> bool: ...

    def release(self, call_id: str) -> bool: ...

    def holder(self, call_id: str) -> str | None: ...


class ChannelLimiter:
    """Per-trunk active-call counts keyed by call id."""

    __slots__ = ("_active", "_leases")

    def __init__(self) -> None:
        self._active: dict[str, int] = {}
        self._leases: dict[str, str] = {}  # call id -> trunk id

    def try_acquire(self, trunk_id: str, limit: int, call_id: str) -> bool:
        """Take a channel for ``call_id`` unless ``trunk_id`` already has ``limit`` in use.

        Idempotent: a call id already holding a channel on this trunk gets True without taking a
        second one; holding one on another trunk gets False.
        """
        held = self._leases.get(call_id)
        if held is not None:
            return held == trunk_id
        count = self._active.get(trunk_id, 0)
        if count >= limit:
            return False
        self._active[trunk_id] = count + 1
        self._leases[call_id] = trunk_id
        return True

    def release(self, call_id: str) -> bool:
        """Free ``call_id``'s channel; False (and nothing changes) when it holds none."""
        trunk_id = self._leases.pop(call_id, None)
        if trunk_id is None:
            return False
        remaining = self._active[trunk_id] - 1
        if remaining:
            self._active[trunk_id] = remaining
        else:
            del self._active[trunk_id]
        return True

    def holder(self, call_id: str) -> str | None:
        """The trunk whose channel ``call_id`` holds, if any."""
        return self._leases.get(call_id)

    def active(self, trunk_id: str) -> int:
        """Channels in use on ``trunk_id`` (the trunk API's ``active_calls`` on one node)."""
        return self._active.get(trunk_id, 0)

    def held(self) -> dict[str, list[str]]:
        """Trunk id -> the call ids holding its channels (the leases a node refreshes)."""
        by_trunk: dict[str, list[str]] = {}
        for call_id, trunk_id in self._leases.items():
            by_trunk.setdefault(trunk_id, []).append(call_id)
        return by_trunk

    def calls_on(self, trunk_id: str) -> tuple[str, ...]:
        """Call ids holding ``trunk_id``'s channels (to end them when the trunk is deleted)."""
        return tuple(c for c, t in self._leases.items() if t == trunk_id)


def channels_reject(
    trunk_id: str, *, number_id: str | None = None, agent_id: str | None = None
) -> Reject:
    """486 Busy Here with ``Warning: 399 sipedge "channel limit reached"``."""
    return Reject(
        486,
        "channel limit reached",
        MetricReason.CHANNELS,
        trunk_ids=(trunk_id,),
        trunk_id=trunk_id,
        number_id=number_id,
        agent_id=agent_id,
    )
