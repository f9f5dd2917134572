"""``offer_fits``: the text-level shortcut must agree with the full parse-and-filter path."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sipedge.edge.codecs import FilteredSdp, filter_sdp
from sipedge.sip.sdp import SdpError, SessionDescription, filter_audio_codecs, offer_fits

RTPMAPS = {
    "0": "PCMU/8000",
    "8": "PCMA/8000",
    "9": "G722/8000",
    "18": "G729/8000",
    "96": "opus/48000/2",
    "101": "telephone-event/8000",
    "102": "telephone-event/48000",
}
TRUNK = ["PCMU", "PCMA"]


def offer(
    formats: list[str],
    *,
    media: str = "audio",
    port: str = "49170",
    proto: str = "RTP/AVP",
    maps: bool = True,
    second: bool = False,
    eol: str = "\r\n",
    version: str = "0",
) -> bytes:
    lines = [
        f"v={version}",
        "o=c 1 1 IN IP4 192.0.2.1",
        "s=-",
        "c=IN IP4 192.0.2.1",
        "t=0 0",
        f"m={media} {port} {proto} {' '.join(formats)}",
    ]
    if maps:
        lines += [f"a=rtpmap:{f} {RTPMAPS[f]}" for f in formats if f in RTPMAPS]
    lines.append("a=sendrecv")
    if second:
        lines += ["m=video 5000 RTP/AVP 31"]
    return "".join(line + eol for line in lines).encode()  # fmt: skip


def full_path_unchanged(body: bytes, codecs: list[str]) -> bool:
    try:
        parsed = SessionDescription.parse(body)
    except SdpError:
        return False
    return filter_audio_codecs(parsed, codecs) is parsed


def test_the_everyday_offer_fits_and_is_passed_on_as_received() -> None:
    body = offer(["0", "8", "101"])
    assert offer_fits(body, TRUNK)
    result = filter_sdp(body, TRUNK)
    assert isinstance(result, FilteredSdp) and result.body is body


def test_an_offer_in_another_order_or_with_extra_codecs_does_not_fit() -> None:
    assert not offer_fits(offer(["8", "0", "101"]), TRUNK)  # trunk order differs
    assert not offer_fits(offer(["0", "8", "18"]), TRUNK)  # G729 must go
    assert not offer_fits(offer(["0", "8", "102"]), TRUNK)  # DTMF at a rate no codec has
    result = filter_sdp(offer(["0", "8", "18"]), TRUNK)
    assert isinstance(result, FilteredSdp) and result.body is not None
    assert b" 18" not in result.body.split(b"\r\n")[5]


def test_shapes_left_to_the_full_path() -> None:
    assert not offer_fits(offer(["0", "8"], second=True), TRUNK)
    assert not offer_fits(offer(["0", "8"], port="0"), TRUNK)
    assert not offer_fits(offer(["0", "8"], port="49170/2"), TRUNK)
    assert not offer_fits(offer(["0", "8"], proto="UDP/TLS/RTP/SAVP".replace("RTP/", "X/")), TRUNK)
    assert not offer_fits(offer(["0", "8"], media="video"), TRUNK)
    assert not offer_fits(offer(["0", "8"], version="1"), TRUNK)
    assert not offer_fits(b"v=0\r\nnot an sdp line\r\n", TRUNK)
    assert not offer_fits("v=0\r\ns=\u00e9\r\n".encode(), TRUNK)


@settings(max_examples=400, deadline=None)
@given(
    formats=st.lists(st.sampled_from([*RTPMAPS, "3", "97", "x"]), min_size=1, max_size=6),
    codecs=st.lists(st.sampled_from(["PCMU", "PCMA", "G722", "opus", "G729/8000"]), max_size=3),
    media=st.sampled_from(["audio", "AUDIO", "video"]),
    port=st.sampled_from(["49170", "0", "70000", "49170/2"]),
    maps=st.booleans(),
    second=st.booleans(),
    eol=st.sampled_from(["\r\n", "\n"]),
)
def test_fits_only_when_the_full_path_returns_the_offer_unchanged(
    formats: list[str], codecs: list[str], media: str, port: str, maps: bool, second: bool,
    eol: str,
) -> None:  # fmt: skip
    body = offer(formats, media=media, port=port, maps=maps, second=second, eol=eol)
    if offer_fits(body, codecs):
        assert full_path_unchanged(body, codecs)
    if not second and media != "video" and port == "49170" and full_path_unchanged(body, codecs):
        assert offer_fits(body, codecs)  # and the everyday shapes do take the shortcut
