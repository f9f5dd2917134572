"""Hard limits in the parser and the framer: each over-limit message raises SipLimitError with
the status the RFC gives (513 message, 413 body, 400 shape; None = drop for responses)."""

from __future__ import annotations

import pytest
from test_parser import INVITE, RESPONSE

from sipedge.config import SipSettings
from sipedge.metrics import SipLimit
from sipedge.sip.errors import SipLimitError
from sipedge.sip.limits import DEFAULT_LIMITS, LimitKind, Limits
from sipedge.sip.parser import error_response, parse_message

SMALL = Limits(
    max_message_bytes=4096,
    max_headers=20,
    max_header_line_length=300,
    max_via_depth=5,
    max_body_bytes=500,
)


def add_headers(message: bytes, lines: list[bytes]) -> bytes:
    start, rest = message.split(b"\r\n", 1)
    return start + b"\r\n" + b"".join(line + b"\r\n" for line in lines) + rest


def vias(n: int) -> list[bytes]:
    return [f"Via: SIP/2.0/UDP 192.0.2.{i};branch=z9hG4bK{i}".encode() for i in range(n)]


def with_body(message: bytes, body: bytes) -> bytes:
    head = message.split(b"\r\n\r\n", 1)[0]
    lines = [ln for ln in head.split(b"\r\n") if not ln.lower().startswith(b"content-length")]
    return b"\r\n".join(lines) + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def limit_error(data: bytes, limits: Limits = SMALL) -> SipLimitError:
    with pytest.raises(SipLimitError) as info:
        parse_message(data, limits)
    return info.value


def test_the_seeds_pass_the_small_limits() -> None:
    parse_message(INVITE, SMALL)
    parse_message(RESPONSE, SMALL)


def test_message_over_the_size_limit_is_513_for_a_request() -> None:
    data = add_headers(INVITE, [b"X-Pad: " + b"a" * 250] * 15)
    assert len(data) > 4096
    err = limit_error(data)
    assert (err.status, err.limit) == (513, LimitKind.MESSAGE_SIZE)
    answer = error_response(data, err)
    assert answer is not None and answer.status == 513 and answer.reason == "Message Too Large"


def test_response_over_the_size_limit_is_dropped() -> None:
    err = limit_error(add_headers(RESPONSE, [b"X-Pad: " + b"a" * 250] * 17))
    assert (err.status, err.limit) == (None, LimitKind.MESSAGE_SIZE)


def test_too_many_headers() -> None:
    data = add_headers(INVITE, [b"X-H: 1"] * 20)
    err = limit_error(data)
    assert (err.status, err.limit) == (400, LimitKind.HEADER_COUNT)
    assert limit_error(add_headers(RESPONSE, [b"X-H: 1"] * 20)).status is None


def test_exactly_the_header_limit_passes() -> None:
    count = len(INVITE.split(b"\r\n\r\n")[0].split(b"\r\n")) - 1
    parse_message(INVITE, Limits(max_headers=count))
    with pytest.raises(SipLimitError):
        parse_message(INVITE, Limits(max_headers=count - 1))


def test_header_line_too_long() -> None:
    err = limit_error(add_headers(INVITE, [b"Subject: " + b"s" * 300]))
    assert (err.status, err.limit) == (400, LimitKind.HEADER_LENGTH)
    parse_message(add_headers(INVITE, [b"Subject: " + b"s" * 291]), SMALL)  # 300 exactly


def test_long_folded_header_counts_after_unfolding() -> None:
    folded = b"Subject: " + b"\r\n ".join([b"s" * 100] * 4)
    assert limit_error(add_headers(INVITE, [folded])).limit == LimitKind.HEADER_LENGTH


def test_via_depth_counts_lines() -> None:
    own = len(parse_message(INVITE).headers.get_all("Via"))
    err = limit_error(add_headers(INVITE, vias(6 - own)))
    assert (err.status, err.limit) == (400, LimitKind.VIA_DEPTH)
    parse_message(add_headers(INVITE, vias(5 - own)), SMALL)


def test_via_depth_counts_comma_separated_values() -> None:
    one_line = b"Via: " + b", ".join(
        f"SIP/2.0/UDP h{i};branch=z9hG4bK{i}".encode() for i in range(5)
    )
    assert limit_error(add_headers(INVITE, [one_line])).limit == LimitKind.VIA_DEPTH


def test_commas_elsewhere_do_not_count_as_vias() -> None:
    allow = b"Allow: " + b", ".join([b"INVITE"] * 30)
    parse_message(add_headers(INVITE, [allow]), SMALL)


def test_via_depth_drops_a_response() -> None:
    assert limit_error(add_headers(RESPONSE, vias(5))).status is None


def test_body_over_the_limit_is_413() -> None:
    data = with_body(INVITE, b"v=0\r\n" + b"a=x\r\n" * 120)
    err = limit_error(data)
    assert (err.status, err.limit) == (413, LimitKind.BODY_SIZE)
    answer = error_response(data, err)
    assert answer is not None and answer.status == 413


def test_huge_content_length_is_413_before_anything_is_read() -> None:
    data = with_body(INVITE, b"").replace(b"Content-Length: 0", b"Content-Length: 9999999999")
    assert limit_error(data, DEFAULT_LIMITS).status == 413


def test_body_without_content_length_is_capped_too() -> None:
    data = with_body(INVITE, b"x" * 600).replace(b"Content-Length: 600\r\n", b"")
    assert limit_error(data).limit == LimitKind.BODY_SIZE


def test_body_limit_on_a_response_drops() -> None:
    assert limit_error(with_body(RESPONSE, b"x" * 600)).status is None


def test_default_limits_match_the_settings_defaults() -> None:
    assert SipSettings().limits() == DEFAULT_LIMITS


def test_every_limit_kind_has_a_metric_label() -> None:
    assert {k.value for k in LimitKind} <= {m.value for m in SipLimit}
