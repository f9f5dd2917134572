"""Trunk numbers: validated with phonenumbers, stored as E.164 and as a digits-only key."""

from __future__ import annotations

import phonenumbers

_MAX_TEXT = 32
_SEPARATORS = str.maketrans("", "", " -.()\u00a0")


def normalise_e164(text: str) -> tuple[str, str]:
    """Return (`+<digits>`, `<digits>`) for a valid international number.

    A leading `+` is optional (`14155550123` is read as `+14155550123`), visual separators are
    ignored. Raises ValueError with a message that never repeats the input.
    """
    compact = text.strip().translate(_SEPARATORS)
    if not compact or len(compact) > _MAX_TEXT:
        raise ValueError("e164 must be a phone number in E.164 form, e.g. +14155550123")
    digits = compact[1:] if compact.startswith("+") else compact
    if not digits.isdigit() or not digits.isascii():
        raise ValueError("e164 must be a phone number in E.164 form, e.g. +14155550123")
    try:
        parsed = phonenumbers.parse("+" + digits, None)
    except phonenumbers.NumberParseException:
        raise ValueError("e164 must be a phone number in E.164 form, e.g. +14155550123") from None
    if not phonenumbers.is_valid_number(parsed):
        raise ValueError("e164 is not a valid phone number")
    e164 = phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)
    return e164, e164[1:]
