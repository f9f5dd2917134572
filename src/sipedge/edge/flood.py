"""Flood protection for the SIP edge, in the manner of Kamailio's pike module. Pure: ``now`` is an
argument, nothing here reads a clock, sends or logs.

Per source IP, requests are counted in fixed windows of ``window_seconds``. A source may send
``carrier_rate`` (ACL'd carriers) or ``unknown_rate`` (everyone else) requests per second, i.e.
``rate * window_seconds`` per window; what goes over is dropped. A source over its budget in
``ban_after_windows`` consecutive windows is banned for ``ban_seconds``: every packet from it is
dropped until the ban expires, and it then starts afresh. A carrier source is never banned, only
held at its budget: UDP source addresses are easy to forge, and a ban would let anyone who floods
with a carrier's address cut that carrier off for the whole ban (measured: bench/flood_load).

Memory is bounded by ``max_tracked_sources`` with two generations of per-source state: lookups go
to the current generation, a miss promotes the source from the previous one, and when the current
generation is half the cap it becomes the previous one (the old previous one, holding only
sources idle for a whole generation, is dropped). Every operation is O(1); an unknown source
costs one dictionary lookup and some arithmetic.

Independently, ``admit_invite(now)`` is a global token bucket for new INVITEs: when it says no,
the caller answers 503 with ``Retry-After: retry_after_seconds`` before the process saturates.

Call sites (one call per packet): ``check`` right after a request parses and its source has been
classified (carrier or not), before any transaction or policy work; ``admit_invite`` for an
initial INVITE that passed ``check``, before the inbound pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["DEFAULT_FLOOD_CONFIG", "FloodConfig", "FloodGuard", "Verdict"]


class Verdict(StrEnum):
    """What to do with one packet; every value but ALLOW means "drop it silently"."""

    ALLOW = "allow"
    DROP = "rate"  # over the source's budget in this window
    BAN = "ban"  # over budget for the Nth consecutive window: a ban starts with this packet
    BANNED = "banned"  # the source is serving a ban


@dataclass(frozen=True, slots=True)
class FloodConfig:
    """Budgets, in requests per second; 0 turns a limit off."""

    enabled: bool = True
    window_seconds: float = 1.0
    carrier_rate: int = 2000
    unknown_rate: int = 20
    ban_after_windows: int = 3
    ban_seconds: float = 60.0
    invite_rate: int = 400  # below the ~500 calls/s one process sustains (bench.inbound_ramp)
    retry_after_seconds: int = 5
    max_tracked_sources: int = 100_000

    def __post_init__(self) -> None:
        if self.window_seconds <= 0 or self.ban_seconds < 0:
            raise ValueError("window_seconds must be > 0 and ban_seconds >= 0")
        if min(self.carrier_rate, self.unknown_rate, self.invite_rate) < 0:
            raise ValueError("rates must be >= 0")
        if self.ban_after_windows < 1 or self.max_tracked_sources < 2:
            raise ValueError("ban_after_windows must be >= 1 and max_tracked_sources >= 2")


DEFAULT_FLOOD_CONFIG = FloodConfig()

# Per-source state, a plain list for speed: [window start, count in window, over-budget streak
# (consecutive windows before this one), ban end (0.0 = not banned)].
_START, _COUNT, _STREAK, _BAN_END = 0, 1, 2, 3


class FloodGuard:
    """Per-source rate limits, a ban list and a global INVITE admission cap."""

    __slots__ = (
        "_carrier_budget",
        "_cur",
        "_half",
        "_invite_last",
        "_invite_rate",
        "_invite_tokens",
        "_prev",
        "_unknown_budget",
        "bans_started",
        "config",
    )

    def __init__(self, config: FloodConfig = DEFAULT_FLOOD_CONFIG) -> None:
        self.config = config
        window = config.window_seconds
        # Budgets per window; at least 1 so a tiny window never forbids everything.
        self._carrier_budget = max(1, round(config.carrier_rate * window))
        self._unknown_budget = max(1, round(config.unknown_rate * window))
        self._half = config.max_tracked_sources // 2
        self._cur: dict[str, list[float]] = {}
        self._prev: dict[str, list[float]] = {}
        self._invite_rate = float(config.invite_rate)
        self._invite_tokens = float(config.invite_rate)  # a full second's burst
        self._invite_last: float | None = None
        self.bans_started = 0

    @property
    def tracked(self) -> int:
        """Sources currently holding state (never more than ``max_tracked_sources``)."""
        return len(self._cur) + len(self._prev)

    @property
    def retry_after(self) -> int:
        return self.config.retry_after_seconds

    def is_banned(self, source_ip: str, now: float) -> bool:
        state = self._cur.get(source_ip) or self._prev.get(source_ip)
        return state is not None and now < state[_BAN_END]

    def check(self, source_ip: str, is_carrier: bool, now: float) -> Verdict:
        """Count one request from ``source_ip`` at ``now`` and say whether to process it."""
        config = self.config
        if not config.enabled:
            return Verdict.ALLOW
        rate = config.carrier_rate if is_carrier else config.unknown_rate
        if not rate:
            return Verdict.ALLOW
        state = self._cur.get(source_ip)
        if state is None:
            state = self._admit_source(source_ip, now)
        if state[_BAN_END]:
            if now < state[_BAN_END]:
                return Verdict.BANNED
            state[_START], state[_COUNT], state[_STREAK], state[_BAN_END] = now, 0, 0, 0.0
        budget = self._carrier_budget if is_carrier else self._unknown_budget
        window = config.window_seconds
        elapsed = now - state[_START]
        if elapsed >= window or elapsed < 0:
            # Roll over: the streak survives only if the window that ended was over budget and
            # directly precedes this one.
            if state[_COUNT] > budget and elapsed < 2 * window:
                state[_STREAK] += 1
            else:
                state[_STREAK] = 0
            state[_START], state[_COUNT] = now, 0
        count = state[_COUNT] + 1
        state[_COUNT] = count
        if count <= budget:
            return Verdict.ALLOW
        if (
            count == budget + 1
            and not is_carrier
            and state[_STREAK] + 1 >= config.ban_after_windows
            and config.ban_seconds > 0
        ):
            state[_BAN_END] = now + config.ban_seconds
            self.bans_started += 1
            return Verdict.BAN
        return Verdict.DROP

    def admit_invite(self, now: float) -> bool:
        """Take one token of the global INVITE budget; False -> answer 503 + Retry-After."""
        if not self.config.enabled or not self._invite_rate:
            return True
        rate = self._invite_rate
        last = self._invite_last
        tokens = self._invite_tokens
        if last is not None and now > last:
            tokens = min(rate, tokens + (now - last) * rate)
        self._invite_last = now if last is None or now > last else last
        if tokens >= 1.0:
            self._invite_tokens = tokens - 1.0
            return True
        self._invite_tokens = tokens
        return False

    def _admit_source(self, source_ip: str, now: float) -> list[float]:
        state = self._prev.pop(source_ip, None)
        if state is None:
            state = [now, 0, 0, 0.0]
        if len(self._cur) >= self._half:
            # Rotate generations: sources idle for a whole generation are forgotten.
            self._prev = self._cur
            self._cur = {}
        self._cur[source_ip] = state
        return state
