"""Dialled-number normalisation and matching (SPEC §5 Inbound step 5)."""

from __future__ import annotations

import pytest
from edge_factories import UK_NUMBER, US_NUMBER, agent, number, snap, trunk

from sipedge.edge.numbers import dialled_candidates, dialled_digits, match_number


@pytest.mark.parametrize(
    ("user", "scheme", "expected"),
    [
        ("+14155550123", "sip", US_NUMBER),
        ("14155550123", "sip", US_NUMBER),
        ("0014155550123", "sip", US_NUMBER),  # international prefix 00
        ("+1-415-555-0123", "sip", US_NUMBER),
        ("+1 (415) 555.0123", "sip", US_NUMBER),
        ("+1-415-555-0123;phone-context=example.com", "tel", US_NUMBER),
        ("+14155550123", "TEL", US_NUMBER),
        ("+14155550123;npdi;rn=123", "sips", US_NUMBER),
        ("%2B14155550123", "sip", US_NUMBER),
        ("tel:+1-415-555-0123", "tel", US_NUMBER),  # a whole URI handed in
        ("sip:+14155550123@carrier.example", "sip", US_NUMBER),
        ("02079460958", "sip", "02079460958"),  # national format stays as dialled
        ("+44 20 7946 0958", "sip", UK_NUMBER),
        ("alice", "sip", None),
        ("", "sip", None),
        (None, "sip", None),
        ("+", "sip", None),
        ("00", "sip", None),
        ("*69#", "sip", None),
        ("+14155550123", "http", None),
        ("1" * 21, "sip", None),
        ("١٤١٥٥٥٥٠١٢٣", "sip", None),  # non-ASCII digits
    ],
)
def test_dialled_digits(user: str | None, scheme: str, expected: str | None) -> None:
    assert dialled_digits(user, scheme) == expected


@pytest.mark.parametrize(
    ("ruri", "to", "expected"),
    [
        ("+14155550123", "+14155550199", (US_NUMBER, "14155550199")),
        ("+14155550123", "14155550123", (US_NUMBER,)),
        (None, "+14155550123", (US_NUMBER,)),  # To as fallback
        ("trunkgroup", "+14155550123", (US_NUMBER,)),
        (None, None, ()),
    ],
)
def test_dialled_candidates(ruri: str | None, to: str | None, expected: tuple[str, ...]) -> None:
    assert dialled_candidates(ruri, "sip", to) == expected


@pytest.fixture
def two_trunks():  # type: ignore[no-untyped-def]
    return snap(
        [trunk("t1"), trunk("t2", cidrs=("198.51.100.0/24",))],
        [
            number("us", "t1", US_NUMBER),
            number("uk", "t1", UK_NUMBER),
            number("other", "t2", "14155550199"),
        ],
        [agent()],
    )


@pytest.mark.parametrize(
    ("digits", "trunks", "expected"),
    [
        (US_NUMBER, {"t1"}, "us"),
        ("4155550123", {"t1"}, "us"),  # national significant number
        ("2079460958", {"t1"}, "uk"),
        ("02079460958", {"t1"}, "uk"),  # with the national prefix
        ("14155550199", {"t1"}, None),  # exists, but on a trunk that did not admit the source
        ("14155550199", {"t1", "t2"}, "other"),
        ("4155550199", {"t2"}, "other"),
        ("14155550100", {"t1", "t2"}, None),
    ],
)
def test_match_number(two_trunks, digits: str, trunks: set[str], expected: str | None) -> None:  # type: ignore[no-untyped-def]
    found = match_number(two_trunks, digits, trunks)
    assert (found.id if found else None) == expected


def test_ambiguous_national_number_matches_nothing() -> None:
    # France and Belgium numbers with the same national significant number, two trunks.
    s = snap(
        [trunk("t1"), trunk("t2")],
        [number("fr", "t1", "33123456789"), number("be", "t2", "32123456789")],
    )
    assert [n.id for n in s.numbers_by_national["123456789"]] == ["fr", "be"]
    assert match_number(s, "123456789", {"t1", "t2"}) is None
    assert match_number(s, "0123456789", {"t1", "t2"}) is None
    found = match_number(s, "123456789", {"t1"})
    assert found is not None and found.id == "fr"
