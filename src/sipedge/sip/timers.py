"""RFC 3261 §17 timer values (Table 4 of RFC 3261 §A, plus RFC 6026 Timers L and M).

The transaction FSMs never read a clock: they receive ``now`` and emit ``StartTimer(name, at)`` with
an absolute deadline computed from these durations. A reliable transport (TCP) turns the "wait for
retransmissions" timers D, I, J and K into zero (RFC 3261 §17.1.1.2, §17.1.2.2, §17.2.1, §17.2.2):
the FSM then goes straight to Terminated instead of arming a zero timer.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "TIMER_A",
    "TIMER_B",
    "TIMER_D",
    "TIMER_E",
    "TIMER_F",
    "TIMER_G",
    "TIMER_H",
    "TIMER_I",
    "TIMER_J",
    "TIMER_K",
    "TIMER_L",
    "TIMER_M",
    "TimerConfig",
]

# Timer names as they appear in StartTimer/CancelTimer/TimerFired; the letters of RFC 3261 Table 4.
TIMER_A = "A"  # INVITE client: request retransmission (UDP only), doubles without cap
TIMER_B = "B"  # INVITE client: transaction timeout, 64*T1
TIMER_D = "D"  # INVITE client: wait for response retransmissions in Completed
TIMER_E = "E"  # non-INVITE client: request retransmission (UDP only), doubles up to T2
TIMER_F = "F"  # non-INVITE client: transaction timeout, 64*T1
TIMER_G = "G"  # INVITE server: final response retransmission (UDP only), doubles up to T2
TIMER_H = "H"  # INVITE server: wait for ACK, 64*T1
TIMER_I = "I"  # INVITE server: absorb ACK retransmissions in Confirmed
TIMER_J = "J"  # non-INVITE server: absorb request retransmissions in Completed
TIMER_K = "K"  # non-INVITE client: absorb response retransmissions in Completed
TIMER_L = "L"  # RFC 6026 §8.7: INVITE server in Accepted (2xx sent), 64*T1
TIMER_M = "M"  # RFC 6026 §8.4: INVITE client in Accepted (2xx received), 64*T1


@dataclass(frozen=True, slots=True)
class TimerConfig:
    """T1 (RTT estimate), T2 (max non-INVITE retransmit interval), T4 (max time a message lives in
    the network); RFC 3261 §17.1.1.1 defaults. Tests shrink them; production keeps the defaults."""

    t1: float = 0.5
    t2: float = 4.0
    t4: float = 5.0

    def __post_init__(self) -> None:
        if not (0 < self.t1 <= self.t2) or self.t4 <= 0:
            raise ValueError("timer values must satisfy 0 < T1 <= T2 and T4 > 0")

    @property
    def timeout(self) -> float:
        """Timers B, F, H, L and M: 64*T1 (RFC 3261 Table 4, RFC 6026 §8.4/§8.7)."""
        return 64 * self.t1

    def timer_d(self, reliable: bool) -> float:
        # RFC 3261 §17.1.1.2: "at least 32 seconds for unreliable transports, zero for reliable".
        # 32 s is the server's Timer H (64*T1) at the default T1; with a larger T1 the server keeps
        # retransmitting longer, so we wait at least that long too.
        return 0.0 if reliable else max(32.0, self.timeout)

    def timer_i(self, reliable: bool) -> float:
        # RFC 3261 §17.2.1: T4 for unreliable transports, zero for reliable.
        return 0.0 if reliable else self.t4

    def timer_j(self, reliable: bool) -> float:
        # RFC 3261 §17.2.2: 64*T1 for unreliable transports, zero for reliable.
        return 0.0 if reliable else self.timeout

    def timer_k(self, reliable: bool) -> float:
        # RFC 3261 §17.1.2.2: T4 for unreliable transports, zero for reliable.
        return 0.0 if reliable else self.t4

    def next_capped(self, interval: float) -> float:
        """Timers E and G: double the interval, never beyond T2 (RFC 3261 §17.1.2.2, §17.2.1)."""
        return min(2 * interval, self.t2)
