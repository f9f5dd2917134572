"""FloodGuard: per-source budgets, bans with expiry, bounded memory, the global INVITE cap.

Every test drives the guard with an explicit ``now`` (a fake clock); nothing sleeps.
"""

from __future__ import annotations

import pytest

from sipedge.config import FloodSettings
from sipedge.edge.flood import DEFAULT_FLOOD_CONFIG, FloodConfig, FloodGuard, Verdict
from sipedge.metrics import FloodDrop

CARRIER, SCANNER = "203.0.113.10", "198.51.100.66"


def send(guard: FloodGuard, ip: str, n: int, now: float, *, carrier: bool = False) -> list[Verdict]:
    return [guard.check(ip, carrier, now) for _ in range(n)]


def test_unknown_source_gets_its_budget_per_window_then_drops() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=20, ban_after_windows=3))
    verdicts = send(guard, SCANNER, 25, 0.0)
    assert verdicts[:20] == [Verdict.ALLOW] * 20
    assert verdicts[20:] == [Verdict.DROP] * 5


def test_budget_refills_in_the_next_window() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=20))
    send(guard, SCANNER, 25, 0.0)
    assert guard.check(SCANNER, False, 0.999) is Verdict.DROP
    assert send(guard, SCANNER, 20, 1.0) == [Verdict.ALLOW] * 20
    assert guard.check(SCANNER, False, 1.5) is Verdict.DROP


def test_carrier_budget_is_separate_and_larger() -> None:
    guard = FloodGuard(FloodConfig(carrier_rate=500, unknown_rate=20))
    assert send(guard, CARRIER, 500, 0.0, carrier=True) == [Verdict.ALLOW] * 500
    assert guard.check(CARRIER, True, 0.5) is Verdict.DROP
    assert send(guard, SCANNER, 20, 0.0) == [Verdict.ALLOW] * 20
    assert guard.check(SCANNER, False, 0.0) is Verdict.DROP


def test_a_flooder_does_not_affect_a_carrier() -> None:
    guard = FloodGuard()
    for step in range(300):  # 30 s of a 1000 req/s flood, in 100 ms steps
        now = step / 10
        send(guard, SCANNER, 100, now)
        assert send(guard, CARRIER, 20, now, carrier=True) == [Verdict.ALLOW] * 20


def test_ban_after_n_consecutive_windows_over_budget() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=10, ban_after_windows=3, ban_seconds=60))
    assert send(guard, SCANNER, 11, 0.0)[-1] is Verdict.DROP  # window 1 over
    assert send(guard, SCANNER, 11, 1.0)[-1] is Verdict.DROP  # window 2 over
    verdicts = send(guard, SCANNER, 12, 2.0)  # window 3 over -> ban
    assert verdicts[:10] == [Verdict.ALLOW] * 10
    assert verdicts[10:] == [Verdict.BAN, Verdict.BANNED]
    assert guard.bans_started == 1
    assert guard.is_banned(SCANNER, 30.0)
    assert guard.check(SCANNER, False, 61.9) is Verdict.BANNED


def test_ban_expires_and_the_source_starts_afresh() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=10, ban_after_windows=1, ban_seconds=60))
    assert send(guard, SCANNER, 11, 5.0)[-1] is Verdict.BAN
    assert guard.check(SCANNER, False, 64.99) is Verdict.BANNED
    assert not guard.is_banned(SCANNER, 65.0)
    assert send(guard, SCANNER, 10, 65.0) == [Verdict.ALLOW] * 10
    assert guard.check(SCANNER, False, 65.1) is Verdict.BAN  # again over, streak of 1 bans


def test_a_quiet_window_resets_the_streak() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=10, ban_after_windows=3))
    send(guard, SCANNER, 11, 0.0)
    send(guard, SCANNER, 11, 1.0)
    send(guard, SCANNER, 5, 2.0)  # under budget
    assert Verdict.BAN not in send(guard, SCANNER, 11, 3.0)
    assert Verdict.BAN not in send(guard, SCANNER, 11, 4.0)
    assert send(guard, SCANNER, 11, 5.0)[-1] is Verdict.BAN


