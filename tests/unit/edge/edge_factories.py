"""Builders for edge tests: plain views with sensible defaults, and SDP offers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sipedge.edge.inbound import InboundInvite
from sipedge.edge.snapshot import (
    AgentView,
    GatewayView,
    NumberView,
    RoutingSnapshot,
    TrunkView,
    build_snapshot,
)

CARRIER_IP = "203.0.113.7"
CARRIER_NET = "203.0.113.0/24"
US_NUMBER = "14155550123"
UK_NUMBER = "442079460958"


def trunk(trunk_id: str = "t1", **fields: Any) -> TrunkView:
    fields.setdefault("organization_id", "org-1")
    fields.setdefault("cidrs", (CARRIER_NET,))
    fields.setdefault("default_inbound_agent_id", None)
    return TrunkView(id=trunk_id, **fields)


def number(
    number_id: str = "n1", trunk_id: str = "t1", key: str = US_NUMBER, **fields: Any
) -> NumberView:
    fields.setdefault("agent_id", "a1")
    return NumberView(
        id=number_id, trunk_id=trunk_id, e164="+" + key, destination_key=key, **fields
    )


def agent(agent_id: str = "a1", **fields: Any) -> AgentView:
    fields.setdefault("organization_id", "org-1")
    fields.setdefault("telephony_provider", "sip-trunk")
    return AgentView(id=agent_id, **fields)


def gateway(gateway_id: str = "g1", priority: int = 0, **fields: Any) -> GatewayView:
    fields.setdefault("host", f"{gateway_id}.carrier.example")
    return GatewayView(id=gateway_id, priority=priority, **fields)


def snap(
    trunks: Iterable[TrunkView] = (),
    numbers: Iterable[NumberView] = (),
    agents: Iterable[AgentView] = (),
    version: int = 1,
) -> RoutingSnapshot:
    return build_snapshot(trunks, numbers, agents, version=version)


def basic_snapshot(**trunk_fields: Any) -> RoutingSnapshot:
    """One trunk t1 (203.0.113.0/24) with number +14155550123 → agent a1."""
    return snap([trunk(**trunk_fields)], [number()], [agent()])


def invite(**fields: Any) -> InboundInvite:
    fields.setdefault("source_ip", CARRIER_IP)
    fields.setdefault("transport", "udp")
    fields.setdefault("call_id", "call-1")
    fields.setdefault("request_uri_user", "+" + US_NUMBER)
    fields.setdefault("sdp", offer("0", "8", "101"))
    return InboundInvite(**fields)


_RTPMAP = {
    "0": "PCMU/8000",
    "8": "PCMA/8000",
    "9": "G722/8000",
    "18": "G729/8000",
    "101": "telephone-event/8000",
}


def offer(*payload_types: str) -> bytes:
    lines = [
        "v=0",
        "o=carrier 1 1 IN IP4 192.0.2.10",
        "s=-",
        "c=IN IP4 192.0.2.10",
        "t=0 0",
        f"m=audio 40000 RTP/AVP {' '.join(payload_types)}",
        *(f"a=rtpmap:{pt} {_RTPMAP[pt]}" for pt in payload_types),
        "a=sendrecv",
    ]
    return "".join(line + "\r\n" for line in lines).encode()


def audio_formats(sdp: bytes) -> list[str]:
    for line in sdp.decode().split("\r\n"):
        if line.startswith("m=audio"):
            return line.split()[3:]
    raise AssertionError("no audio m-line")
