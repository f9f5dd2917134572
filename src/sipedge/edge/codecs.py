"""Codec policy (SPEC §5 Inbound step 8): SDP restricted to the trunk's codecs, in its order.

The rewrite itself is ``sipedge.sip.sdp.filter_audio_codecs`` (telephone-event is kept at the clock
rate of a kept codec); this module turns its result into a decision. The same function applies the
policy to an answer, to a late offer (an INVITE without SDP: the policy applies to the SDP that
arrives later) and to re-INVITEs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sipedge.edge.decisions import MetricReason, Reject
from sipedge.sip.sdp import SdpError, SessionDescription, filter_audio_codecs, offer_fits

__all__ = ["FilteredSdp", "filter_sdp"]

NO_COMMON_CODEC = "no common codec"
MALFORMED_SDP = "malformed sdp"


@dataclass(frozen=True, slots=True)
class FilteredSdp:
    """``body`` is the rewritten SDP, or None for a late offer (``late_offer`` True): the runtime
    must then filter the SDP in the ACK or answer with ``filter_sdp`` as well."""

    body: bytes | None
    late_offer: bool = False


def filter_sdp(body: bytes | None, codecs: Sequence[str]) -> FilteredSdp | Reject:
    """Keep only ``codecs`` (trunk order) in the audio streams of ``body``.

    No body → ``FilteredSdp(None, late_offer=True)``; no common codec → 488 "no common codec";
    a body that is not SDP → 488 "malformed sdp" (RFC 3261 §21.4.26: the session description is
    not acceptable).
    """
    if not body or not body.strip():
        return FilteredSdp(None, late_offer=True)
    if offer_fits(body, codecs):
        return FilteredSdp(body)  # the everyday offer: checked without the parsed tree
    try:
        offer = SessionDescription.parse(body)
    except SdpError:
        return Reject(488, MALFORMED_SDP, MetricReason.MALFORMED_SDP)
    filtered = filter_audio_codecs(offer, codecs)
    if filtered is None:
        return Reject(488, NO_COMMON_CODEC, MetricReason.CODECS)
    # bytes(offer) == body exactly (SessionDescription round-trips), so an offer that already
    # fits is passed on as received, without serialising it again.
    return FilteredSdp(body if filtered is offer else bytes(filtered))
