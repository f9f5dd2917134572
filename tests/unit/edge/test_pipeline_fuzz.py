"""Fuzz the whole pure inbound pipeline: random invites (random SDP bytes, numbers, sources,
call ids that repeat) against a snapshot of a few trunks. Only Accept/Reject/Drop comes out,
nothing raises, and the channel limiter holds exactly the accepted calls not released."""

from __future__ import annotations

from fuzz_targets import check_pipeline, inbound_invites
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sipedge.edge.inbound import InboundInvite


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(inbound_invites(), min_size=1, max_size=8),
    st.lists(st.booleans(), min_size=1, max_size=12),
)
def test_pipeline_never_raises_and_never_leaks(
    invites: list[InboundInvite], releases: list[bool]
) -> None:
    check_pipeline(invites, releases)
