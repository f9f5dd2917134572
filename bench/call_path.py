"""CPU per inbound call of the whole edge, without sockets or a load generator.

A real ``SipEdge`` (transaction layer, B2BUA, policy, metrics, timers) is started on 127.0.0.1;
then its UDP socket's ``sendto`` is swapped for a list and this module plays both peers by
calling ``datagram_received`` with prepared bytes: the carrier's INVITE with SDP, the agent's
180 and 200, the carrier's ACK, the carrier's BYE and the agent's 200 for it. Only the edge's
own work is timed (the thread's CPU time in each ``datagram_received`` call, including what
it sends), so the figure
is the CPU a call costs the edge's loop on one core, minus the kernel's send/receive cost. It
is the quick, repeatable gauge for the hot path; ``bench.inbound_ramp`` is the end-to-end truth.

    taskset -c 0 .venv/bin/python -m bench.call_path                 # 20,000 calls, best of 3
    taskset -c 0 .venv/bin/python -m bench.call_path --profile       # + cProfile top entries
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import pstats
import re
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sipedge.config import Settings
from sipedge.edge.channels import ChannelLimiter
from sipedge.edge.snapshot import AgentView, NumberView, TrunkView, build_snapshot
from sipedge.runtime.edge_app import SipEdge
from sipedge.runtime.ports import CallRecordEvent

CARRIER = ("127.0.0.1", 5070)
AGENT = ("127.0.0.1", 5090)
NUMBER = "+14155550100"

SDP = (
    b"v=0\r\no=carrier 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\n"
    b"t=0 0\r\nm=audio 6000 RTP/AVP 0 8 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n"
    b"a=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\na=sendrecv\r\n"
)
AGENT_SDP = (
    b"v=0\r\no=agent 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    b"m=audio 7000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
)

_HEADER = {
    name: re.compile(rb"\r\n" + name + rb": ([^\r]*)", re.IGNORECASE)
    for name in (b"Via", b"From", b"To", b"Call-ID", b"CSeq", b"Contact")
}


def _header(data: bytes, name: bytes) -> bytes:
    match = _HEADER[name].search(data)
    if match is None:
        raise AssertionError(f"{name!r} missing in {data[:200]!r}")
    return match.group(1)


@dataclass
class _Sink:
    events: int = 0

    def record(self, event: CallRecordEvent) -> None:
        self.events += 1


@dataclass
class _Activity:
    def call_crossed(self, **kw: Any) -> None:
        return None

    def call_outcome(self, **kw: Any) -> None:
        return None


@dataclass
class _Snapshots:
    current: Any


@dataclass
class _Wire:
    """Stands in for the asyncio datagram transport: keeps what the edge sends."""

    sent: list[tuple[bytes, Any]] = field(default_factory=list)

    def sendto(self, data: bytes, dest: Any) -> None:
        self.sent.append((data, dest))

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        return None

    def take(self, dest: tuple[str, int], first: bytes) -> bytes:
        for i, (data, to) in enumerate(self.sent):
            if tuple(to) == dest and data.startswith(first):
                del self.sent[i]
                return data
        raise AssertionError(f"nothing starting {first!r} sent to {dest}: {self.sent!r}")


def _settings() -> Settings:
    base = Settings(
        sip={"host": "127.0.0.1", "port": 5060},
        agents={"endpoint": f"sip:{AGENT[0]}:{AGENT[1]}"},
        flood={"enabled": False},
    )
    return base.model_copy(update={"sip": base.sip.model_copy(update={"port": 0})})


def _snapshot() -> Any:
    trunk = TrunkView(
        id="trunk-1",
        channels=1_000_000,
        transport="udp",
        codecs=("PCMU", "PCMA"),
        default_inbound_agent_id=None,
        cidrs=("127.0.0.1/32",),
    )
    numbers = [NumberView("number-1", "trunk-1", NUMBER, NUMBER[1:], agent_id="agent-1")]
    return build_snapshot([trunk], numbers, [AgentView("agent-1")], version=1)


class Peers:
    """Both ends of one call, as prepared bytes fed to the edge."""

    def __init__(self, edge: SipEdge, wire: _Wire) -> None:
        self.edge = edge
        self.wire = wire
        self.udp = edge.transport("udp")
        self.host, self.port = edge.address
        self.timed = 0.0
        self.held: list[tuple[bytes, bytes, bytes, bytes]] = []

    def feed(self, data: bytes, source: tuple[str, int]) -> None:
        start = time.thread_time()  # CPU time: other load on the core does not count
        self.udp.datagram_received(data, source)  # type: ignore[attr-defined]
        self.timed += time.thread_time() - start

    def call(self, n: int, *, hang_up: bool = True) -> None:
        edge_uri = f"sip:{NUMBER}@{self.host}:{self.port}".encode()
        call_id = f"bench-{n}@carrier".encode()
        branch = f"z9hG4bK-c{n}".encode()
        from_ = b'"Carrier" <sip:+14155550999@127.0.0.1:5070>;tag=ct' + str(n).encode()
        to = b"<" + edge_uri + b">"
        common = b"From: " + from_ + b"\r\nCall-ID: " + call_id + b"\r\nMax-Forwards: 70\r\n"
        invite = (
            b"INVITE " + edge_uri + b" SIP/2.0\r\n"
            b"Via: SIP/2.0/UDP 127.0.0.1:5070;branch=" + branch + b"\r\n"
            + common + b"To: " + to + b"\r\nCSeq: 1 INVITE\r\n"
            b"Contact: <sip:carrier@127.0.0.1:5070>\r\nContent-Type: application/sdp\r\n"
            b"Content-Length: " + str(len(SDP)).encode() + b"\r\n\r\n" + SDP
        )  # fmt: skip
        self.feed(invite, CARRIER)
        self.wire.take(CARRIER, b"SIP/2.0 100")
        out = self.wire.take(AGENT, b"INVITE ")
        self._answer(out)
        self.wire.take(CARRIER, b"SIP/2.0 180")
        ok = self.wire.take(CARRIER, b"SIP/2.0 200")
        to_tagged = _header(ok, b"To")
        contact = _header(ok, b"Contact").strip(b"<>")
        ack = (
            b"ACK " + contact + b" SIP/2.0\r\n"
            b"Via: SIP/2.0/UDP 127.0.0.1:5070;branch=" + branch + b"a\r\n"
            + common + b"To: " + to_tagged + b"\r\nCSeq: 1 ACK\r\nContent-Length: 0\r\n\r\n"
        )  # fmt: skip
        self.feed(ack, CARRIER)
        self.wire.take(AGENT, b"ACK ")
        if not hang_up:
            self.held.append((contact, common, to_tagged, branch))
            return
        self._hang_up(contact, common, to_tagged, branch)

    def hang_up_held(self) -> None:
        while self.held:
            self._hang_up(*self.held.pop())

    def _hang_up(self, contact: bytes, common: bytes, to_tagged: bytes, branch: bytes) -> None:
        bye = (
            b"BYE " + contact + b" SIP/2.0\r\n"
            b"Via: SIP/2.0/UDP 127.0.0.1:5070;branch=" + branch + b"b\r\n"
            + common + b"To: " + to_tagged + b"\r\nCSeq: 2 BYE\r\nContent-Length: 0\r\n\r\n"
        )  # fmt: skip
        self.feed(bye, CARRIER)
        out_bye = self.wire.take(AGENT, b"BYE ")
        self.feed(self._response(out_bye, b"200 OK", b""), AGENT)
        self.wire.take(CARRIER, b"SIP/2.0 200")
        if self.wire.sent:
            raise AssertionError(f"unexpected sends: {self.wire.sent!r}")

    def _answer(self, invite: bytes) -> None:
        self.feed(self._response(invite, b"180 Ringing", b"", tag=True), AGENT)
        self.feed(self._response(invite, b"200 OK", AGENT_SDP, tag=True), AGENT)

    def _response(self, request: bytes, status: bytes, body: bytes, *, tag: bool = False) -> bytes:
        to = _header(request, b"To") + (b";tag=agent1" if tag else b"")
        vias = re.findall(rb"\r\nVia: ([^\r]*)", request)
        head = b"SIP/2.0 " + status + b"\r\n"
        head += b"".join(b"Via: " + v + b"\r\n" for v in vias)
        head += b"From: " + _header(request, b"From") + b"\r\nTo: " + to + b"\r\n"
        head += b"Call-ID: " + _header(request, b"Call-ID") + b"\r\n"
        head += b"CSeq: " + _header(request, b"CSeq") + b"\r\n"
        head += b"Contact: <sip:agent@127.0.0.1:5090>\r\n"
        if body:
            head += b"Content-Type: application/sdp\r\n"
        return head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


def _synchronous(edge: SipEdge) -> None:
    """The edge defers its TU callbacks to the loop's ready queue (``defer_tu``); here each
    datagram's whole work must happen inside ``datagram_received`` to be timed and checked, so
    run them inline (the deferral itself costs one ``call_soon`` per message)."""
    edge._layer._defer = False  # type: ignore[union-attr]


class _GcClock:
    """Time spent in the cyclic collector (``gc.callbacks``), per generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.runs = [0, 0, 0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.thread_time()
        else:
            self.seconds += time.thread_time() - self._start
            self.runs[info["generation"]] += 1


@contextlib.asynccontextmanager
async def _wired_edge() -> AsyncIterator[Peers]:
    """A started edge whose UDP socket sends into a list, and both peers of its calls."""
    wire = _Wire()
    edge = SipEdge(
        _settings(),
        snapshots=_Snapshots(_snapshot()),
        limiter=ChannelLimiter(),
        records=_Sink(),
        activity=_Activity(),
    )
    await edge.start()
    _synchronous(edge)
    real = edge.transport("udp")._transport  # type: ignore[attr-defined]
    edge.transport("udp")._transport = wire  # type: ignore[attr-defined]
    try:
        yield Peers(edge, wire)
    finally:
        edge.transport("udp")._transport = real  # type: ignore[attr-defined]
        await edge.stop()


async def _run(calls: int, rounds: int, profile: bool) -> list[float]:
    results: list[float] = []
    async with _wired_edge() as peers:
        for n in range(200):  # warm-up
            peers.call(n)
        gc.collect()
        gc.freeze()
        base = 1000
        for _ in range(rounds):
            peers.timed = 0.0
            clock = _GcClock()
            gc.callbacks.append(clock)
            profiler = cProfile.Profile() if profile else None
            if profiler is not None:
                profiler.enable()
            for n in range(base, base + calls):
                peers.call(n)
                if n % 100 == 0:
                    await asyncio.sleep(0)  # let due timers run, as the loop would
            if profiler is not None:
                profiler.disable()
                stats = pstats.Stats(profiler, stream=sys.stdout)
                stats.sort_stats("tottime").print_stats(30)
            gc.callbacks.remove(clock)
            base += calls
            results.append(peers.timed / calls)
            print(
                f"  round: {peers.timed / calls * 1e6:.0f} us/call, of which the cyclic GC "
                f"{clock.seconds / calls * 1e6:.0f} us ({clock.runs} collections by generation)"
            )
    return results


async def _held(calls: int, top: int) -> None:
    """Python heap per held (answered, not yet ended) call, by allocation site (tracemalloc)."""
    async with _wired_edge() as peers:
        for n in range(200):  # warm-up: memo caches, metric children, lazy imports
            peers.call(n)
        gc.collect()
        tracemalloc.start(4)
        before = tracemalloc.take_snapshot()
        base_size = tracemalloc.get_traced_memory()[0]
        for n in range(1000, 1000 + calls):
            peers.call(n, hang_up=False)
        gc.collect()
        held_size = tracemalloc.get_traced_memory()[0]
        during = tracemalloc.take_snapshot()
        peers.hang_up_held()
        gc.collect()
        after_size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        per_call = (held_size - base_size) / calls
        print(f"held {calls} calls: {per_call / 1024:.2f} KiB of Python heap per call")
        for stat in during.compare_to(before, "traceback")[:top]:
            where = " < ".join(
                f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in stat.traceback
            )
            print(
                f"  {stat.size_diff / calls:8.0f} B/call {stat.count_diff / calls:6.1f} blocks/call"
                f"  {where}"
            )
        print(
            f"after hanging up (transactions still in their wait states): "
            f"{(after_size - base_size) / calls / 1024:.2f} KiB per call still held"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--held",
        type=int,
        default=0,
        help="instead of timing: hold this many answered calls and report heap per call",
    )
    parser.add_argument(
        "--gc-threshold",
        default=None,
        help="gen0,gen1,gen2 thresholds instead of the process's own (e.g. 700,10,10)",
    )
    args = parser.parse_args(argv)
    if args.gc_threshold:
        gc.set_threshold(*(int(x) for x in args.gc_threshold.split(",")))
    from sipedge.stack.loop import install_uvloop

    install_uvloop()
    if args.held:
        asyncio.run(_held(args.held, top=45))
        return 0
    per_call = asyncio.run(_run(args.calls, args.rounds, args.profile))
    best = min(per_call)
    print(
        f"{datetime.now():%Y-%m-%d %H:%M} call path: {args.calls} calls x {args.rounds}: "
        f"best {best * 1e6:.0f} us CPU per call ({1 / best:,.0f} calls/s on one core); "
        f"rounds {', '.join(f'{r * 1e6:.0f}' for r in per_call)} us"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
