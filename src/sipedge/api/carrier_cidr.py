"""Carrier IP ranges: normalised to network/prefix, with a floor on how wide a range may be.

A range shorter than /16 (IPv4) or /32 (IPv6) would admit a large part of the internet to a
trunk: a toll-fraud hole, so it is refused rather than stored.
"""

from __future__ import annotations

import netaddr

MIN_PREFIX_V4 = 16
MIN_PREFIX_V6 = 32
_MAX_TEXT = 64


def normalise_cidr(text: str) -> str:
    """Return `network/prefix` for an address or CIDR; a bare address gets /32 or /128.

    Raises ValueError with a message that never repeats the input.
    """
    candidate = text.strip()
    if not candidate or len(candidate) > _MAX_TEXT:
        raise ValueError("cidr must be an IPv4 or IPv6 address or CIDR")
    if "/" in candidate:
        address, _, prefix_text = candidate.partition("/")
        if not prefix_text.isdigit():
            raise ValueError("cidr prefix length must be a number")
    else:
        address, prefix_text = candidate, ""
    try:
        ip = netaddr.IPAddress(address, flags=netaddr.INET_PTON)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        raise ValueError("cidr must be an IPv4 or IPv6 address or CIDR") from None
    max_prefix = 32 if ip.version == 4 else 128
    prefix = int(prefix_text) if prefix_text else max_prefix
    if prefix > max_prefix:
        raise ValueError(f"cidr prefix length must be at most {max_prefix}")
    network = netaddr.IPNetwork(f"{ip}/{prefix}")
    if network.ip != network.network:
        raise ValueError("cidr has host bits set; use the network address")
    floor = MIN_PREFIX_V4 if ip.version == 4 else MIN_PREFIX_V6
    if prefix < floor:
        raise ValueError(f"cidr prefix must be /{floor} or longer")
    return f"{network.network}/{prefix}"
