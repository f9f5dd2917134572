"""Carrier IP ACL: source parsing and the prefix index (SPEC §5 Inbound step 3)."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sipedge.edge.carrier_acl import CarrierAcl, build_acl, parse_source_ip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("203.0.113.7", (4, 0xCB007107)),
        ("0.0.0.0", (4, 0)),
        ("255.255.255.255", (4, 0xFFFFFFFF)),
        ("2001:db8::1", (6, 0x20010DB8 << 96 | 1)),
        ("::", (6, 0)),
        ("::1", (6, 1)),
        ("[2001:db8::1]", (6, 0x20010DB8 << 96 | 1)),
        ("fe80::1%eth0", (6, 0xFE80 << 112 | 1)),
        ("::ffff:203.0.113.7", (4, 0xCB007107)),  # IPv4-mapped: dual-stack sockets
        ("::ffff:cb00:7107", (4, 0xCB007107)),
        ("1:2:3:4:5:6:1.2.3.4", (6, ipaddress.IPv6Address("1:2:3:4:5:6:1.2.3.4").__int__())),
    ],
)
def test_parse_source_ip(text: str, expected: tuple[int, int]) -> None:
    assert parse_source_ip(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "256.1.1.1",
        "1.2.3",
        "1.2.3.4.5",
        "a.b.c.d",
        "1..2.3",
        "٣.1.1.1",
        "1::2::3",
        ":1::",
        "1:::2",
        "12345::",
        "+1::",
        "0x1::",
        "1_0::",
        "1:2:3:4:5:6:7:8:9",
        "::1:2:3:4:5:6:7:8",
        "::1.2.3.256",
        "example.com",
        " 1.2.3.4",
    ],
)
def test_parse_source_ip_refuses_garbage(text: str) -> None:
    assert parse_source_ip(text) is None


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_parse_ipv6_matches_ipaddress(value: int) -> None:
    address = ipaddress.IPv6Address(value)
    expected = (4, value & 0xFFFFFFFF) if value >> 32 == 0xFFFF else (6, value)
    assert parse_source_ip(str(address)) == expected
    assert parse_source_ip(address.exploded) == expected


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_parse_ipv4_matches_ipaddress(value: int) -> None:
    assert parse_source_ip(str(ipaddress.IPv4Address(value))) == (4, value)


def acl(*ranges: tuple[str, str]) -> CarrierAcl:
    index, bad = build_acl(ranges)
    assert bad == ()
    return index


@pytest.mark.parametrize(
    ("ip", "expected"),
    [
        ("203.0.113.0", ("t1",)),  # first address of the range
        ("203.0.113.255", ("t1",)),  # last
        ("203.0.112.255", ()),
        ("203.0.114.0", ()),
        ("198.51.100.9", ("t2",)),  # a /32
        ("198.51.100.10", ()),
        ("2001:db8:1::42", ("t3",)),
        ("2001:db8:2::42", ()),
        ("::ffff:203.0.113.9", ("t1",)),
        ("not an ip", ()),
        ("", ()),
    ],
)
def test_trunks_for(ip: str, expected: tuple[str, ...]) -> None:
    index = acl(("t1", "203.0.113.0/24"), ("t2", "198.51.100.9/32"), ("t3", "2001:db8:1::/48"))
    assert index.trunks_for(ip) == expected


def test_overlapping_ranges_of_two_trunks() -> None:
    index = acl(
        ("wide", "10.20.0.0/16"),
        ("narrow", "10.20.30.0/24"),
        ("host", "10.20.30.40/32"),
        ("v6-wide", "2001:db8::/32"),
        ("v6-narrow", "2001:db8:0:1::/64"),
    )
    assert index.trunks_for("10.20.30.40") == ("host", "narrow", "wide")
    assert index.trunks_for("10.20.30.41") == ("narrow", "wide")
    assert index.trunks_for("10.20.31.1") == ("wide",)
    assert index.trunks_for("2001:db8:0:1::5") == ("v6-narrow", "v6-wide")
    assert index.trunks_for("2001:db8:0:2::5") == ("v6-wide",)


def test_same_range_on_two_trunks_admits_both() -> None:
    index = acl(("t2", "203.0.113.0/24"), ("t1", "203.0.113.0/24"), ("t1", "203.0.113.7/32"))
    assert index.trunks_for("203.0.113.7") == ("t1", "t2")
    assert index.trunks_for("203.0.113.8") == ("t1", "t2")


def test_ipv4_mapped_cidr_is_indexed_as_ipv4() -> None:
    index = acl(("t1", "::ffff:203.0.113.0/120"))
    assert index.trunks_for("203.0.113.7") == ("t1",)
    assert index.prefix_lengths(4) == (24,)


@pytest.mark.parametrize(
    "cidr",
    ["10.0.0.0/8", "0.0.0.0/0", "2001::/16", "::/0", "::ffff:0:0/96", "bogus", "10.0.0.0/33"],
)
def test_unreadable_or_too_broad_ranges_admit_nothing(cidr: str) -> None:
    index, bad = build_acl([("t1", cidr)])
    assert bad == (cidr,)
    assert index.trunks_for("10.1.2.3") == ()
    assert index.trunks_for("2001:db8::1") == ()


class CountingDict(dict[int, tuple[str, ...]]):
    probes = 0

    def get(self, key: int, default: Any = None) -> Any:
        CountingDict.probes += 1
        return super().get(key, default)


def _counting(index: CarrierAcl) -> CarrierAcl:
    def wrap(tables: Any) -> Any:
        return tuple((length, shift, CountingDict(table)) for length, shift, table in tables)

    return CarrierAcl(v4=wrap(index.v4), v6=wrap(index.v6))


def _probes(index: CarrierAcl, ip: str) -> int:
    CountingDict.probes = 0
    index.trunks_for(ip)
    return CountingDict.probes


def _many_trunks(count: int) -> list[tuple[str, str]]:
    ranges = []
    for i in range(count):
        a, b = divmod(i, 256)
        ranges.append((f"t{i}", f"100.{64 + a % 64}.{b}.0/24"))
        ranges.append((f"t{i}", f"100.{64 + a % 64}.{b}.{i % 250 + 1}/32"))
        ranges.append((f"t{i}", f"2001:db8:{i:x}::/48"))
    return ranges


@pytest.mark.parametrize("ip", ["100.64.3.9", "100.64.3.4", "192.0.2.1", "2001:db8:5::1", "::1"])
def test_lookup_cost_does_not_depend_on_trunk_count(ip: str) -> None:
    small = _counting(build_acl(_many_trunks(10))[0])
    large_index, bad = build_acl(_many_trunks(10_000))
    assert bad == ()
    large = _counting(large_index)
    family: Literal[4, 6] = 6 if ":" in ip else 4
    assert large.prefix_lengths(family) == small.prefix_lengths(family)
    assert _probes(large, ip) == _probes(small, ip) <= len(large.prefix_lengths(family)) <= 2
    assert len(large.prefix_lengths(4)) <= 33 and len(large.prefix_lengths(6)) <= 129


def test_ten_thousand_trunks_still_resolve() -> None:
    index, _ = build_acl(_many_trunks(10_000))
    assert index.trunks_for("100.64.3.4") == ("t3",)
    assert index.trunks_for("100.64.3.3") == ("t3",)
    assert index.trunks_for(f"2001:db8:{9999:x}::7") == ("t9999",)
