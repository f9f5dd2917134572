"""A short soak (issue 8 item 5) in CI: a few calls of every ending kind in parallel — carrier
BYE, agent BYE, CANCEL, agent 503, never ACKed, and a lossy member whose SIPps drop packets
(retransmissions) — then nothing may be left: no live call, no channel on the trunk, no
transaction or timer in the transaction layer, one call record per call placed, RSS back near
its warm-up baseline. ``bench/soak.py`` is the same run at full length.

The agent leg runs over TCP here (Timer D = 0, RFC 3261 §17.1.1.2), so every transaction ends
within 64*T1 of its call and the test stays short; the bench soak keeps UDP and waits Timer D.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from sipp_runner import SIPP

ROOT = Path(__file__).resolve().parents[2]


def _load_soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_soak", ROOT / "bench" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


soak = _load_soak()

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]


async def test_every_ending_kind_leaves_nothing_behind(tmp_path: Path) -> None:
    report = await soak.soak(
        rate=4.0,  # calls/s per member: 24 calls/s in all
        duration=2.0,
        loss=5,
        agent_transport="tcp",
        warmup_calls=2,
        rss_tolerance_kib=16 * 1024,
        t1=0.05,
        recv_timeout=6.0,
        workdir=tmp_path,
    )
    print(soak.render(report))
    assert set(report.members) == {m.name for m in soak.MIX}
    for name, member in report.members.items():
        assert member["placed"] == 8, (name, member)
        assert member["records"] == member["placed"], (name, member)
    # Every member but the lossy one must end every call as its scenario expects.
    assert all(
        m["carrier_failed"] == 0 and m["carrier_ok"] == m["placed"]
        for name, m in report.members.items()
        if name != "lossy"
    ), soak.render(report)
    assert report.members["no_ack"]["record_outcomes"] == {"200/no_ack": 8}
    assert report.members["cancel"]["record_outcomes"] == {"487/canceled": 8}
    assert soak.is_clean(report.leftovers), report.leftovers
    assert report.problems == [], soak.render(report)


def test_leftover_check_sees_a_leak() -> None:
    assert soak.is_clean({"a": {"active_calls": 0, "server_tx": 0}})
    assert not soak.is_clean({"a": {"active_calls": 0, "server_tx": 1}})
