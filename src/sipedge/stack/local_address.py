"""Which of our addresses a peer sees, when we listen on a wildcard (0.0.0.0 or ::).

Via, Contact and SDP-facing headers must carry an address the peer can reach; a wildcard bind
has none of its own. The kernel's routing table answers it: "connecting" a UDP socket sends no
packet but picks the source address for that destination. Answers are cached per peer address.
"""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache

WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def is_wildcard(host: str) -> bool:
    return host in WILDCARDS


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=4096)
def local_ip_for(peer_ip: str) -> str:
    """Our source address towards `peer_ip`; loopback when the route cannot be determined.

    Only address literals are looked up: a name would mean a blocking DNS query.
    """
    if not is_ip_literal(peer_ip):
        return "127.0.0.1"
    family = socket.AF_INET6 if ":" in peer_ip else socket.AF_INET
    fallback = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((peer_ip, 9))  # UDP connect: no traffic, only a route lookup
            address: str = probe.getsockname()[0]
    except OSError:
        return fallback
    return address


def advertised_host(configured: str, bound_host: str, peer_ip: str) -> str:
    """The host to write into our headers towards `peer_ip`.

    The configured `sip.advertised_address` wins; else the bound address, unless it is a
    wildcard, in which case the address the kernel would send from towards the peer.
    """
    if configured:
        return configured
    if not is_wildcard(bound_host):
        return bound_host
    return local_ip_for(peer_ip)
