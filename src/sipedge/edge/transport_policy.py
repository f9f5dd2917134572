"""Transport rule (SPEC §5 Inbound step 4): a request must arrive on its trunk's transport."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sipedge.edge.decisions import MetricReason, Reject

if TYPE_CHECKING:
    from sipedge.edge.snapshot import Transport, TrunkView

__all__ = ["split_by_transport", "transport_reject"]


def split_by_transport(
    candidates: Sequence[TrunkView], transport: Transport
) -> tuple[tuple[TrunkView, ...], tuple[TrunkView, ...]]:
    """``(trunks the request may use, trunks that require the other transport)``."""
    allowed = tuple(t for t in candidates if t.transport == transport)
    if len(allowed) == len(candidates):
        return allowed, ()
    return allowed, tuple(t for t in candidates if t.transport != transport)


def transport_reject(required: Transport, trunk_ids: tuple[str, ...]) -> Reject:
    """403 with ``Warning: 399 sipedge "transport <required> required"``."""
    return Reject(
        403,
        f"transport {required} required",
        MetricReason.TRANSPORT,
        trunk_ids=trunk_ids,
        trunk_id=trunk_ids[0] if len(trunk_ids) == 1 else None,
    )
