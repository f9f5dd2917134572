"""Hooks for `sipedge trunk convert-legacy`: a legacy (BYOT) trunk becomes a sipedge trunk.

While the conversion is `in_progress`, a PATCH that changes `is_active` gets 409
`convert_in_progress`; `finish_conversion` ends that state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.errors import ConflictError, NotFoundError
from sipedge.store.gateways import GatewaySpec
from sipedge.store.models import Trunk
from sipedge.store.numbers import NumberSpec
from sipedge.store.ownership import Principal
from sipedge.store.trunks import create_trunk
from sipedge.store.types import utcnow
from sipedge.store.views import TrunkView

MAX_LEGACY_ID = 100  # the width of trunks.converted_from_byot_trunk_id


async def start_conversion(
    session: AsyncSession,
    *,
    owner: Principal,
    legacy_trunk_id: str,
    name: str,
    fields: Mapping[str, Any] | None = None,
    gateways: Sequence[GatewaySpec] = (),
    ip_acls: Sequence[str] = (),
    numbers: Sequence[NumberSpec] = (),
) -> TrunkView:
    """Create the trunk converted from `legacy_trunk_id`, in conversion state `in_progress`.

    `fields` are further trunk columns (as the API's create accepts them, already validated);
    a legacy trunk already converted by a live trunk is 409 `conflict`. The caller commits.
    """
    if not 0 < len(legacy_trunk_id) <= MAX_LEGACY_ID:
        raise ValueError(f"legacy trunk ids are 1-{MAX_LEGACY_ID} characters")
    existing = await session.scalar(
        select(Trunk.id).where(
            Trunk.converted_from_byot_trunk_id == legacy_trunk_id, Trunk.is_deleted.is_(False)
        )
    )
    if existing is not None:
        raise ConflictError("conflict", f"legacy trunk {legacy_trunk_id} is already converted")
    return await create_trunk(
        session,
        owner=owner,
        fields={**(fields or {}), "name": name},
        gateways=gateways,
        ip_acls=ip_acls,
        numbers=numbers,
        converted_from_byot_trunk_id=legacy_trunk_id,
        conversion_state="in_progress",
    )


async def finish_conversion(session: AsyncSession, *, trunk_id: str) -> Trunk:
    """Mark a conversion `done` (idempotent); `NotFoundError` for an unknown or deleted trunk."""
    trunk = await session.scalar(
        select(Trunk).where(Trunk.id == trunk_id, Trunk.is_deleted.is_(False))
    )
    if trunk is None:
        raise NotFoundError(f"trunk {trunk_id} not found")
    if trunk.conversion_state != "done":
        trunk.conversion_state = "done"
        trunk.updated_at = utcnow()
        await session.flush()
    return trunk
