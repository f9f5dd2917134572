"""Dialled-number normalisation and matching (SPEC §5 Inbound step 5).

The dialled number is the user part of the Request-URI (the To user as fallback), in ``sip:``,
``sips:`` or ``tel:`` form; parameters, %-escapes, visual separators (``-.()`` and spaces) and a
leading ``+`` or ``00`` are removed, leaving digits. It is matched exactly against the
``destination_key`` of the candidate trunks' numbers, else as a national-format number against their
national significant numbers (with or without the national prefix).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from sipedge.edge.snapshot import NumberView, RoutingSnapshot

__all__ = ["MAX_DIGITS", "dialled_candidates", "dialled_digits", "match_number"]

MAX_DIGITS = 20  # E.164 allows 15; room for a national prefix, never an unbounded string
_SCHEMES = ("sip", "sips", "tel")
_SEPARATORS = str.maketrans("", "", " -.()\t\u00a0")


def dialled_digits(user: str | None, scheme: str = "sip") -> str | None:
    """Digits of a dialled number, or None when ``user`` is not a phone number.

    >>> dialled_digits("+1 (415) 555-0123;phone-context=example.com", "tel")
    '14155550123'
    """
    if not user or scheme.lower() not in _SCHEMES:
        return None
    text = user
    head, sep, rest = text.partition(":")
    if sep and head.lower() in _SCHEMES:  # tolerate a whole URI handed in
        text = rest
    text = text.partition("@")[0].partition(";")[0]
    if "%" in text:
        text = unquote(text, errors="replace")
    text = text.translate(_SEPARATORS)
    if text.startswith("+"):
        text = text[1:]
    elif text.startswith("00"):
        text = text[2:]
    if not text or len(text) > MAX_DIGITS or not text.isascii() or not text.isdigit():
        return None
    return text


def dialled_candidates(
    request_uri_user: str | None, request_uri_scheme: str, to_user: str | None
) -> tuple[str, ...]:
    """The Request-URI's number, then the To user's if it differs (the fallback)."""
    first = dialled_digits(request_uri_user, request_uri_scheme)
    second = dialled_digits(to_user, "sip")
    if first is None:
        return () if second is None else (second,)
    return (first,) if second is None or second == first else (first, second)


def match_number(
    snapshot: RoutingSnapshot, digits: str, trunk_ids: Container[str]
) -> NumberView | None:
    """The live number dialled as ``digits`` on one of ``trunk_ids``.

    Exact ``destination_key`` first; then national forms, which must point at exactly one number of
    those trunks (an ambiguous national number matches nothing rather than a guess).
    """
    exact = snapshot.numbers_by_key.get(digits)
    if exact is not None and exact.trunk_id in trunk_ids:
        return exact
    national = snapshot.numbers_by_national.get(digits)
    if not national:
        return None
    hits = _on_trunks(national, trunk_ids)
    return hits[0] if len(hits) == 1 else None


def _on_trunks(numbers: Iterable[NumberView], trunk_ids: Container[str]) -> list[NumberView]:
    return [n for n in numbers if n.trunk_id in trunk_ids]
