"""RFC 3263 gateway resolution at call time: NAPTR -> SRV -> A, TTL cache, ``resolved_ips``
fallback, private addresses refused unless allowed; real dnspython against a loopback DNS stub."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import dns.asyncresolver
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from sipedge.edge.snapshot import GatewayView
from sipedge.runtime.gateway_dns import GatewayDns

ZONE: dict[tuple[str, str], tuple[int, list[str]]] = {
    ("naptr.example.", "NAPTR"): (
        60,
        [
            '10 50 "s" "SIP+D2T" "" _sip._tcp.naptr.example.',
            '20 50 "s" "SIP+D2U" "" _sip._udp.naptr.example.',
        ],
    ),
    ("_sip._udp.naptr.example.", "SRV"): (60, ["0 0 5070 b.naptr.example."]),
    ("_sip._tcp.naptr.example.", "SRV"): (60, ["0 0 5071 b.naptr.example."]),
    ("b.naptr.example.", "A"): (60, ["9.9.9.9"]),
    ("_sip._udp.srv.example.", "SRV"): (
        30,
        ["20 0 5090 low.srv.example.", "10 0 5080 high.srv.example."],
    ),
    ("high.srv.example.", "A"): (30, ["1.1.1.1"]),
    ("low.srv.example.", "A"): (30, ["8.8.8.8"]),
    ("plain.example.", "A"): (120, ["8.8.4.4"]),
    ("private.example.", "A"): (120, ["10.0.0.1"]),
}


class _Stub(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.queries: list[tuple[str, str]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.DatagramTransport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().lower()
        kind = dns.rdatatype.to_text(question.rdtype)
        self.queries.append((name, kind))
        entry = ZONE.get((name, kind))
        if entry is not None:
            ttl, values = entry
            response.answer.append(dns.rrset.from_text_list(name, ttl, "IN", kind, values))
        elif not any(n == name for n, _ in ZONE):
            response.set_rcode(dns.rcode.NXDOMAIN)
        response.flags |= dns.flags.AA
        self.transport.sendto(response.to_wire(), addr)


@pytest.fixture
async def stub() -> AsyncIterator[tuple[_Stub, dns.asyncresolver.Resolver]]:
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_datagram_endpoint(_Stub, local_addr=("127.0.0.1", 0))
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = ["127.0.0.1"]
    resolver.port = transport.get_extra_info("sockname")[1]
    try:
        yield protocol, resolver
    finally:
        transport.close()


def gw(host: str, port: int = 5060, resolved: tuple[str, ...] = ()) -> GatewayView:
    return GatewayView(id="g", host=host, port=port, resolved_ips=resolved)


async def test_naptr_then_srv_then_a(stub) -> None:
    _, resolver = stub
    dns_ = GatewayDns(resolver)
    assert await dns_.resolve(gw("naptr.example"), "udp") == [("9.9.9.9", 5070)]
    assert await dns_.resolve(gw("naptr.example"), "tcp") == [("9.9.9.9", 5071)]


async def test_srv_targets_in_priority_order(stub) -> None:
    _, resolver = stub
    result = await GatewayDns(resolver).resolve(gw("srv.example"), "udp")
    assert result == [("1.1.1.1", 5080), ("8.8.8.8", 5090)]


async def test_a_records_with_the_gateway_port_and_ttl_cache(stub) -> None:
    protocol, resolver = stub
    now = [0.0]
    dns_ = GatewayDns(resolver, clock=lambda: now[0])
    assert await dns_.resolve(gw("plain.example", 5062), "udp") == [("8.8.4.4", 5062)]
    asked = len(protocol.queries)
    now[0] = 119.0
    assert await dns_.resolve(gw("plain.example", 5062), "udp") == [("8.8.4.4", 5062)]
    assert len(protocol.queries) == asked  # cached for the TTL
    now[0] = 121.0
    await dns_.resolve(gw("plain.example", 5062), "udp")
    assert len(protocol.queries) > asked


async def test_fallback_to_saved_addresses_and_private_refused(stub) -> None:
    _, resolver = stub
    dns_ = GatewayDns(resolver)
    assert await dns_.resolve(gw("gone.example", 5060, ("8.8.8.8",)), "udp") == [("8.8.8.8", 5060)]
    assert await dns_.resolve(gw("private.example", 5060, ("1.1.1.1",)), "udp") == [
        ("1.1.1.1", 5060)
    ]
    assert await dns_.resolve(gw("127.0.0.1", 5999), "udp") == []
    allowed = GatewayDns(resolver, allow_private=True)
    assert await allowed.resolve(gw("127.0.0.1", 5999), "udp") == [("127.0.0.1", 5999)]
    assert await allowed.resolve(gw("private.example"), "udp") == [("10.0.0.1", 5060)]