def test_a_skipped_window_resets_the_streak() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=10, ban_after_windows=2))
    send(guard, SCANNER, 11, 0.0)
    assert Verdict.BAN not in send(guard, SCANNER, 11, 2.5)  # a silent window in between
    assert send(guard, SCANNER, 11, 3.5)[-1] is Verdict.BAN


def test_ban_seconds_zero_never_bans() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=1, ban_after_windows=1, ban_seconds=0))
    assert send(guard, SCANNER, 5, 0.0) == [Verdict.ALLOW] + [Verdict.DROP] * 4
    assert guard.bans_started == 0


def test_zero_rate_and_disabled_mean_no_limit() -> None:
    assert set(send(FloodGuard(FloodConfig(unknown_rate=0)), SCANNER, 1000, 0.0)) == {Verdict.ALLOW}
    off = FloodGuard(FloodConfig(enabled=False, unknown_rate=1))
    assert set(send(off, SCANNER, 1000, 0.0)) == {Verdict.ALLOW}
    assert all(off.admit_invite(0.0) for _ in range(10_000))


def test_memory_stays_bounded_under_a_million_sources() -> None:
    cap = 1000
    guard = FloodGuard(FloodConfig(max_tracked_sources=cap))
    for i in range(1_000_000):
        guard.check(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}", False, i / 1e5)
        if i % 997 == 0:
            assert guard.tracked <= cap
    assert guard.tracked <= cap


def test_an_active_source_survives_generation_rotation() -> None:
    guard = FloodGuard(FloodConfig(unknown_rate=10, ban_after_windows=1, max_tracked_sources=100))
    send(guard, SCANNER, 11, 0.0)
    assert guard.is_banned(SCANNER, 1.0)
    for i in range(1000):  # spoofed sources churn the table; the banned one keeps sending
        guard.check(f"192.0.2.{i % 250}-{i}", False, 1.0)
        if i % 10 == 0:
            assert guard.check(SCANNER, False, 1.0) is Verdict.BANNED
    assert guard.tracked <= 100


def test_global_invite_cap_admits_its_rate_and_refills() -> None:
    guard = FloodGuard(FloodConfig(invite_rate=100, retry_after_seconds=7))
    assert sum(guard.admit_invite(0.0) for _ in range(150)) == 100
    assert not guard.admit_invite(0.0)
    assert sum(guard.admit_invite(0.5) for _ in range(100)) == 50  # half a second refills 50
    assert sum(guard.admit_invite(10.0) for _ in range(500)) == 100  # burst never above rate
    assert guard.retry_after == 7


def test_global_invite_cap_ignores_a_clock_going_backwards() -> None:
    guard = FloodGuard(FloodConfig(invite_rate=10))
    assert sum(guard.admit_invite(5.0) for _ in range(10)) == 10
    assert not guard.admit_invite(4.0)
    assert not guard.admit_invite(5.0)
    assert guard.admit_invite(5.2)


def test_invalid_configs_are_refused() -> None:
    for bad in (
        {"window_seconds": 0},
        {"unknown_rate": -1},
        {"ban_after_windows": 0},
        {"max_tracked_sources": 1},
    ):
        with pytest.raises(ValueError):
            FloodConfig(**bad)  # type: ignore[arg-type]


def test_settings_section_builds_the_config_and_defaults_agree() -> None:
    assert FloodConfig(**FloodSettings().model_dump()) == DEFAULT_FLOOD_CONFIG


def test_every_drop_verdict_has_a_metric_label() -> None:
    labels = {d.value for d in FloodDrop}
    assert {v.value for v in Verdict if v is not Verdict.ALLOW} <= labels


def test_a_carrier_is_held_at_its_budget_but_never_banned() -> None:
    # A flood forging a carrier's address must not cut the carrier off for ban_seconds.
    guard = FloodGuard(FloodConfig(carrier_rate=10, ban_after_windows=1, ban_seconds=60))
    for window in range(5):
        verdicts = send(guard, CARRIER, 15, float(window), carrier=True)
        assert verdicts == [Verdict.ALLOW] * 10 + [Verdict.DROP] * 5
    assert guard.bans_started == 0 and not guard.is_banned(CARRIER, 5.0)
    assert send(guard, CARRIER, 10, 5.0, carrier=True) == [Verdict.ALLOW] * 10
