"""Turning gateway requests into `GatewaySpec`s: the host is resolved when saved."""

from __future__ import annotations

from collections.abc import Sequence

from sipedge.api.errors import ApiValidationError
from sipedge.api.gateway_resolver import GatewayHostError, GatewayResolver, resolve_gateway_host
from sipedge.api.schemas.gateways import GatewayIn
from sipedge.store.gateways import GatewaySpec


async def resolve_gateways(
    gateways: Sequence[GatewayIn],
    *,
    resolver: GatewayResolver,
    allow_private: bool,
    loc: Sequence[str | int] = ("body",),
    indexed: bool = False,
) -> list[GatewaySpec]:
    """Resolve every host; the first that fails is a 422 at `loc` (+ index) + `host`."""
    specs = []
    for index, gateway in enumerate(gateways):
        try:
            ips = await resolve_gateway_host(
                gateway.host, resolver=resolver, allow_private=allow_private
            )
        except GatewayHostError as exc:
            where = [*loc, index, "host"] if indexed else [*loc, "host"]
            raise ApiValidationError(where, str(exc)) from None
        specs.append(
            GatewaySpec(
                host=gateway.host,
                resolved_ips=tuple(ips),
                port=gateway.port,
                priority=gateway.priority,
            )
        )
    return specs
