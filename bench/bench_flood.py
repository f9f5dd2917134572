"""Flood guard cost per packet (``edge.flood.FloodGuard.check``), one core:

    taskset -c 0 .venv/bin/python -m bench.bench_flood

- a known source within budget (the everyday carrier packet),
- one flooding source over budget / banned (the drop path),
- a spoofed flood: every packet from a new source IP (worst case for the table: insert and
  generation rotation), with the tracked-source count it ends at.
"""

from __future__ import annotations

import time

from sipedge.edge.flood import FloodConfig, FloodGuard

N = 1_000_000


def _rate(label: str, seconds: float, n: int) -> None:
    print(f"{label:<44} {n / seconds:>12,.0f} checks/s ({seconds / n * 1e9:,.0f} ns/check)")


def main() -> None:
    guard = FloodGuard(FloodConfig(carrier_rate=10**9))
    start = time.perf_counter()
    for i in range(N):
        guard.check("203.0.113.7", True, i * 1e-6)
    _rate("carrier within budget", time.perf_counter() - start, N)

    guard = FloodGuard(FloodConfig(unknown_rate=20, ban_after_windows=1))
    start = time.perf_counter()
    for i in range(N):
        guard.check("198.51.100.66", False, i * 1e-6)
    _rate("one flooding source (dropped, then banned)", time.perf_counter() - start, N)

    guard = FloodGuard(FloodConfig(max_tracked_sources=100_000))
    ips = [f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in range(N)]
    start = time.perf_counter()
    for i, ip in enumerate(ips):
        guard.check(ip, False, i * 1e-6)
    _rate("spoofed flood, a new source every packet", time.perf_counter() - start, N)
    print(f"{'tracked sources after 1M distinct':<44} {guard.tracked:>12,} (cap 100,000)")

    guard = FloodGuard(FloodConfig(invite_rate=2000))
    start = time.perf_counter()
    for i in range(N):
        guard.admit_invite(i * 1e-6)
    _rate("global INVITE admission", time.perf_counter() - start, N)


if __name__ == "__main__":
    main()
