"""The "snapshot changed" signal: the API notifies after every committed write.

In-process for `sipedge serve` (the SIP runtime subscribes and rebuilds its routing snapshot);
across processes and nodes on PostgreSQL, `runtime.change_bridge` forwards them (NOTIFY) and
replays other nodes' (LISTEN) with their ``origin`` set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

# Signals about outbound call rows: they wake the dialer, but the routing snapshot holds no
# calls, so they neither reload it nor make the API wait for the SIP side to apply them.
CALL_SIGNALS = frozenset({"call.queued", "call.hangup"})


def changes_routing(kind: str) -> bool:
    """Whether a change of ``kind`` alters the routing snapshot (trunks, numbers, agents...)."""
    return kind not in CALL_SIGNALS


@dataclass(frozen=True, slots=True)
class Change:
    kind: str  # e.g. "trunk.created", "gateway.deleted", "number.updated", "agent.updated"
    trunk_id: str | None
    agent_id: str | None = None
    origin: str | None = None  # None: this process; else the node that sent it


ChangeCallback = Callable[[Change], None]


class ChangeNotifier:
    """Synchronous fan-out to subscribers; a failing subscriber is logged and does not stop others."""

    def __init__(self) -> None:
        self._subscribers: list[ChangeCallback] = []

    def subscribe(self, callback: ChangeCallback) -> Callable[[], None]:
        """Register `callback`; returns a function that unsubscribes it."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def notify(
        self,
        kind: str,
        trunk_id: str | None,
        agent_id: str | None = None,
        *,
        origin: str | None = None,
    ) -> None:
        change = Change(kind, trunk_id, agent_id, origin)
        for callback in list(self._subscribers):
            try:
                callback(change)
            except Exception:
                # A subscriber's bug must not turn a committed write into an API error.
                log.exception("change subscriber failed for %s", kind)
