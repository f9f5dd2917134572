"""Decision values and the Warning header."""

from __future__ import annotations

import pytest

from sipedge.edge.decisions import Accept, Drop, MetricReason, Reject, warning_header


@pytest.mark.parametrize(
    ("reason", "header"),
    [
        ("transport tcp required", '399 sipedge "transport tcp required"'),
        ("channel limit reached", '399 sipedge "channel limit reached"'),
        ('say "hi"\\', '399 sipedge "say \\"hi\\"\\\\"'),
        ("line\r\nX-Injected: 1", '399 sipedge "lineX-Injected: 1"'),
    ],
)
def test_warning_header(reason: str, header: str) -> None:
    assert warning_header(Reject(403, reason, MetricReason.TRANSPORT)) == header


def test_metric_reasons_are_a_closed_vocabulary() -> None:
    assert {m.value for m in MetricReason} == {
        "unknown_source",
        "transport",
        "no_number",
        "no_agent",
        "channels",
        "codecs",
        "malformed_sdp",
    }


def test_decisions_are_frozen_values() -> None:
    assert Accept("r") == Accept("r")
    assert Drop(MetricReason.UNKNOWN_SOURCE) == Drop(MetricReason.UNKNOWN_SOURCE)
    with pytest.raises(AttributeError):
        Reject(404, "number not found", MetricReason.NO_NUMBER).status = 200  # type: ignore[misc]
