"""SDP model and codec filter (RFC 4566, RFC 3264, RFC 3551, RFC 4733)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sipedge.sip.errors import SipError
from sipedge.sip.sdp import (
    SdpError,
    SessionDescription,
    build_offer,
    filter_audio_codecs,
)


def sdp(*lines: str, eol: str = "\r\n") -> bytes:
    return "".join(line + eol for line in lines).encode()


HEAD = (
    "v=0",
    "o=carrier 2890844526 2890842807 IN IP4 192.0.2.10",
    "s=-",
    "c=IN IP4 192.0.2.10",
    "t=0 0",
)

# A carrier offer in the wild: several codecs, two DTMF rates, extra attributes we never touch.
OFFER = sdp(
    *HEAD,
    "a=X-vendor:opaque  value",
    "m=audio 49170 RTP/AVP 9 18 0 8 96 101 102",
    "a=rtpmap:9 G722/8000",
    "a=rtpmap:18 G729/8000",
    "a=fmtp:18 annexb=no",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:96 opus/48000/2",
    "a=fmtp:96 useinbandfec=1",
    "a=rtcp-fb:96 nack",
    "a=rtcp-fb:* trr-int 100",
    "a=rtpmap:101 telephone-event/8000",
    "a=fmtp:101 0-16",
    "a=rtpmap:102 telephone-event/48000",
    "a=ptime:20",
    "a=sendrecv",
    "a=unknown-thing",
)


def audio_formats(sd: SessionDescription) -> tuple[str, ...]:
    assert sd.audio is not None
    return sd.audio.formats


# ---------------------------------------------------------------------------------------------
# Parsing and round trip


@pytest.mark.parametrize(
    "body",
    [
        OFFER,
        sdp(*HEAD, "m=audio 4000 RTP/AVP 0", eol="\n"),  # bare LF
        sdp(*HEAD, "m=audio 4000 RTP/AVP 0")[:-2],  # last line without terminator
        sdp(*HEAD, "m=audio 4000 RTP/AVP 0") + b"\r\n",  # trailing blank line
        b"v=0\r\no=- 1 1 IN IP4 h\ns=mixed\r\nt=0 0\nm=audio 1 RTP/AVP 0\r\n",  # mixed endings
        sdp(*HEAD, "s=caf\xe9".encode("latin-1").decode("latin-1"), "m=audio 4000 RTP/AVP 0"),
        sdp(*HEAD[:2]) + b"s=\xff\xfe not utf-8\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n",
        sdp(*HEAD, "m=audio 4000 RTP/AVP 0", "m=video 5000 RTP/AVP 31", "a=rtpmap:31 H261/90000"),
        sdp(*HEAD),  # no media at all is still a parseable description
    ],
)
def test_round_trip_is_byte_identical(body: bytes) -> None:
    assert bytes(SessionDescription.parse(body)) == body


def test_parse_reads_the_audio_m_line_and_attributes() -> None:
    sd = SessionDescription.parse(OFFER)
    audio = sd.audio
    assert audio is not None
    assert (audio.media, audio.port, audio.port_count, audio.proto) == (
        "audio",
        49170,
        None,
        "RTP/AVP",
    )
    assert audio.formats == ("9", "18", "0", "8", "96", "101", "102")
    maps = audio.rtpmaps()
    assert (maps[96].encoding, maps[96].clock_rate, maps[96].channels) == ("opus", 48000, "2")
    assert audio.attributes("fmtp") == ["18 annexb=no", "96 useinbandfec=1", "101 0-16"]
    assert audio.fmtps() == {18: "annexb=no", 96: "useinbandfec=1", 101: "0-16"}
    assert audio.attributes("ptime") == ["20"]
    assert audio.attributes("sendrecv") == [""]
    # PT 8 has no rtpmap: the static table names it.
    assert audio.codecs()["8"] == ("PCMA", 8000)
    assert len(sd.session_lines) == 6


def test_multiple_media_sections_and_port_count() -> None:
    sd = SessionDescription.parse(
        sdp(*HEAD, "m=audio 4000/2 RTP/AVP 0", "a=sendonly", "m=video 0 RTP/AVP 31")
    )
    assert [(m.media, m.port, m.port_count) for m in sd.media] == [
        ("audio", 4000, 2),
        ("video", 0, None),
    ]
    assert sd.media[0].attributes("sendonly") == [""]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\r\n",
        b"o=- 1 1 IN IP4 h\r\nv=0\r\n",  # v= must come first
        b"v=1\r\n",
        b"v=0\r\nthis is not sdp\r\n",
        b"v=0\r\n=novalue\r\n",
        b"v=0\r\nx =1\r\n",
        b"v=0\r\nm=audio\r\n",
        b"v=0\r\nm=audio 4000 RTP/AVP\r\n",  # no format
        b"v=0\r\nm=audio port RTP/AVP 0\r\n",
        b"v=0\r\nm=audio 70000 RTP/AVP 0\r\n",
        b"v=0\r\nm=audio 4000/x RTP/AVP 0\r\n",
        b"v=0\r\nm=audio -1 RTP/AVP 0\r\n",
        "v=0\r\nm=audio \u00b2 RTP/AVP 0\r\n".encode(),  # a Unicode digit int() rejects
        b"v=0\r\nm=audio " + b"9" * 5000 + b" RTP/AVP 0\r\n",  # beyond int()'s digit limit
        b"v=0\r\nm=audio 4000/ RTP/AVP 0\r\n",
        b"\x00\x01\x02",
    ],
)
def test_malformed_sdp_raises_typed_error(body: bytes) -> None:
    with pytest.raises(SdpError) as info:
        SessionDescription.parse(body)
    # The transport catches SipError; the status says what to answer; the reason never echoes input.
    assert isinstance(info.value, SipError)
    assert isinstance(info.value, ValueError)
    assert info.value.status == 400


def test_error_reason_never_echoes_the_body() -> None:
    with pytest.raises(SdpError) as info:
        SessionDescription.parse(b"v=0\r\n<script>secret-marker</script>\r\n")
    assert "marker" not in info.value.reason and "marker" not in str(info.value)


# ---------------------------------------------------------------------------------------------
# Codec filter

FILTER_CASES = [
    # trunk codecs, expected audio formats (trunk order wins over the offer's)
    (["PCMU", "PCMA"], ("0", "8", "101")),
    (["PCMA", "PCMU"], ("8", "0", "101")),
    (["pcma"], ("8", "101")),  # case-insensitive
    (["G729", "PCMU"], ("18", "0", "101")),
    (["opus", "PCMU"], ("96", "0", "101", "102")),  # DTMF at each kept clock rate
    (["opus"], ("96", "102")),  # telephone-event/8000 dropped: no 8 kHz codec kept
    (["opus/48000"], ("96", "102")),
    (["opus/16000"], None),
    (["PCMU", "telephone-event"], ("0", "101")),  # named DTMF is not a codec nor duplicated
    (["PCMU", "PCMU"], ("0", "101")),
    (["G711"], None),
    (["telephone-event"], None),  # DTMF alone is no common codec
    ([], None),
]


@pytest.mark.parametrize(("codecs", "expected"), FILTER_CASES)
def test_filter_orders_by_trunk_and_keeps_telephone_event(
    codecs: list[str], expected: tuple[str, ...] | None
) -> None:
    result = filter_audio_codecs(SessionDescription.parse(OFFER), codecs)
    if expected is None:
        assert result is None
    else:
        assert result is not None
        assert audio_formats(result) == expected


def test_filter_drops_only_removed_payload_lines_and_keeps_the_rest_byte_identical() -> None:
    result = filter_audio_codecs(SessionDescription.parse(OFFER), ["PCMA", "PCMU"])
    assert result is not None
    assert bytes(result) == sdp(
        *HEAD,
        "a=X-vendor:opaque  value",
        "m=audio 49170 RTP/AVP 8 0 101",
        "a=rtpmap:0 PCMU/8000",
        "a=rtcp-fb:* trr-int 100",
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:101 0-16",
        "a=ptime:20",
        "a=sendrecv",
        "a=unknown-thing",
    )


def test_filter_recognises_static_pt_by_rtpmap_name_on_a_dynamic_number() -> None:
    body = sdp(*HEAD, "m=audio 4000 RTP/AVP 97 98", "a=rtpmap:97 pcma/8000", "a=rtpmap:98 X/8000")
    result = filter_audio_codecs(SessionDescription.parse(body), ["PCMA"])
    assert result is not None
    assert bytes(result) == sdp(*HEAD, "m=audio 4000 RTP/AVP 97", "a=rtpmap:97 pcma/8000")


def test_filter_ignores_dynamic_pt_without_rtpmap() -> None:
    body = sdp(*HEAD, "m=audio 4000 RTP/AVP 97")
    assert filter_audio_codecs(SessionDescription.parse(body), ["PCMU"]) is None


def test_filter_keeps_bare_lf_line_endings() -> None:
    body = sdp(*HEAD, "m=audio 4000 RTP/AVP 8 0", "a=rtpmap:8 PCMA/8000", eol="\n")
    result = filter_audio_codecs(SessionDescription.parse(body), ["PCMU"])
    assert result is not None
    assert bytes(result) == sdp(*HEAD, "m=audio 4000 RTP/AVP 0", eol="\n")


def test_filter_leaves_video_and_rejected_audio_untouched() -> None:
    body = sdp(
        *HEAD,
        "m=audio 0 RTP/AVP 18",
        "m=audio 4000 RTP/AVP 18 0",
        "m=video 5000 RTP/AVP 96 0",
        "a=rtpmap:96 H264/90000",
    )
    result = filter_audio_codecs(SessionDescription.parse(body), ["PCMU"])
    assert result is not None
    assert bytes(result) == sdp(
        *HEAD,
        "m=audio 0 RTP/AVP 18",
        "m=audio 4000 RTP/AVP 0",
        "m=video 5000 RTP/AVP 96 0",
        "a=rtpmap:96 H264/90000",
    )


def test_filter_rejects_second_audio_stream_without_common_codec_with_port_zero() -> None:
    body = sdp(*HEAD, "m=audio 4000 RTP/AVP 0", "m=audio 4002 RTP/AVP 18", "a=ptime:30")
    result = filter_audio_codecs(SessionDescription.parse(body), ["PCMU"])
    assert result is not None
    assert [(m.port, m.formats) for m in result.media] == [(4000, ("0",)), (0, ("18",))]
    assert bytes(result).endswith(b"m=audio 0 RTP/AVP 18\r\na=ptime:30\r\n")


@pytest.mark.parametrize(
    "body",
    [
        sdp(*HEAD, "m=audio 0 RTP/AVP 0"),  # only a rejected audio stream
        sdp(*HEAD, "m=video 5000 RTP/AVP 31"),  # no audio at all
        sdp(*HEAD),
        sdp(*HEAD, "m=audio 4000 RTP/AVP 18 101", "a=rtpmap:101 telephone-event/8000"),
    ],
)
def test_filter_returns_none_without_usable_audio(body: bytes) -> None:
    assert filter_audio_codecs(SessionDescription.parse(body), ["PCMU", "PCMA"]) is None


def test_filter_does_not_mutate_its_input() -> None:
    sd = SessionDescription.parse(OFFER)
    filter_audio_codecs(sd, ["PCMU"])
    assert bytes(sd) == OFFER


# ---------------------------------------------------------------------------------------------
# Outbound offer


def test_build_offer_exact_bytes() -> None:
    sd = build_offer("203.0.113.5", "203.0.113.6", 30000, ["PCMA", "PCMU"], 42, 7)
    assert bytes(sd) == sdp(
        "v=0",
        "o=sipedge 42 7 IN IP4 203.0.113.5",
        "s=sipedge",
        "c=IN IP4 203.0.113.6",
        "t=0 0",
        "m=audio 30000 RTP/AVP 8 0 101",
        "a=rtpmap:8 PCMA/8000",
        "a=rtpmap:0 PCMU/8000",
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:101 0-16",
        "a=ptime:20",
        "a=sendrecv",
    )


def test_build_offer_ipv6_and_no_dtmf() -> None:
    sd = build_offer("2001:db8::1", "2001:db8::2", 4000, ["g722"], 1, 2, telephone_event_pt=None)
    text = bytes(sd).decode()
    assert "o=sipedge 1 2 IN IP6 2001:db8::1\r\n" in text
    assert "c=IN IP6 2001:db8::2\r\n" in text
    assert "m=audio 4000 RTP/AVP 9\r\n" in text
    assert "telephone-event" not in text


def test_build_offer_then_filter_round_trips() -> None:
    offer = build_offer("h", "h", 4000, ["PCMU", "PCMA"], 1, 1)
    again = filter_audio_codecs(SessionDescription.parse(bytes(offer)), ["PCMU", "PCMA"])
    assert again is not None and bytes(again) == bytes(offer)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"codecs": ["opus"]},
        {"codecs": []},
        {"port": 0},
        {"port": 70000},
        {"telephone_event_pt": 8},
        {"origin_addr": "bad addr"},
        {"media_addr": ""},
        {"session_id": -1},
    ],
)
def test_build_offer_rejects_bad_arguments(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {
        "origin_addr": "h",
        "media_addr": "h",
        "port": 4000,
        "codecs": ["PCMU"],
        "session_id": 1,
        "version": 1,
    }
    args.update(kwargs)
    with pytest.raises(SdpError) as info:
        build_offer(**args)  # type: ignore[arg-type]
    assert info.value.status is None


def test_filter_leaves_non_rtp_audio_untouched() -> None:
    # Only RTP payload types are codecs; a non-RTP "audio" transport has formats of its own.
    body = sdp(*HEAD, "m=audio 4000 RTP/AVP 0 8", "m=audio 4002 udp 8 0")
    result = filter_audio_codecs(SessionDescription.parse(body), ["PCMU"])
    assert result is not None
    assert bytes(result) == sdp(*HEAD, "m=audio 4000 RTP/AVP 0", "m=audio 4002 udp 8 0")


def test_odd_payload_numbers_are_ignored_not_fatal() -> None:
    body = sdp(
        *HEAD,
        "m=audio 4000 RTP/AVP 0 \u00b2 " + "1" * 5000,
        "a=rtpmap:\u00b2 PCMU/8000",
        "a=rtpmap:0 PCMU/\u00b2",
        "a=fmtp:" + "1" * 5000 + " x",
    )
    sd = SessionDescription.parse(body)
    assert sd.audio is not None and sd.audio.rtpmaps() == {} and sd.audio.fmtps() == {}
    result = filter_audio_codecs(sd, ["PCMU", "PCMU/\u00b2"])
    assert result is not None and audio_formats(result) == ("0",)


_SDP_LINES = st.sampled_from(
    [
        "v=0",
        "o=- 1 1 IN IP4 h",
        "c=IN IP4 h",
        "m=audio 4000 RTP/AVP 0 8 101",
        "m=audio 0 RTP/AVP 18",
        "m=video 5000 RTP/AVP 96",
        "a=rtpmap:101 telephone-event/8000",
        "a=rtpmap:8 PCMA/8000",
        "a=fmtp:101 0-16",
        "a=rtpmap:96 x",
        "a=sendrecv",
    ]
)


@given(
    st.lists(st.one_of(_SDP_LINES, st.text(max_size=30)), max_size=12),
    st.sampled_from(["\r\n", "\n"]),
)
def test_parser_and_filter_never_crash_and_round_trip(lines: list[str], eol: str) -> None:
    body = ("v=0" + eol + eol.join(lines)).encode("utf-8", "surrogatepass")
    with contextlib.suppress(SdpError):
        sd = SessionDescription.parse(body)
        assert bytes(sd) == body
        filtered = filter_audio_codecs(sd, ["PCMA", "PCMU"])
        if filtered is not None:
            assert bytes(SessionDescription.parse(bytes(filtered))) == bytes(filtered)
