"""Carrier IP ACL: source address → candidate trunks (SPEC §5 Inbound step 3).

The index is built once per snapshot (Kamailio's permissions module does the same: rebuild off the
hot path, swap whole). Per address family it keeps one dict per prefix length present, mapping the
network number (``address >> host_bits``) to the ids of **every** trunk whose ranges contain that
network — nested ranges are resolved at build time — so a lookup is a longest-prefix probe that stops
at the first hit: at most 33 (IPv4) or 129 (IPv6) dict lookups, and in practice one per distinct
prefix length configured, whatever the number of trunks or ranges.

Source addresses are parsed straight to an int by a small hand-written parser; no ``ipaddress`` object
is built per packet (``ipaddress`` is only used at build time, for the stored CIDR strings), and the
pure layer does not import ``socket`` (tests/unit/test_layers.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sipedge.edge.decisions import Drop, MetricReason, Reject

if TYPE_CHECKING:
    from sipedge.edge.snapshot import RoutingSnapshot, TrunkView

__all__ = [
    "CarrierAcl",
    "UnknownSourcePolicy",
    "build_acl",
    "candidate_trunks",
    "parse_source_ip",
    "unknown_source_decision",
]

UnknownSourcePolicy = Literal["drop", "reject"]

_V4_MAPPED = 0xFFFF  # ::ffff:a.b.c.d (RFC 4291 §2.5.5.2), seen on dual-stack sockets
_EMPTY: tuple[str, ...] = ()
_HEX_DIGITS = "0123456789abcdefABCDEF"
_MIN_PREFIX = {4: 16, 6: 32}  # the API refuses broader ranges; the index never trusts them either

# One probe table: (prefix length, host bits to shift away, network number -> trunk ids).
_Table = tuple[int, int, Mapping[int, tuple[str, ...]]]


def _v4_int(text: str) -> int | None:
    parts = text.split(".")
    if len(parts) != 4:
        return None
    value = 0
    for part in parts:
        if not (0 < len(part) <= 3 and part.isascii() and part.isdigit()):
            return None
        octet = int(part)
        if octet > 255:
            return None
        value = value << 8 | octet
    return value


def _v6_groups(parts: list[str]) -> int | None:
    value = 0
    for part in parts:
        if not 0 < len(part) <= 4 or part.strip(_HEX_DIGITS):
            return None
        value = value << 16 | int(part, 16)
    return value


def _v6_int(text: str) -> int | None:
    # RFC 4291 §2.2: eight hex groups, one "::" run of zeros, an optional dotted IPv4 tail.
    tail_v4: int | None = None
    if "." in text:
        text, _, dotted = text.rpartition(":")
        tail_v4 = _v4_int(dotted)
        if tail_v4 is None:
            return None
        text += ":0:0"  # two placeholder groups ("::" before the tail survives), replaced below
    head, sep, tail = text.partition("::")
    if sep and "::" in tail:
        return None
    heads = head.split(":") if head else []
    tails = tail.split(":") if tail else []
    if sep:
        missing = 8 - len(heads) - len(tails)
        if missing < 1:
            return None
        groups = [*heads, *(["0"] * missing), *tails]
    else:
        groups = heads
    if len(groups) != 8:
        return None
    value = _v6_groups(groups)
    if value is None:
        return None
    if tail_v4 is not None:
        value = (value >> 32) << 32 | tail_v4
    return value


def parse_source_ip(ip: str) -> tuple[int, int] | None:
    """``(4 or 6, address as int)``; IPv4-mapped IPv6 becomes IPv4; None when not an address.

    Hand-rolled (no ``ipaddress`` object, no ``socket``) because it runs for every request.
    """
    if ":" not in ip:
        v4 = _v4_int(ip)
        return None if v4 is None else (4, v4)
    text = ip.partition("%")[0]  # zone id (fe80::1%eth0)
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    v6 = _v6_int(text)
    if v6 is None:
        return None
    if v6 >> 32 == _V4_MAPPED:
        return 4, v6 & 0xFFFFFFFF
    return 6, v6


@dataclass(frozen=True, slots=True)
class CarrierAcl:
    """Immutable prefix index; ``trunks_for`` is the hot-path read."""

    v4: tuple[_Table, ...]
    v6: tuple[_Table, ...]

    def trunks_for(self, ip: str) -> tuple[str, ...]:
        """Ids of the trunks (sorted) with a range containing ``ip``; ``()`` for none/garbage."""
        parsed = parse_source_ip(ip)
        if parsed is None:
            return _EMPTY
        family, value = parsed
        for _length, shift, table in self.v4 if family == 4 else self.v6:
            hit = table.get(value >> shift)
            if hit is not None:
                return hit
        return _EMPTY

    def prefix_lengths(self, family: Literal[4, 6]) -> tuple[int, ...]:
        """The prefix lengths a lookup probes, longest first (bounded by 33 / 129)."""
        return tuple(length for length, _, _ in (self.v4 if family == 4 else self.v6))


def _build_family(entries: dict[tuple[int, int], set[str]], bits: int) -> tuple[_Table, ...]:
    lengths = sorted({length for length, _ in entries}, reverse=True)
    tables: dict[int, dict[int, tuple[str, ...]]] = {length: {} for length in lengths}
    for (length, net), owners in entries.items():
        # Every range containing this one is a shorter prefix of it: add its trunks too.
        union = set(owners)
        for shorter in lengths:
            if shorter < length:
                union |= entries.get((shorter, net >> (length - shorter)), set())
        tables[length][net] = tuple(sorted(union))
    return tuple((length, bits - length, tables[length]) for length in lengths)


def build_acl(ranges: Iterable[tuple[str, str]]) -> tuple[CarrierAcl, tuple[str, ...]]:
    """Index ``(trunk_id, cidr)`` pairs. Returns the index and the CIDRs that could not be read or
    are broader than /16 (IPv4) or /32 (IPv6), for the loader to log; those admit nothing."""
    by_family: dict[int, dict[tuple[int, int], set[str]]] = {4: {}, 6: {}}
    bad: list[str] = []
    for trunk_id, cidr in ranges:
        try:
            net = ipaddress.ip_network(cidr.strip(), strict=False)
        except ValueError:
            bad.append(cidr)
            continue
        if isinstance(net, ipaddress.IPv6Network) and net.prefixlen >= 96:
            mapped = net.network_address.ipv4_mapped
            if mapped is not None:  # ::ffff:0:0/96 space: index as the IPv4 range it denotes
                net = ipaddress.ip_network(f"{mapped}/{net.prefixlen - 96}", strict=False)
        if net.prefixlen < _MIN_PREFIX[net.version]:
            bad.append(cidr)  # admits too much of the internet (SPEC §4: toll-fraud hole)
            continue
        bits = net.max_prefixlen
        key = (net.prefixlen, int(net.network_address) >> (bits - net.prefixlen))
        by_family[net.version][key] = by_family[net.version].get(key, set()) | {trunk_id}
    acl = CarrierAcl(v4=_build_family(by_family[4], 32), v6=_build_family(by_family[6], 128))
    return acl, tuple(bad)


def unknown_source_decision(policy: UnknownSourcePolicy) -> Drop | Reject:
    """Step 3 failing: drop silently (default) or 403 (``security.unknown_source = "reject"``)."""
    if policy == "reject":
        return Reject(403, "unknown source", MetricReason.UNKNOWN_SOURCE)
    return Drop(MetricReason.UNKNOWN_SOURCE)


def candidate_trunks(snapshot: RoutingSnapshot, source_ip: str) -> tuple[TrunkView, ...]:
    """Live, active, inbound-enabled trunks admitting ``source_ip`` (the index only ever holds
    those: ``build_snapshot`` withdraws the others' ranges)."""
    trunks = snapshot.trunks
    return tuple(trunks[trunk_id] for trunk_id in snapshot.acl.trunks_for(source_ip))
