"""Property test: on any input the parser returns a Message or raises SipError, nothing else."""

from __future__ import annotations

from fuzz_targets import check_message, check_stream, sip_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sip_wire import torture
from test_parser import INVITE, RESPONSE

from sipedge.sip.errors import SipError
from sipedge.sip.framing import StreamFramer
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import parse_message

SEEDS = [INVITE, RESPONSE, torture("wsinv"), torture("intmeth"), torture("esc01")]
# Bytes that matter to the grammar, to make mutations land on interesting ground.
SPECIAL = [b"\r\n", b" ", b"\t", b":", b";", b",", b"<", b">", b'"', b"\\", b"%", b"@", b"=",
           b"[", b"]", b"?", b"\x00", b"\xff", b"\r\n ", b"SIP/2.0", b"0", b"-1"]  # fmt: skip

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(data: bytes) -> None:
    try:
        msg = parse_message(data)
    except SipError as exc:
        assert exc.status in (None, 400, 413, 505, 513)
        return
    assert isinstance(msg, Request | Response)
    # Whatever we accepted must serialise and parse back.
    again = parse_message(bytes(msg))
    assert type(again) is type(msg)


@SETTINGS
@given(st.binary(max_size=2048))
def test_random_bytes(data: bytes) -> None:
    check(data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "flip"]))
        if op == "insert":
            data[pos:pos] = draw(st.sampled_from(SPECIAL) | st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 40))]
        elif op == "replace" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif pos < len(data):
            data[pos] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


@SETTINGS
@given(mutated())
def test_mutated_messages(data: bytes) -> None:
    check(data)


@SETTINGS
@given(mutated(), st.lists(st.integers(1, 64), min_size=1, max_size=20))
def test_framer_never_raises_anything_else(data: bytes, cuts: list[int]) -> None:
    framer = StreamFramer(max_size=4096)
    pos = 0
    try:
        for cut in cuts:
            for frame in framer.feed(data[pos : pos + cut]):
                check(frame)
            pos += cut
        for frame in framer.feed(data[pos:]):
            check(frame)
    except SipError as exc:
        assert exc.status is None


def test_pathological_inputs_are_fast() -> None:
    """No catastrophic backtracking: long runs of separators parse (or fail) quickly."""
    for filler in (b" " * 50000, b";" * 50000, b'"' * 50000, b"\r\n " * 20000, b"<" * 50000):
        check(INVITE.replace(b"Allow: CANCEL", b"Allow: CANCEL" + filler))
        check(INVITE.replace(b"From: ", b"From: " + filler))
        check(INVITE.replace(b"Via: ", b"Via: SIP/2.0/UDP" + filler))


# Structure-aware mutations (fuzz_targets.sip_messages): duplicated and oversized headers, deep
# Via stacks and lists, huge or malformed Content-Length, NULs, non-UTF-8, folding.
STRUCTURED = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


@STRUCTURED
@given(sip_messages())
def test_structure_aware_mutations(data: bytes) -> None:
    check_message(data)


@STRUCTURED
@given(sip_messages(), st.lists(st.integers(1, 512), min_size=1, max_size=10))
def test_structure_aware_mutations_on_a_stream(data: bytes, cuts: list[int]) -> None:
    check_stream(data, cuts)
