"""Flood protection wired into the running edge: per-source budgets before any parsing, bans,
and the global INVITE admission cap (503 + Retry-After)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from inbound_env import raw_invite, running_edge, statuses, udp_exchange

from sipedge.metrics import FLOOD_CHILDREN


def _burst(dest: tuple[str, int], source_host: str, count: int, wait: float) -> list[bytes]:
    """Send `count` INVITEs from one socket as fast as possible; collect the answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((source_host, 0))
        port = str(sock.getsockname()[1]).encode()
        for i in range(count):
            data = raw_invite(dest[1], host=source_host, call_id=f"flood-{i}@x")
            sock.sendto(data.replace(b"{SRC}", port), dest)
        got: list[bytes] = []
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                got.append(sock.recv(65535))
            except TimeoutError:
                break
        return got


def _flood_drops() -> float:
    return sum(FLOOD_CHILDREN[reason]._value.get() for reason in ("rate", "ban", "banned"))


async def test_unknown_source_over_budget_is_dropped_then_banned(tmp_path) -> None:
    flood = {"unknown_rate": 5, "window_seconds": 1.0, "ban_after_windows": 1, "ban_seconds": 30}
    async with running_edge(str(tmp_path), unknown_source="reject", flood=flood) as env:
        before = _flood_drops()
        got = await asyncio.to_thread(_burst, ("127.0.0.1", env.port), "127.0.0.2", 40, 0.5)
        # Only the budget is even parsed and answered (403: unknown source); the rest is dropped.
        assert 1 <= len(statuses(got)) <= 5
        assert set(statuses(got)) == {403}
        assert _flood_drops() - before >= 35
        assert env.edge.flood.is_banned("127.0.0.2", time.monotonic())
        # Banned: a lone packet a window later still gets nothing, while the carrier is served.
        await asyncio.sleep(1.05)
        late = await udp_exchange(
            raw_invite(env.port, host="127.0.0.2", call_id="late@x"),
            ("127.0.0.1", env.port),
            source_host="127.0.0.2",
            wait=0.3,
        )
        assert late == []
        served = await udp_exchange(
            raw_invite(env.port, call_id="carrier@x"), ("127.0.0.1", env.port), wait=0.3
        )
        assert statuses(served)[:1] == [100]


async def test_carrier_within_budget_is_never_limited(tmp_path) -> None:
    async with running_edge(str(tmp_path), flood={"unknown_rate": 1}) as env:
        # 127.0.0.1 is the trunk's carrier (and the agent endpoint): the unknown budget of 1/s
        # does not apply to it.
        got = await asyncio.to_thread(_burst, ("127.0.0.1", env.port), "127.0.0.1", 10, 0.3)
        assert statuses(got).count(100) == 10


async def test_invite_admission_cap_answers_503_with_retry_after(tmp_path) -> None:
    flood = {"invite_rate": 2, "retry_after_seconds": 7}
    async with running_edge(str(tmp_path), flood=flood) as env:
        got = await asyncio.to_thread(_burst, ("127.0.0.1", env.port), "127.0.0.1", 6, 0.5)
        codes = statuses(got)
        assert codes.count(503) >= 3
        overloaded = next(d for d in got if d.startswith(b"SIP/2.0 503"))
        assert b"Retry-After: 7" in overloaded
        assert b'Warning: 399 sipedge "overloaded"' in overloaded
        await env.settle()
        assert env.channels_in_use() == 0


async def test_transaction_cap_answers_503_naming_the_rule(tmp_path) -> None:
    # sip.max_transactions: the layer's stateless 503 carries the same Retry-After and Warning
    # as the INVITE cap's (SPEC §5: every 503 names the rule that decided it).
    async with running_edge(
        str(tmp_path), max_transactions=1, flood={"retry_after_seconds": 9}
    ) as env:
        got = await asyncio.to_thread(_burst, ("127.0.0.1", env.port), "127.0.0.1", 3, 0.5)
        busy = [d for d in got if d.startswith(b"SIP/2.0 503")]
        assert busy, statuses(got)
        assert all(b"Retry-After: 9" in d for d in busy)
        assert all(b'Warning: 399 sipedge "overloaded"' in d for d in busy)


pytestmark = pytest.mark.sipp


async def test_an_unknown_source_is_refused_once_without_a_transaction(tmp_path) -> None:
    # T1 = 50 ms here: a transaction's Timer G would re-send a refusal at 0.05, 0.15, 0.35 and
    # 0.75 s. An unknown source is screened before any transaction: no 100 Trying, one 403, so a
    # spoofed INVITE from outside every carrier range buys its claimed source one packet.
    async with running_edge(str(tmp_path), unknown_source="reject") as env:
        unknown = await udp_exchange(
            raw_invite(env.port, host="127.0.0.2", call_id="stranger@x"),
            ("127.0.0.1", env.port),
            source_host="127.0.0.2",
            wait=1.0,
        )
        assert statuses(unknown) == [403]
        layer = env.edge._layer  # read-only introspection, as bench/soak.py does
        assert layer is not None and layer.server_count == 0
