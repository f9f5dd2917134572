"""SIP parser benchmark: a ~900-byte carrier INVITE with SDP, messages/second on one core.

Run pinned to one core so numbers are comparable between runs and machines:

    taskset -c 0 .venv/bin/python -m bench.bench_parser

Three figures per parser:
  parse        bytes -> message object
  +read        ... and read what every B2BUA reads: Call-ID, CSeq, From tag, To, top Via branch
  +serialise   ... and serialise the message back to bytes
Peers from PyPI are optional (not project dependencies); a missing one is skipped with the
command that installs it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from sipedge.sip.message import Request
from sipedge.sip.parser import parse_message

_SDP = (
    b"v=0\r\n"
    b"o=- 3912392838 3912392838 IN IP4 203.0.113.45\r\n"
    b"s=SBC\r\n"
    b"c=IN IP4 203.0.113.45\r\n"
    b"t=0 0\r\n"
    b"m=audio 31244 RTP/AVP 0 8 101\r\n"
    b"a=rtpmap:0 PCMU/8000\r\n"
    b"a=rtpmap:8 PCMA/8000\r\n"
    b"a=rtpmap:101 telephone-event/8000\r\n"
    b"a=fmtp:101 0-16\r\n"
    b"a=ptime:20\r\n"
    b"a=sendrecv\r\n"
)
INVITE = (
    b"INVITE sip:+14155550123@198.51.100.10:5060;transport=udp SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP 203.0.113.45:5060;branch=z9hG4bK-524287-1-f3e9a1c0d2;rport\r\n"
    b"Max-Forwards: 69\r\n"
    b"Record-Route: <sip:203.0.113.45:5060;lr;ftag=as4f7c2b1e>\r\n"
    b'From: "WIRELESS CALLER" <sip:+12125550188@203.0.113.45:5060;user=phone>;tag=as4f7c2b1e\r\n'
    b"To: <sip:+14155550123@198.51.100.10:5060;user=phone>\r\n"
    b"Call-ID: 6f1c2a9e3b7d4e8fa0c1d2e3f4a5b6c7@203.0.113.45\r\n"
    b"CSeq: 102 INVITE\r\n"
    b"Contact: <sip:+12125550188@203.0.113.45:5060;transport=udp>\r\n"
    b"Allow: INVITE, ACK, CANCEL, BYE, OPTIONS, PRACK, UPDATE\r\n"
    b"Supported: replaces, timer, 100rel\r\n"
    b"P-Asserted-Identity: <sip:+12125550188@203.0.113.45;user=phone>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: " + str(len(_SDP)).encode() + b"\r\n"
    b"\r\n" + _SDP
)

Fns = tuple[Callable[[bytes], Any], Callable[[Any], Any], Callable[[Any], Any]]


def _sipedge() -> Fns:
    def read(m: Request) -> Any:
        return m.call_id, m.cseq.seq, m.from_.tag, m.to.uri, m.top_via.branch

    return parse_message, read, bytes


def _sipmessage() -> Fns:
    from sipmessage import Message  # type: ignore[import-not-found]

    def read(m: Any) -> Any:
        return (
            m.call_id,
            m.cseq.sequence,
            m.from_address.parameters.get("tag"),
            m.to_address.uri,
            m.via[0].parameters.get("branch"),
        )

    return Message.parse, read, bytes


def _sippy() -> Fns:
    from sippy.SipRequest import SipRequest  # type: ignore[import-not-found]

    def parse(data: bytes) -> Any:
        return SipRequest(data.decode())

    def read(m: Any) -> Any:
        return (
            str(m.getHFBody("call-id")),
            m.getHFBody("cseq").getCSeqNum(),
            m.getHFBody("from").getTag(),
            m.getHFBody("to").getUrl(),
            m.getHFBody("via").getBranch(),
        )

    return parse, read, lambda m: m.localStr().encode()


PEERS: list[tuple[str, str, Callable[[], Fns]]] = [
    ("sipedge", "", _sipedge),
    ("sipmessage 0.7.1", "pip install sipmessage==0.7.1", _sipmessage),
    ("sippy 2.5.0 (SipRequest)", "pip install sippy==2.5.0", _sippy),
]


def _rate(fn: Callable[[], Any], seconds: float, samples: int = 15) -> float:
    """Messages per second of ``fn``: the best of ``samples`` short runs, so a burst of load from
    other processes on a shared machine costs a sample, not the figure."""
    best = 0.0
    for _ in range(samples):
        n, start = 0, time.perf_counter()
        while True:
            for _ in range(200):
                fn()
            n += 200
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / samples:
                break
        best = max(best, n / elapsed)
    return best


def bench(fns: Fns, data: bytes, seconds: float) -> tuple[float, float, float]:
    parse, read, ser = fns

    def ser_after_read(data: bytes) -> Any:
        m = parse(data)
        read(m)
        return ser(m)

    # Each stage re-parses: caches on the message object must not flatter the later stages.
    return (
        _rate(lambda: parse(data), seconds),
        _rate(lambda: read(parse(data)), seconds),
        _rate(lambda: ser_after_read(data), seconds),
    )


def main(seconds: float = 1.5) -> None:
    print(f"message: carrier INVITE with SDP, {len(INVITE)} bytes; msgs/s (µs/msg), one core")
    print(f"{'parser':<28}{'parse':>18}{'+read':>18}{'+serialise':>18}")
    gc.freeze()
    _rate(lambda: _sipedge()[0](INVITE), 1.0, samples=2)  # warm-up: CPU clock, caches
    for name, install, factory in PEERS:
        try:
            fns = factory()
            fns[1](fns[0](INVITE))  # smoke: it parses and reads this message
        except ImportError:
            print(f"{name:<28}  skipped: not installed ({install})")
            continue
        cells = "".join(f"{r:>10,.0f} ({1e6 / r:4.1f})" for r in bench(fns, INVITE, seconds))
        print(f"{name:<28}{cells}")


if __name__ == "__main__":
    main()
