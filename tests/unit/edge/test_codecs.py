"""Codec policy (SPEC §5 Inbound step 8): trunk codecs only, in the trunk's order."""

from __future__ import annotations

import pytest
from edge_factories import audio_formats, offer

from sipedge.edge.codecs import FilteredSdp, filter_sdp
from sipedge.edge.decisions import MetricReason, Reject


@pytest.mark.parametrize(
    ("offered", "trunk_codecs", "kept"),
    [
        (("0", "8", "101"), ("PCMU", "PCMA"), ["0", "8", "101"]),
        (("0", "8", "101"), ("PCMA", "PCMU"), ["8", "0", "101"]),  # the trunk's order wins
        (("8", "0"), ("PCMU", "PCMA"), ["0", "8"]),
        (("9", "18", "8", "0", "101"), ("PCMU",), ["0", "101"]),  # others dropped, DTMF kept
        (("18", "8"), ("PCMU", "PCMA"), ["8"]),  # no telephone-event offered: none added
    ],
)
def test_offer_filtered_to_trunk_codecs_in_trunk_order(
    offered: tuple[str, ...], trunk_codecs: tuple[str, ...], kept: list[str]
) -> None:
    result = filter_sdp(offer(*offered), trunk_codecs)
    assert isinstance(result, FilteredSdp) and result.body is not None
    assert audio_formats(result.body) == kept
    assert not result.late_offer
    dropped = set(offered) - set(kept)
    assert not any(f"a=rtpmap:{pt} " in result.body.decode() for pt in dropped)


@pytest.mark.parametrize(
    ("body", "status", "reason", "metric"),
    [
        (offer("18", "101"), 488, "no common codec", MetricReason.CODECS),
        (offer("9"), 488, "no common codec", MetricReason.CODECS),
        (b"this is not sdp\r\n", 488, "malformed sdp", MetricReason.MALFORMED_SDP),
    ],
)
def test_refusals(body: bytes, status: int, reason: str, metric: MetricReason) -> None:
    assert filter_sdp(body, ("PCMU", "PCMA")) == Reject(status, reason, metric)


@pytest.mark.parametrize("body", [None, b"", b"\r\n"])
def test_late_offer_is_accepted_and_flagged(body: bytes | None) -> None:
    assert filter_sdp(body, ("PCMU",)) == FilteredSdp(None, late_offer=True)


def test_answer_to_a_late_offer_uses_the_same_policy() -> None:
    answer = filter_sdp(offer("8", "0", "101"), ("PCMU",))
    assert isinstance(answer, FilteredSdp) and answer.body is not None
    assert audio_formats(answer.body) == ["0", "101"]
