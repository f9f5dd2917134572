"""Calling guardrails (seed "Agents": `calling_guardrails`; SPEC §5 Outbound), as pure functions.

An outbound call may start while the recipient's local hour ``h`` satisfies
``call_start_hour <= h <= call_end_hour`` (both ends inclusive: 9..17 allows 09:00-17:59, and
9..9 allows 09:00-09:59). Outside it the call is rescheduled to the next local
``call_start_hour``:00. The recipient's timezone comes from phonenumbers' timezone data; when a
number maps to several zones the first one phonenumbers lists is used (its order is fixed by the
data), and a number without a known zone falls back to UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import phonenumbers
from phonenumbers import timezone as phone_timezones

__all__ = ["next_allowed_start", "recipient_timezone"]

_UNKNOWN = "Etc/Unknown"


def recipient_timezone(e164: str) -> tzinfo:
    """The recipient's timezone from its number (UTC when unknown or unparseable)."""
    try:
        parsed = phonenumbers.parse(e164 if e164.startswith("+") else f"+{e164}", None)
    except phonenumbers.NumberParseException:
        return UTC
    zones = [z for z in phone_timezones.time_zones_for_number(parsed) if z != _UNKNOWN]
    if not zones:
        return UTC
    try:
        return ZoneInfo(zones[0])
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def next_allowed_start(
    now: datetime, zone: tzinfo, start_hour: int | None, end_hour: int | None
) -> datetime | None:
    """None when a call may start at ``now`` (aware); else the next allowed start, in UTC.

    No guardrails (either hour None) means always allowed.
    """
    if start_hour is None or end_hour is None:
        return None
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    local = now.astimezone(zone)
    if start_hour <= local.hour <= end_hour:
        return None
    day = local.date() if local.hour < start_hour else local.date() + timedelta(days=1)
    start = datetime(day.year, day.month, day.day, start_hour, tzinfo=zone)
    # A start hour skipped by a DST jump maps forward through UTC (zoneinfo fold rules).
    return start.astimezone(UTC)
