"""Gateway addresses at call time, per RFC 3263 §4 with dnspython's async resolver (off the loop's
hot path: the dialer awaits it in the call's own task, never inside a message callback).

For a host name: NAPTR records for the trunk's transport (``SIP+D2U`` / ``SIP+D2T``) name SRV
owners; without them ``_sip._udp.<host>`` / ``_sip._tcp.<host>``; SRV targets in priority then
weight order, each resolved to A records; no SRV at all: the host's A records with the gateway's
port. Answers are cached for their TTL (the smallest in the chain). When DNS fails or gives
nothing usable, the gateway's saved ``resolved_ips`` are used. IP literals skip DNS. Addresses
that are not public are dropped unless ``security.allow_private_gateways``.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable
from typing import Any

import dns.asyncresolver
import dns.exception
import dns.resolver

from sipedge.edge.snapshot import GatewayView
from sipedge.sip.transaction import Address

__all__ = ["GatewayDns"]

log = logging.getLogger(__name__)

_NAPTR_SERVICE = {"udp": "SIP+D2U", "tcp": "SIP+D2T"}
_MAX_SRV_TARGETS = 8
_MIN_TTL, _MAX_TTL = 5, 3600


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


class GatewayDns:
    """``await resolve(gateway, transport) -> [(ip, port), ...]`` in the order to try."""

    def __init__(
        self,
        resolver: dns.asyncresolver.Resolver | None = None,
        *,
        allow_private: bool = False,
        clock: Callable[[], float] = time.monotonic,
        lifetime: float = 2.0,
    ) -> None:
        if resolver is None:
            resolver = dns.asyncresolver.Resolver()
        resolver.lifetime = lifetime
        self._resolver = resolver
        self._allow_private = allow_private
        self._clock = clock
        self._cache: dict[tuple[str, int, str], tuple[float, list[Address]]] = {}

    def _usable(self, ip: str) -> bool:
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return False
        return self._allow_private or address.is_global

    async def resolve(self, gateway: GatewayView, transport: str) -> list[Address]:
        literal = _literal(gateway.host)
        if literal is not None:
            return [(literal, gateway.port)] if self._usable(literal) else []
        key = (gateway.host.lower(), gateway.port, transport)
        cached = self._cache.get(key)
        now = self._clock()
        if cached is not None and cached[0] > now:
            return list(cached[1])
        try:
            addresses, ttl = await self._lookup(gateway, transport)
        except dns.exception.DNSException as exc:
            log.debug("DNS for gateway %s failed: %s", gateway.id, type(exc).__name__)
            addresses, ttl = [], 0
        addresses = [a for a in addresses if self._usable(a[0])]
        if not addresses:
            return [(ip, gateway.port) for ip in gateway.resolved_ips if self._usable(ip)]
        self._cache[key] = (now + max(_MIN_TTL, min(ttl, _MAX_TTL)), addresses)
        return list(addresses)

    async def _query(self, name: str, rdtype: str) -> Any:
        try:
            return await self._resolver.resolve(name, rdtype, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return None

    async def _lookup(self, gateway: GatewayView, transport: str) -> tuple[list[Address], int]:
        host = gateway.host.rstrip(".")
        srv_names: list[str] = []
        naptr = await self._query(host, "NAPTR")
        ttls: list[int] = []
        if naptr is not None:
            ttls.append(naptr.rrset.ttl)
            wanted = _NAPTR_SERVICE[transport]
            for record in sorted(naptr, key=lambda r: (r.order, r.preference)):
                service = record.service.decode("ascii", "replace").upper()
                if record.flags.lower() == b"s" and service == wanted:
                    srv_names.append(record.replacement.to_text().rstrip("."))
        if not srv_names:
            srv_names = [f"_sip._{transport}.{host}"]
        for srv_name in srv_names:
            srv = await self._query(srv_name, "SRV")
            if srv is None:
                continue
            ttls.append(srv.rrset.ttl)
            addresses: list[Address] = []
            ordered = sorted(srv, key=lambda r: (r.priority, -r.weight))[:_MAX_SRV_TARGETS]
            for record in ordered:
                target = record.target.to_text().rstrip(".")
                found = await self._query(target, "A")
                if found is None:
                    continue
                ttls.append(found.rrset.ttl)
                addresses += [(r.address, int(record.port)) for r in found]
            if addresses:
                return addresses, min(ttls)
        a_records = await self._query(host, "A")
        if a_records is None:
            return [], 0
        ttls.append(a_records.rrset.ttl)
        return [(r.address, gateway.port) for r in a_records], min(ttls)
