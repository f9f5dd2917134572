"""The routing snapshot: live rows only, withdrawn ranges, precomputed indexes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from edge_factories import (
    CARRIER_IP,
    CARRIER_NET,
    UK_NUMBER,
    US_NUMBER,
    agent,
    gateway,
    number,
    snap,
    trunk,
)

from sipedge.edge.snapshot import empty_snapshot, gateway_order


def test_deleted_rows_are_skipped() -> None:
    s = snap(
        [trunk("t1"), trunk("gone", is_deleted=True, cidrs=("198.51.100.0/24",))],
        [
            number("n1", "t1", US_NUMBER),
            number("n2", "t1", "14155550124", is_deleted=True),
            number("n3", "gone", "14155550125"),
        ],
        [agent("a1"), agent("a2", is_deleted=True)],
    )
    assert set(s.trunks) == {"t1"}
    assert set(s.numbers_by_key) == {US_NUMBER}
    assert set(s.agents) == {"a1"}
    assert s.acl.trunks_for("198.51.100.1") == ()


@pytest.mark.parametrize(
    ("flags", "admitted"),
    [
        ({}, ("t1", "t2")),
        ({"is_active": False}, ("t2",)),
        ({"inbound_enabled": False}, ("t2",)),
        ({"outbound_enabled": False}, ("t1", "t2")),
        ({"is_deleted": True}, ("t2",)),
    ],
)
def test_disabled_trunk_ranges_are_withdrawn_but_others_still_admit(
    flags: dict[str, bool], admitted: tuple[str, ...]
) -> None:
    s = snap([trunk("t1", **flags), trunk("t2")])
    assert s.acl.trunks_for(CARRIER_IP) == admitted


def test_inactive_trunk_stays_visible_for_outbound_and_health() -> None:
    s = snap([trunk("t1", is_active=False)])
    assert "t1" in s.trunks
    assert s.acl.trunks_for(CARRIER_IP) == ()


def test_national_forms_are_precomputed() -> None:
    s = snap([trunk()], [number("us", key=US_NUMBER), number("uk", key=UK_NUMBER)], [agent()])
    assert [n.id for n in s.numbers_by_national["4155550123"]] == ["us"]
    assert [n.id for n in s.numbers_by_national["2079460958"]] == ["uk"]
    assert [n.id for n in s.numbers_by_national["02079460958"]] == ["uk"]
    assert [n.id for n in s.numbers_by_agent["a1"]] == ["us", "uk"]


def test_bad_rows_are_reported_not_indexed() -> None:
    s = snap(
        [trunk(cidrs=(CARRIER_NET, "10.0.0.0/8", "junk"))],
        [number("n1"), number("n2"), number("n3", key="+1415")],
    )
    assert s.acl.trunks_for(CARRIER_IP) == ("t1",)
    assert s.acl.trunks_for("10.1.1.1") == ()
    assert s.numbers_by_key[US_NUMBER].id == "n1"
    assert len(s.problems) == 4
    assert all("secret" not in p for p in s.problems)


def test_gateways_sorted_by_priority_then_creation() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    given = (
        gateway("late-p0", 0, created_at=t0 + timedelta(seconds=5)),
        gateway("p1", 1, created_at=t0),
        gateway("early-p0", 0, created_at=t0),
        gateway("p1-same-time", 1, created_at=t0),
    )
    expected = ["early-p0", "late-p0", "p1", "p1-same-time"]
    assert [g.id for g in gateway_order(given)] == expected
    s = snap([trunk(gateways=given)])
    assert [g.id for g in s.trunks["t1"].gateways] == expected


def test_snapshot_is_read_only() -> None:
    s = snap([trunk()])
    with pytest.raises(TypeError):
        s.trunks["t9"] = trunk("t9")  # type: ignore[index]
    with pytest.raises(AttributeError):
        s.version = 2  # type: ignore[misc]


def test_empty_snapshot_admits_nobody() -> None:
    s = empty_snapshot()
    assert s.version == 0
    assert s.acl.trunks_for(CARRIER_IP) == ()
