"""StreamFramer: Content-Length framing of a TCP byte stream."""

from __future__ import annotations

import pytest

from sipedge.sip.errors import SipError, SipLimitError
from sipedge.sip.framing import StreamFramer
from sipedge.sip.parser import parse_message


def msg(n: int, body: bytes = b"") -> bytes:
    head = (
        f"OPTIONS sip:u@example.com SIP/2.0\r\n"
        f"Via: SIP/2.0/TCP 192.0.2.1;branch=z9hG4bK{n}\r\n"
        f"To: <sip:u@example.com>\r\nFrom: <sip:c@example.com>;tag={n}\r\n"
        f"Call-ID: c{n}\r\nCSeq: {n} OPTIONS\r\nMax-Forwards: 70\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def test_coalesced_messages_come_out_separately() -> None:
    f = StreamFramer()
    data = msg(1, b"hello") + msg(2) + msg(3, b"x" * 10)
    out = f.feed(data)
    assert out == [msg(1, b"hello"), msg(2), msg(3, b"x" * 10)]
    assert [parse_message(m).call_id for m in out] == ["c1", "c2", "c3"]
    assert f.buffered == 0


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 50])
def test_split_messages_are_reassembled(chunk: int) -> None:
    f = StreamFramer()
    data = msg(1, b"body-one") + msg(2)
    out: list[bytes] = []
    for i in range(0, len(data), chunk):
        out.extend(f.feed(data[i : i + chunk]))
    assert out == [msg(1, b"body-one"), msg(2)]


def test_partial_body_waits() -> None:
    f = StreamFramer()
    whole = msg(1, b"0123456789")
    assert f.feed(whole[:-4]) == []
    assert f.feed(whole[-4:]) == [whole]


def test_crlf_keepalives_are_skipped_and_ping_sets_pong_due() -> None:
    f = StreamFramer()
    assert f.feed(b"\r\n\r\n") == []
    assert f.pong_due
    f.pong_due = False
    assert f.feed(b"\r\n" + msg(1) + b"\r\n" + msg(2)) == [msg(1), msg(2)]
    assert not f.pong_due


def test_compact_and_odd_case_content_length() -> None:
    f = StreamFramer()
    data = msg(1, b"abc").replace(b"Content-Length: 3", b"l : 3")
    assert f.feed(data) == [data]
    data = msg(2, b"abcd").replace(b"Content-Length: 4", b"CONTENT-LENGTH:4")
    assert f.feed(data) == [data]


@pytest.mark.parametrize(
    "bad",
    [
        msg(1).replace(b"Content-Length: 0\r\n", b""),  # mandatory on streams
        msg(1).replace(b"Content-Length: 0", b"Content-Length: -1"),
        msg(1).replace(b"Content-Length: 0", b"Content-Length: abc"),
        msg(1).replace(b"Content-Length: 0\r\n", b"Content-Length: 0\r\nl: 5\r\n"),
    ],
)
def test_unframeable_stream_raises_drop(bad: bytes) -> None:
    with pytest.raises(SipError) as info:
        StreamFramer().feed(bad)
    assert info.value.status is None


def test_request_over_cap_raises_513_with_its_header_block() -> None:
    f = StreamFramer(max_size=1024)
    data = msg(1, b"x" * 2000)
    with pytest.raises(SipLimitError) as info:
        f.feed(data[:600])  # the header block already announces 2000 bytes
    assert info.value.status == 513
    assert info.value.limit == "message_size"
    assert f.rejected_head == data[: data.index(b"\r\n\r\n") + 4]


def test_response_over_cap_raises_drop() -> None:
    f = StreamFramer(max_size=1024)
    response = b"SIP/2.0 200 OK\r\n" + msg(1, b"x" * 2000).split(b"\r\n", 1)[1]
    with pytest.raises(SipLimitError) as info:
        f.feed(response)
    assert info.value.status is None


def test_endless_header_block_over_cap_raises() -> None:
    f = StreamFramer(max_size=1024)
    f.feed(b"OPTIONS sip:u@example.com SIP/2.0\r\n")
    with pytest.raises(SipError):
        for _ in range(100):
            f.feed(b"X-Filler: " + b"a" * 30 + b"\r\n")


def test_byte_by_byte_large_header_is_linear() -> None:
    """The header-end search resumes where it stopped, so tiny chunks stay cheap."""
    f = StreamFramer()
    data = msg(1).replace(b"Max-Forwards: 70\r\n", b"X-Pad: " + b"p" * 20000 + b"\r\n")
    out: list[bytes] = []
    for i in range(len(data)):
        out.extend(f.feed(data[i : i + 1]))
    assert out == [data]
