"""Wire fixtures and a fake-clock runner for the transaction FSM tests (no event loop, no sleep)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sipedge.sip.message import Request, Response
from sipedge.sip.parser import parse_message
from sipedge.sip.transaction import (
    Action,
    CancelTimer,
    Deliver,
    Event,
    Send,
    StartTimer,
    Terminated,
    TimerFired,
    build_response,
)

PEER = ("192.0.2.10", 5060)

INVITE = (
    "INVITE sip:bob@198.51.100.1:5060 SIP/2.0\r\n"
    "Via: SIP/2.0/{transport} 192.0.2.10:5060;branch={branch};rport\r\n"
    "Via: SIP/2.0/UDP 192.0.2.99:5070;branch=z9hG4bKupstream\r\n"
    "Route: <sip:proxy.example.net;lr>\r\n"
    "Max-Forwards: 70\r\n"
    'From: "Alice" <sip:alice@192.0.2.10>;tag=from1\r\n'
    "To: <sip:bob@198.51.100.1>{to_tag}\r\n"
    "Call-ID: {call_id}\r\n"
    "CSeq: {cseq} {method}\r\n"
    "Contact: <sip:alice@192.0.2.10:5060>\r\n"
    "Timestamp: 54\r\n"
    "Content-Length: 0\r\n"
    "\r\n"
)


def request(
    method: str = "INVITE",
    *,
    branch: str = "z9hG4bK-tx-1",
    transport: str = "UDP",
    call_id: str = "call-1@192.0.2.10",
    cseq: int = 1,
    cseq_method: str | None = None,
    to_tag: str | None = None,
    uri: str = "sip:bob@198.51.100.1:5060",
) -> Request:
    text = INVITE.format(
        transport=transport,
        branch=branch,
        to_tag=f";tag={to_tag}" if to_tag else "",
        call_id=call_id,
        cseq=cseq,
        method=cseq_method or method,
    ).replace("INVITE sip:bob@198.51.100.1:5060", f"{method} {uri}", 1)
    msg = parse_message(text.encode())
    assert isinstance(msg, Request)
    return msg


def response(
    req: Request, status: int, reason: str = "", *, to_tag: str | None = "to1"
) -> Response:
    """A response as the far end would send it (100 carries no To tag)."""
    return build_response(
        req, status, reason or "Whatever", to_tag=None if status == 100 else to_tag
    )


class Fsm(Protocol):
    def handle(self, event: Event, now: float) -> list[Action]: ...


@dataclass
class Runner:
    """Drives one FSM with a fake clock: applies StartTimer/CancelTimer, fires due timers in order
    and records every action with the time it was produced."""

    fsm: Fsm
    now: float = 0.0
    timers: dict[str, float] = field(default_factory=dict)
    log: list[tuple[float, Action]] = field(default_factory=list)
    terminated: Terminated | None = None

    def handle(self, event: Event) -> list[Action]:
        actions = self.fsm.handle(event, self.now)
        for action in actions:
            self.log.append((self.now, action))
            if isinstance(action, StartTimer):
                assert action.at >= self.now
                self.timers[action.name] = action.at
            elif isinstance(action, CancelTimer):
                assert action.name in self.timers, f"cancelled {action.name} that is not armed"
                del self.timers[action.name]
            elif isinstance(action, Terminated):
                assert self.terminated is None, "terminated twice"
                assert not self.timers, f"terminated with timers armed: {self.timers}"
                self.terminated = action
        return actions

    def advance(self, until: float) -> None:
        """Move the clock to ``until``, firing every timer due on the way, earliest first."""
        while self.timers:
            name, at = min(self.timers.items(), key=lambda item: item[1])
            if at > until:
                break
            del self.timers[name]
            self.now = at
            self.handle(TimerFired(name))
        self.now = until

    def sends(self, since: float = -1.0) -> list[tuple[float, Send]]:
        return [(t, a) for t, a in self.log if isinstance(a, Send) and t > since]

    def delivered(self) -> list[Deliver]:
        return [a for _, a in self.log if isinstance(a, Deliver)]
