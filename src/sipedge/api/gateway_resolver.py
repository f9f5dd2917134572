"""Gateway hosts: an FQDN or an IPv4 literal, resolved to IPv4 addresses when saved.

Only public addresses are kept unless private targets are allowed: a gateway pointing at a
private, loopback or link-local address would let a tenant make the edge dial into our own
network.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Protocol

import dns.asyncresolver
import dns.exception
import dns.inet
import dns.resolver

_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_MAX_HOST = 253


class GatewayHostError(ValueError):
    """A gateway host that cannot be used; the message never repeats the input."""


class GatewayResolver(Protocol):
    async def resolve(self, host: str) -> list[str]:
        """All IPv4 addresses of `host` (an FQDN), or raise GatewayHostError."""
        ...


class DnsGatewayResolver:
    """A-record lookups through dnspython (SRV/NAPTR are the dialer's business at call time)."""

    def __init__(
        self,
        *,
        nameservers: Sequence[str] | None = None,
        port: int = 53,
        lifetime: float = 3.0,
    ) -> None:
        if nameservers is None:
            self._resolver = dns.asyncresolver.Resolver()
        else:
            self._resolver = dns.asyncresolver.Resolver(configure=False)
            self._resolver.nameservers = list(nameservers)
        self._resolver.port = port
        self._resolver.lifetime = lifetime

    async def resolve(self, host: str) -> list[str]:
        if host.lower().rstrip(".") == "localhost":
            # RFC 6761 §6.3: localhost is loopback without asking DNS.
            return ["127.0.0.1"]
        try:
            answer = await self._resolver.resolve(host, "A", search=False)
        except dns.resolver.NXDOMAIN:
            raise GatewayHostError("gateway host does not resolve") from None
        except dns.resolver.NoAnswer:
            raise GatewayHostError("gateway host has no IPv4 address") from None
        except dns.exception.Timeout:
            raise GatewayHostError("gateway host could not be resolved: DNS timeout") from None
        except dns.exception.DNSException:
            raise GatewayHostError("gateway host could not be resolved") from None
        return [record.address for record in answer]


def validate_gateway_host(host: str) -> str:
    """Return the host in canonical form (lower case, no trailing dot) or raise."""
    candidate = host.strip().rstrip(".").lower()
    if not candidate or len(candidate) > _MAX_HOST:
        raise GatewayHostError("host must be an FQDN or an IPv4 address")
    if _is_ipv4_literal(candidate):
        return str(ipaddress.IPv4Address(candidate))
    if ":" in candidate:
        raise GatewayHostError("host must be an FQDN or an IPv4 address; IPv6 is not supported")
    labels = candidate.split(".")
    if not all(_LABEL.match(label) for label in labels) or labels[-1].isdigit():
        raise GatewayHostError("host must be an FQDN or an IPv4 address")
    return candidate


def is_public_ipv4(address: str) -> bool:
    ip = ipaddress.IPv4Address(address)
    return ip.is_global and not ip.is_multicast


async def resolve_gateway_host(
    host: str, *, resolver: GatewayResolver, allow_private: bool
) -> list[str]:
    """The IPv4 addresses a gateway may be dialled at, sorted and deduplicated.

    Raises GatewayHostError when the host is malformed, does not resolve, or resolves only to
    addresses that are not allowed.
    """
    canonical = validate_gateway_host(host)
    if _is_ipv4_literal(canonical):
        addresses = [canonical]
    else:
        addresses = await resolver.resolve(canonical)
    usable: set[str] = set()
    for address in addresses:
        if not _is_ipv4_literal(address):
            continue
        ip = ipaddress.IPv4Address(address)
        if ip.is_unspecified:
            continue
        if allow_private or is_public_ipv4(address):
            usable.add(str(ip))
    if not usable:
        raise GatewayHostError("gateway host resolves to no public IPv4 address")
    return sorted(usable, key=lambda a: ipaddress.IPv4Address(a))


def _is_ipv4_literal(text: str) -> bool:
    return dns.inet.is_address(text) and "." in text and ":" not in text
