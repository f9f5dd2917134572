"""Calling guardrails: the next allowed start in the recipient's timezone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from sipedge.store.guardrails import next_allowed_start, recipient_timezone

NY = ZoneInfo("America/New_York")
SYDNEY = ZoneInfo("Australia/Sydney")


def test_recipient_timezones_from_the_number() -> None:
    assert recipient_timezone("+14155550100") == ZoneInfo("America/Los_Angeles")
    assert recipient_timezone("+61212345678") == SYDNEY
    assert recipient_timezone("442071234567") == ZoneInfo("Europe/London")
    assert recipient_timezone("+999") == UTC  # unparseable
    assert recipient_timezone("+80012345678") == UTC  # no zone known


@pytest.mark.parametrize(
    ("now", "zone", "hours", "expected"),
    [
        # inside the window (both ends inclusive)
        (datetime(2026, 3, 2, 14, 0, tzinfo=UTC), NY, (9, 17), None),  # 09:00 NY
        (datetime(2026, 3, 2, 22, 59, tzinfo=UTC), NY, (9, 17), None),  # 17:59 NY
        # before the start: today at start
        (
            datetime(2026, 3, 2, 12, 0, tzinfo=UTC),
            NY,
            (9, 17),
            datetime(2026, 3, 2, 14, tzinfo=UTC),
        ),
        # after the end: tomorrow at start
        (
            datetime(2026, 3, 2, 23, 0, tzinfo=UTC),
            NY,
            (9, 17),
            datetime(2026, 3, 3, 14, tzinfo=UTC),
        ),
        # across a DST change (NY springs forward on 2026-03-08): 09:00 EDT is 13:00 UTC
        (datetime(2026, 3, 8, 2, 0, tzinfo=UTC), NY, (9, 17), datetime(2026, 3, 8, 13, tzinfo=UTC)),
        # Sydney is ahead of UTC: 2026-06-01 20:00 UTC is 06:00 on the 2nd in Sydney (AEST +10)
        (
            datetime(2026, 6, 1, 20, 0, tzinfo=UTC),
            SYDNEY,
            (8, 20),
            datetime(2026, 6, 1, 22, tzinfo=UTC),
        ),
        # a one-hour window
        (
            datetime(2026, 3, 2, 15, 30, tzinfo=UTC),
            NY,
            (9, 9),
            datetime(2026, 3, 3, 14, tzinfo=UTC),
        ),
        # no guardrails
        (datetime(2026, 3, 2, 3, 0, tzinfo=UTC), NY, (None, None), None),
    ],
)
def test_next_allowed_start(now, zone, hours, expected) -> None:
    assert next_allowed_start(now, zone, *hours) == expected


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError):
        next_allowed_start(datetime(2026, 1, 1), UTC, 9, 17)
