"""Fuzz targets shared by the bounded CI fuzz tests, the corpus replay and ``bench/fuzz.py``.

- ``check_message(data)``: the parser (and the stream framer) on any bytes returns a message or
  raises ``SipError`` with a status the transport knows how to send; what it accepts serialises
  and parses back.
- ``check_pipeline(invites, releases)``: the pure inbound pipeline on any ``InboundInvite``
  returns only ``Accept | Reject | Drop``, never raises, and the channel limiter ends holding
  exactly the channels of the accepted calls that were not released (no leak, no double free).
- Hypothesis strategies for both: structure-aware SIP mutations (duplicated and oversized
  headers, deep Via stacks, huge Content-Length, NULs, non-UTF-8) and random invites with random
  SDP bytes against a snapshot of a few trunks.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from sipedge.edge.channels import ChannelLimiter
from sipedge.edge.decisions import Accept, Drop, Reject
from sipedge.edge.inbound import InboundInvite, evaluate_invite
from sipedge.edge.snapshot import AgentView, NumberView, RoutingSnapshot, TrunkView, build_snapshot
from sipedge.sip.errors import SipError
from sipedge.sip.framing import StreamFramer
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import error_response, parse_message

CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"
ANSWERABLE = (None, 400, 413, 505, 513)

# --------------------------------------------------------------------------- parser target

SEED_INVITE = (
    b"INVITE sip:+14155550123@198.51.100.10:5060;transport=udp SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bK-1;rport\r\n"
    b"Max-Forwards: 69\r\n"
    b'From: "Carrier" <sip:+15559870000@203.0.113.5>;tag=abc\r\n'
    b"To: <sip:+14155550123@198.51.100.10>\r\n"
    b"Call-ID: fuzz-1@203.0.113.5\r\n"
    b"CSeq: 1 INVITE\r\n"
    b"Contact: <sip:+15559870000@203.0.113.5:5060>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 52\r\n\r\n"
    b"v=0\r\nc=IN IP4 203.0.113.5\r\nm=audio 4000 RTP/AVP 0 8\r\n\r\n"
)
SEED_RESPONSE = (
    b"SIP/2.0 200 OK\r\n"
    b"Via: SIP/2.0/UDP 198.51.100.10:5060;branch=z9hG4bK-2\r\n"
    b"From: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\n"
    b"Call-ID: fuzz-2\r\nCSeq: 7 BYE\r\nContent-Length: 0\r\n\r\n"
)
SEEDS = [SEED_INVITE, SEED_RESPONSE]
SPECIAL = [b"\r\n", b" ", b"\t", b":", b";", b",", b"<", b">", b'"', b"\\", b"%", b"@", b"=",
           b"\x00", b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\r\n ", b"SIP/2.0", b"0", b"-1"]  # fmt: skip
HEADER_NAMES = [b"Via", b"v", b"From", b"To", b"Call-ID", b"i", b"CSeq", b"Content-Length",
                b"l", b"Max-Forwards", b"Contact", b"X-Junk", b"Route", b"Record-Route"]  # fmt: skip


def check_message(data: bytes) -> None:
    """The parser target: only SipError escapes, with a status the transport can send."""
    try:
        msg = parse_message(data)
    except SipError as exc:
        assert exc.status in ANSWERABLE, exc
        error_response(data, exc)  # building the stateless answer must not raise either
        return
    assert isinstance(msg, Request | Response)
    again = parse_message(bytes(msg))  # whatever we accepted serialises and parses back
    assert type(again) is type(msg)
    for name in ("Via", "From", "To", "Contact", "Route", "Record-Route"):
        msg.headers.get_all(name)


def check_stream(data: bytes, cuts: list[int]) -> None:
    framer = StreamFramer(max_size=4096)
    pos = 0
    try:
        for cut in [*cuts, len(data)]:
            for frame in framer.feed(data[pos : pos + cut]):
                check_message(frame)
            pos += cut
    except SipError as exc:
        assert exc.status in (None, 513)


def _split(data: bytes) -> tuple[list[bytes], bytes]:
    head, sep, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n"), body if sep else b""


@st.composite
def sip_messages(draw: st.DrawFn) -> bytes:
    """A seed message reshaped at the header level, then (sometimes) mutated byte-wise."""
    lines, body = _split(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(
            st.sampled_from(
                [
                    "dup",
                    "oversize",
                    "via_stack",
                    "via_list",
                    "content_length",
                    "nul",
                    "non_utf8",
                    "fold",
                    "drop_line",
                    "new_header",
                    "body",
                ]
            )
        )
        i = draw(st.integers(1, max(1, len(lines) - 1))) if len(lines) > 1 else 0
        if op == "dup" and len(lines) > 1:
            lines[i:i] = [lines[i]] * draw(st.integers(1, 400))
        elif op == "oversize" and len(lines) > 1:
            lines[i] += draw(st.sampled_from([b"a", b";x=1", b",", b" "])) * draw(
                st.integers(1, 20_000)
            )
        elif op == "via_stack":
            lines[1:1] = [b"Via: SIP/2.0/UDP 10.0.0.%d;branch=z9hG4bK%d" % (k, k)
                          for k in range(draw(st.integers(1, 300)))]  # fmt: skip
        elif op == "via_list":
            hops = draw(st.integers(1, 300))
            lines.insert(1, b"Via: " + b", ".join([b"SIP/2.0/TCP h;branch=z9hG4bKx"] * hops))
        elif op == "content_length":
            value = draw(
                st.sampled_from([b"9" * 5000, b"99999999999", b"-1", b"1e3", b"\xb2", b"", b"0x10"])
                | st.integers(0, 2**40).map(lambda n: str(n).encode())
            )
            lines.insert(i or 1, b"Content-Length: " + value)
        elif op == "nul" and lines:
            line = lines[i]
            at = draw(st.integers(0, len(line)))
            lines[i] = line[:at] + b"\x00" * draw(st.integers(1, 3)) + line[at:]
        elif op == "non_utf8" and lines:
            line = lines[i]
            at = draw(st.integers(0, len(line)))
            lines[i] = (
                line[:at] + draw(st.binary(min_size=1, max_size=6).filter(_not_utf8)) + line[at:]
            )
        elif op == "fold" and len(lines) > 1:
            lines.insert(i + 1, b" " + draw(st.binary(max_size=20)).replace(b"\r\n", b""))
        elif op == "drop_line" and len(lines) > 1:
            del lines[i]
        elif op == "new_header":
            name = draw(st.sampled_from(HEADER_NAMES))
            lines.insert(i or 1, name + b": " + draw(st.binary(max_size=60)))
        elif op == "body":
            body = draw(st.binary(max_size=300))
    data = bytearray(b"\r\n".join(lines) + b"\r\n\r\n" + body)
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(data)))
        choice = draw(st.integers(0, 2))
        if choice == 0:
            data[pos:pos] = draw(st.sampled_from(SPECIAL))
        elif choice == 1:
            del data[pos : pos + draw(st.integers(1, 20))]
        elif pos < len(data):
            data[pos] = draw(st.integers(0, 255))
    return bytes(data)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# ------------------------------------------------------------------------- pipeline target

CARRIER_IPS = ["203.0.113.7", "198.51.100.20", "2001:db8::5", "192.0.2.200"]
OTHER_IPS = [
    "8.8.8.8",
    "203.0.114.1",
    "::1",
    "",
    "not-an-ip",
    "203.0.113.256",
    "::ffff:203.0.113.7",
]


def fuzz_snapshot() -> RoutingSnapshot:
    """Three trunks (one with 1 channel, one TCP-only, one inactive), numbers, agents."""
    trunks = [
        TrunkView(id="t1", organization_id="o", cidrs=("203.0.113.0/24",), channels=2),
        TrunkView(id="t2", organization_id="o", cidrs=("198.51.100.0/24", "2001:db8::/32"),
                  channels=1, transport="tcp", codecs=("PCMA",), default_inbound_agent_id="a2"),
        TrunkView(id="t3", organization_id="o", cidrs=("192.0.2.0/24",), is_active=False),
    ]  # fmt: skip
    numbers = [
        NumberView(id="n1", trunk_id="t1", e164="+14155550123", destination_key="14155550123",
                   agent_id="a1"),
        NumberView(id="n2", trunk_id="t2", e164="+442079460958", destination_key="442079460958"),
        NumberView(id="n3", trunk_id="t1", e164="+14155550124", destination_key="14155550124",
                   agent_id="gone"),
    ]  # fmt: skip
    agents = [
        AgentView(id="a1", organization_id="o", telephony_provider="sip-trunk"),
        AgentView(id="a2", organization_id="o", telephony_provider="sip-trunk"),
    ]
    return build_snapshot(trunks, numbers, agents, version=1)


SNAPSHOT = fuzz_snapshot()
_SDP_LINES = [b"v=0", b"o=- 1 1 IN IP4 192.0.2.1", b"s=-", b"c=IN IP4 192.0.2.1", b"t=0 0",
              b"m=audio 4000 RTP/AVP 0 8 101", b"m=audio \xc2\xb2 RTP/AVP 0",
              b"m=audio " + b"9" * 5000 + b" RTP/AVP 0", b"m=video 5000 RTP/AVP 96",
              b"a=rtpmap:0 PCMU/8000", b"a=rtpmap:8 PCMA/8000", b"a=rtpmap:101 telephone-event/8000",
              b"a=sendrecv", b"a=inactive", b"m=audio 0 RTP/AVP 18", b"c=IN IP6 ::1"]  # fmt: skip


def sdp_bodies() -> st.SearchStrategy[bytes | None]:
    valid = st.just(b"".join(line + b"\r\n" for line in _SDP_LINES[:6] + _SDP_LINES[9:13]))
    structured = st.lists(st.sampled_from(_SDP_LINES) | st.binary(max_size=40), max_size=14).map(
        lambda lines: b"".join(line + b"\r\n" for line in lines)
    )
    return st.one_of(valid, structured, structured, st.none(), st.binary(max_size=400))


GOOD_USERS = ["+14155550123", "14155550123", "4155550123", "+442079460958", "02079460958"]
ODD_USERS = ["+14155550124", "+1", "", "²", "+" + "9" * 5000, "sip:x", "+١٤١٥٥٥٥٠١٢٣"]


def _mostly(
    likely: st.SearchStrategy[object], rest: st.SearchStrategy[object]
) -> st.SearchStrategy[object]:
    """``likely`` three times in four, so most invites get deep into the pipeline."""
    return st.integers(0, 3).flatmap(lambda n: rest if n == 0 else likely)


def users() -> st.SearchStrategy[object]:
    odd = st.none() | st.sampled_from(ODD_USERS) | st.text(max_size=30)
    return _mostly(st.sampled_from(GOOD_USERS), odd)


@st.composite
def inbound_invites(draw: st.DrawFn) -> InboundInvite:
    others = st.sampled_from(OTHER_IPS) | st.text(max_size=40)
    return InboundInvite(
        source_ip=draw(_mostly(st.sampled_from(CARRIER_IPS), others)),  # type: ignore[arg-type]
        transport=draw(_mostly(st.sampled_from(["udp", "tcp"]), st.just("tcp"))),  # type: ignore[arg-type]
        call_id=draw(_mostly(st.sampled_from(["c1", "c2", "c3", "c4"]), st.text(max_size=8))),  # type: ignore[arg-type]
        request_uri_user=draw(users()),  # type: ignore[arg-type]
        request_uri_scheme=draw(_mostly(st.just("sip"), st.sampled_from(["sips", "tel", "", "x"]))),  # type: ignore[arg-type]
        to_user=draw(users()),  # type: ignore[arg-type]
        sdp=draw(sdp_bodies()),
    )


def check_pipeline(
    invites: list[InboundInvite],
    releases: list[bool],
    snapshot: RoutingSnapshot = SNAPSHOT,
) -> None:
    """Only Accept/Reject/Drop; the limiter holds exactly the accepted, unreleased calls."""
    limiter = ChannelLimiter()
    held: dict[str, str] = {}  # call id -> trunk id, the model of what the limiter must hold
    for n, invite in enumerate(invites):
        for policy in ("drop", "reject"):
            decision = evaluate_invite(invite, snapshot, limiter, unknown_source=policy)
            assert isinstance(decision, Accept | Reject | Drop), decision
            if isinstance(decision, Accept):
                route = decision.route
                assert route.lease.call_id == invite.call_id
                held[invite.call_id] = route.trunk.id
            if isinstance(decision, Reject):
                assert 300 <= decision.status <= 699
        if releases[n % len(releases)] and invite.call_id in held:
            assert limiter.release(invite.call_id)
            del held[invite.call_id]
        for trunk_id, trunk in snapshot.trunks.items():
            expected = sum(1 for t in held.values() if t == trunk_id)
            assert limiter.active(trunk_id) == expected, (trunk_id, held)
            assert expected <= trunk.channels
    for call_id in list(held):
        assert limiter.release(call_id)
    assert all(limiter.active(t) == 0 for t in snapshot.trunks)
