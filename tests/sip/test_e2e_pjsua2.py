"""pjsua2 (a second, independent SIP stack) calls the harness UAS, and the harness UAC calls
pjsua2, over UDP and TCP. Each pjsua2 Endpoint runs in its own subprocess (TESTING.md)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from harness import HOST, HarnessUA, free_port

from sipedge.sip.transaction import TxState

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(
        importlib.util.find_spec("pjsua2") is None,
        reason="pjsua2 not importable (pip install pjsua2-python)",
    ),
]

PEER = str(Path(__file__).with_name("pjsua2_peer.py"))


async def run_peer(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        PEER,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )


async def wait_ready(stdout: asyncio.StreamReader) -> None:
    """Skip pjlib's start-up log lines until the peer says READY."""
    while True:
        line = await stdout.readline()
        if not line:
            raise AssertionError("pjsua2 peer exited before READY")
        if line.strip() == b"READY":
            return


def result_line(output: str) -> dict[str, object]:
    for line in output.splitlines():
        if line.startswith("RESULT "):
            parsed = json.loads(line[len("RESULT ") :])
            assert isinstance(parsed, dict)
            return parsed
    raise AssertionError(f"no RESULT line in pjsua2 output:\n{output}")


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_pjsua2_calls_the_harness_uas(transport: str) -> None:
    ua = HarnessUA()
    await ua.start(transport, free_port(transport))
    target = f"sip:service@{HOST}:{ua.address[1]};transport={transport}"
    proc = await run_peer("call", transport, str(free_port(transport)), target, "0.3", "15")
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 25)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await ua.close()
    output = out.decode(errors="replace")
    assert proc.returncode == 0, output
    result = result_line(output)
    assert "confirmed" in result["states"] and result["states"][-1] == "disconnected"  # type: ignore[index,operator]
    assert (ua.stats.invites, ua.stats.acks, ua.stats.byes) == (1, 1, 1)
    assert ua.completed_uas_calls == 1
    assert ua.stats.failures == []


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_harness_uac_calls_pjsua2(transport: str) -> None:
    peer_port = free_port(transport)
    proc = await run_peer("answer", transport, str(peer_port), "15")
    ua = HarnessUA(hold=0.3)
    try:
        assert proc.stdout is not None
        await asyncio.wait_for(wait_ready(proc.stdout), 10)
        await ua.start(transport, free_port(transport))
        outcome = await ua.call((HOST, peer_port), timeout=10)
        out, _ = await asyncio.wait_for(proc.communicate(), 15)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await ua.close()
    output = out.decode(errors="replace")
    assert outcome == "completed", output
    assert proc.returncode == 0, output
    assert "confirmed" in result_line(output)["states"]  # type: ignore[operator]
    assert ua.stats.failures == []


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_pjsua2_cancel_while_ringing_gets_487(transport: str) -> None:
    """CANCEL matched to its INVITE (RFC 3261 §9.2): 200 to the CANCEL, 487 to the INVITE, and
    pjsua2's ACK for the 487 absorbed by the INVITE server transaction (§17.2.1)."""
    ua = HarnessUA(ring=10.0)  # 180 at once, the 200 never comes before the CANCEL
    await ua.start(transport, free_port(transport))
    target = f"sip:service@{HOST}:{ua.address[1]};transport={transport}"
    proc = await run_peer("cancel", transport, str(free_port(transport)), target, "15")
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 25)
        calls = ua.uas_calls
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await ua.close()
    output = out.decode(errors="replace")
    assert proc.returncode == 0, output
    assert result_line(output)["last_status"] == 487
    assert (ua.stats.invites, ua.stats.cancels, ua.stats.acks, ua.stats.byes) == (1, 1, 0, 0)
    assert len(calls) == 1
    # The ACK for the 487 matched the INVITE transaction (Confirmed; Timer I is 0 over TCP).
    expected = TxState.TERMINATED if transport == "tcp" else TxState.CONFIRMED
    assert calls[0].invite_tx.state is expected
    assert ua.stats.failures == []
