"""Gateways (carrier hosts for outbound calls) and the `gateway_conflict` rule.

A gateway whose host or any resolved IP is live on another trunk is allowed only while both
trunks have carrier credentials (the credentials tell the carriers' calls apart).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sipedge.store.errors import ConflictError
from sipedge.store.lookup import get_live_child, get_live_trunk, soft_delete_child
from sipedge.store.models import Gateway, Trunk
from sipedge.store.ownership import Principal
from sipedge.store.types import nth_stamp, utcnow

GATEWAY_CONFLICT = "gateway_conflict"


@dataclass(frozen=True, slots=True)
class GatewaySpec:
    """A validated gateway: host already resolved into `resolved_ips` by the API."""

    host: str
    resolved_ips: tuple[str, ...]
    port: int = 5060
    priority: int = 0


async def _sharing_trunks(
    session: AsyncSession, *, trunk_id: str, hosts: set[str], ips: set[str]
) -> list[Trunk]:
    """Other live trunks with a live gateway on one of `hosts` or `ips`."""
    if not hosts and not ips:
        return []
    rows = await session.execute(
        select(Gateway, Trunk)
        .join(Trunk, Trunk.id == Gateway.trunk_id)
        .where(
            Gateway.is_deleted.is_(False),
            Trunk.is_deleted.is_(False),
            Trunk.id != trunk_id,
        )
    )
    found: dict[str, Trunk] = {}
    for gateway, other in rows:
        if gateway.host in hosts or ips.intersection(gateway.resolved_ips or ()):
            found[other.id] = other
    return list(found.values())


def _share_conflict() -> ConflictError:
    return ConflictError(
        GATEWAY_CONFLICT,
        "a gateway host or address is shared with another trunk; "
        "both trunks need carrier credentials",
    )


async def check_new_gateways(
    session: AsyncSession, *, trunk: Trunk, specs: Sequence[GatewaySpec]
) -> None:
    """Raise 409 `gateway_conflict` when adding `specs` to `trunk` would share a gateway
    with another trunk while either side lacks credentials."""
    hosts = {s.host for s in specs}
    ips = {ip for s in specs for ip in s.resolved_ips}
    sharing = await _sharing_trunks(session, trunk_id=trunk.id, hosts=hosts, ips=ips)
    if sharing and not (trunk.has_credentials and all(t.has_credentials for t in sharing)):
        raise _share_conflict()


async def check_credentials_removable(session: AsyncSession, *, trunk: Trunk) -> None:
    """Raise 409 `gateway_conflict` when the trunk shares a gateway with another trunk
    (so its credentials cannot be cleared)."""
    live = list(
        await session.scalars(
            select(Gateway).where(Gateway.trunk_id == trunk.id, Gateway.is_deleted.is_(False))
        )
    )
    hosts = {g.host for g in live}
    ips = {ip for g in live for ip in g.resolved_ips or ()}
    if await _sharing_trunks(session, trunk_id=trunk.id, hosts=hosts, ips=ips):
        raise _share_conflict()


def _check_duplicates(existing: Iterable[Gateway], specs: Sequence[GatewaySpec]) -> None:
    seen = {(g.host, g.port) for g in existing}
    for spec in specs:
        key = (spec.host, spec.port)
        if key in seen:
            raise ConflictError(
                "conflict", "the trunk already has a gateway with this host and port"
            )
        seen.add(key)


async def create_gateways(
    session: AsyncSession, *, trunk: Trunk, specs: Sequence[GatewaySpec], now: datetime
) -> list[Gateway]:
    """Insert `specs` on `trunk` after the conflict checks (creation order = list order)."""
    existing = await session.scalars(
        select(Gateway).where(Gateway.trunk_id == trunk.id, Gateway.is_deleted.is_(False))
    )
    _check_duplicates(existing, specs)
    await check_new_gateways(session, trunk=trunk, specs=specs)
    rows = []
    for offset, spec in enumerate(specs):
        stamp = nth_stamp(now, offset)
        row = Gateway(
            trunk_id=trunk.id,
            host=spec.host,
            resolved_ips=list(spec.resolved_ips),
            port=spec.port,
            priority=spec.priority,
            created_at=stamp,
            updated_at=stamp,
        )
        session.add(row)
        rows.append(row)
    await session.flush()
    return rows


async def add_gateway(
    session: AsyncSession, *, owner: Principal, trunk_id: str, spec: GatewaySpec
) -> Gateway:
    trunk = await get_live_trunk(session, owner=owner, trunk_id=trunk_id, for_update=True)
    (row,) = await create_gateways(session, trunk=trunk, specs=[spec], now=utcnow())
    return row


async def remove_gateway(
    session: AsyncSession, *, owner: Principal, trunk_id: str, gateway_id: str
) -> Gateway:
    row = await get_live_child(
        session, Gateway, owner=owner, trunk_id=trunk_id, child_id=gateway_id, label="gateway"
    )
    return await soft_delete_child(session, row)
