"""Gateway host resolution through real dnspython against a DNS stub on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from sipedge.api.gateway_resolver import (
    DnsGatewayResolver,
    GatewayHostError,
    resolve_gateway_host,
    validate_gateway_host,
)

ZONE = {
    "sip.carrier.example.": ["9.9.9.9", "1.1.1.1", "10.0.0.7", "198.51.100.10"],
    "private.carrier.example.": ["10.0.0.1", "192.168.1.1", "127.0.0.1", "169.254.1.1"],
    "v6only.carrier.example.": [],
}


class _DnsStub(asyncio.DatagramProtocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # On 3.11 the selector datagram transport is not a DatagramTransport subclass.
        self.transport: asyncio.DatagramTransport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().lower()
        if name not in ZONE:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.A and ZONE[name]:
            response.answer.append(dns.rrset.from_text_list(name, 60, "IN", "A", ZONE[name]))
        response.flags |= dns.flags.AA
        self.transport.sendto(response.to_wire(), addr)


@pytest.fixture
async def resolver() -> AsyncIterator[DnsGatewayResolver]:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(_DnsStub, local_addr=("127.0.0.1", 0))
    port = transport.get_extra_info("sockname")[1]
    try:
        yield DnsGatewayResolver(nameservers=["127.0.0.1"], port=port, lifetime=2.0)
    finally:
        transport.close()


async def test_keeps_only_public_addresses(resolver: DnsGatewayResolver) -> None:
    ips = await resolve_gateway_host("sip.carrier.example", resolver=resolver, allow_private=False)
    assert ips == ["1.1.1.1", "9.9.9.9"]


async def test_private_only_host_refused_unless_allowed(resolver: DnsGatewayResolver) -> None:
    with pytest.raises(GatewayHostError, match="no public IPv4"):
        await resolve_gateway_host(
            "private.carrier.example", resolver=resolver, allow_private=False
        )
    ips = await resolve_gateway_host(
        "private.carrier.example", resolver=resolver, allow_private=True
    )
    assert ips == ["10.0.0.1", "127.0.0.1", "169.254.1.1", "192.168.1.1"]


async def test_unknown_host_does_not_resolve(resolver: DnsGatewayResolver) -> None:
    with pytest.raises(GatewayHostError, match="does not resolve"):
        await resolve_gateway_host("nope.carrier.example", resolver=resolver, allow_private=True)


async def test_host_without_a_record(resolver: DnsGatewayResolver) -> None:
    with pytest.raises(GatewayHostError, match="no IPv4"):
        await resolve_gateway_host("v6only.carrier.example", resolver=resolver, allow_private=True)


async def test_ipv4_literal_needs_no_dns() -> None:
    class NoDns:
        async def resolve(self, host: str) -> list[str]:
            raise AssertionError("a literal must not be looked up")

    assert await resolve_gateway_host("8.8.8.8", resolver=NoDns(), allow_private=False) == [
        "8.8.8.8"
    ]
    with pytest.raises(GatewayHostError):
        await resolve_gateway_host("127.0.0.1", resolver=NoDns(), allow_private=False)
    assert await resolve_gateway_host("127.0.0.1", resolver=NoDns(), allow_private=True) == [
        "127.0.0.1"
    ]


@pytest.mark.parametrize(
    "host", ["", "::1", "2001:db8::1", "bad_host.example", "-a.example", "a" * 64 + ".com", "1.2.3"]
)
def test_malformed_hosts(host: str) -> None:
    with pytest.raises(GatewayHostError):
        validate_gateway_host(host)


def test_host_canonical_form() -> None:
    assert validate_gateway_host("SIP.Carrier.Example.") == "sip.carrier.example"
