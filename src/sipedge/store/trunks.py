"""Trunk repository: create (with nested children, one transaction), list, get, update, delete.

Functions flush but never commit: the API commits once per request and then notifies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.carrier_ips import create_carrier_ips
from sipedge.store.errors import ConflictError
from sipedge.store.gateways import GatewaySpec, check_credentials_removable, create_gateways
from sipedge.store.lookup import get_live_trunk
from sipedge.store.models import CarrierIp, Gateway, Trunk, TrunkNumber
from sipedge.store.numbers import NumberSpec, create_numbers, resolve_agent_id
from sipedge.store.ownership import Principal, visible_to
from sipedge.store.types import utcnow
from sipedge.store.views import TrunkView, load_views

# Columns a caller may set on create and PATCH (validated by the API's schemas).
TRUNK_FIELDS = frozenset(
    {
        "name",
        "description",
        "preset",
        "is_active",
        "inbound_enabled",
        "outbound_enabled",
        "channels",
        "default_inbound_agent_id",
        "auth_username",
        "auth_password",
        "transport",
        "outbound_leading_plus_enabled",
        "codecs",
    }
)
CONVERT_IN_PROGRESS = "convert_in_progress"


def _checked(fields: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - TRUNK_FIELDS
    if unknown:
        raise ValueError(f"not trunk fields: {', '.join(sorted(unknown))}")
    return dict(fields)


async def create_trunk(
    session: AsyncSession,
    *,
    owner: Principal,
    fields: Mapping[str, Any],
    gateways: Sequence[GatewaySpec] = (),
    ip_acls: Sequence[str] = (),
    numbers: Sequence[NumberSpec] = (),
    converted_from_byot_trunk_id: str | None = None,
    conversion_state: str = "none",
) -> TrunkView:
    """Create a trunk owned like `owner` and its children; any failure raises before commit."""
    values = _checked(fields)
    values["default_inbound_agent_id"] = await resolve_agent_id(
        session,
        owner=owner,
        agent_id=values.get("default_inbound_agent_id"),
        field="default_inbound_agent_id",
    )
    now = utcnow()
    trunk = Trunk(
        **values,
        **owner.owner_columns(),
        converted_from_byot_trunk_id=converted_from_byot_trunk_id,
        conversion_state=conversion_state,
        created_at=now,
        updated_at=now,
    )
    session.add(trunk)
    await session.flush()
    gw_rows = await create_gateways(session, trunk=trunk, specs=gateways, now=now)
    ip_rows = await create_carrier_ips(session, trunk=trunk, cidrs=ip_acls, now=now)
    num_rows = await create_numbers(session, owner=owner, trunk=trunk, specs=numbers, now=now)
    gw_rows.sort(key=lambda g: (g.priority, g.created_at))
    return TrunkView(trunk, gw_rows, ip_rows, num_rows)


async def list_trunks(
    session: AsyncSession, *, owner: Principal, limit: int, offset: int
) -> tuple[list[TrunkView], int]:
    """One page of the caller's live trunks, oldest first, and the total count."""
    total = await session.scalar(
        select(func.count()).select_from(Trunk).where(visible_to(Trunk, owner))
    )
    page = await session.scalars(
        select(Trunk)
        .where(visible_to(Trunk, owner))
        .order_by(Trunk.created_at, Trunk.id)
        .limit(limit)
        .offset(offset)
    )
    return await load_views(session, trunks=list(page)), int(total or 0)


async def get_trunk(session: AsyncSession, *, owner: Principal, trunk_id: str) -> TrunkView:
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id)
    (view,) = await load_views(session, trunks=[trunk])
    return view


async def update_trunk(
    session: AsyncSession, *, owner: Principal, trunk_id: str, changes: Mapping[str, Any]
) -> TrunkView:
    """Apply a validated partial update (seed PATCH rules 1-5)."""
    values = _checked(changes)
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id, for_update=True)
    if (
        "is_active" in values
        and values["is_active"] != trunk.is_active
        and trunk.conversion_state == "in_progress"
    ):
        raise ConflictError(
            CONVERT_IN_PROGRESS,
            "the trunk is being migrated from a legacy trunk; is_active can change after it finishes",
        )
    if "default_inbound_agent_id" in values:
        values["default_inbound_agent_id"] = await resolve_agent_id(
            session,
            owner=owner,
            agent_id=values["default_inbound_agent_id"],
            field="default_inbound_agent_id",
        )
    if "auth_username" in values and values["auth_username"] is None:
        await check_credentials_removable(session, trunk=trunk)
    for key, value in values.items():
        setattr(trunk, key, value)
    trunk.updated_at = utcnow()
    await session.flush()
    (view,) = await load_views(session, trunks=[trunk])
    return view


async def delete_trunk(session: AsyncSession, *, owner: Principal, trunk_id: str) -> TrunkView:
    """Soft-delete the trunk and its live gateways, carrier IPs and numbers.

    Returns the trunk as deleted, with the children deleted alongside it."""
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id, for_update=True)
    (view,) = await load_views(session, trunks=[trunk])
    now = utcnow()
    rows: list[Trunk | Gateway | CarrierIp | TrunkNumber] = [
        trunk,
        *view.gateways,
        *view.ip_acls,
        *view.numbers,
    ]
    for row in rows:
        row.is_deleted, row.deleted_at, row.updated_at = True, now, now
    await session.flush()
    return view
