"""SIPp's built-in scenarios against the harness (sipedge transports + transaction layer + dialog),
over UDP and TCP: SIPp's `uac` calls our UAS, our UAC calls SIPp's `uas`."""

from __future__ import annotations

import asyncio

import pytest
from harness import HOST, HarnessUA, free_port
from sipp_runner import SIPP, sipp, wait_bound

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]

CALLS = 5
SIPP_TRANSPORT = {"udp": "u1", "tcp": "t1"}


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_sipp_uac_completes_calls_against_harness_uas(transport: str, tmp_path) -> None:
    ua = HarnessUA()
    await ua.start(transport, free_port(transport))
    try:
        args = [
            "-sn", "uac", f"{HOST}:{ua.address[1]}",
            "-i", HOST, "-p", str(free_port(transport)),
            "-t", SIPP_TRANSPORT[transport],
            "-m", str(CALLS), "-r", "10", "-d", "200",
            "-timeout", "20", "-timeout_error",
        ]  # fmt: skip
        async with sipp(args, workdir=str(tmp_path)) as run:
            result = await run.wait(timeout=30)
    finally:
        await ua.close()
    assert result.returncode == 0, result.output
    assert result.stats["SuccessfulCall(C)"] == str(CALLS), result.stats
    assert result.stats["FailedCall(C)"] == "0", result.stats
    assert (ua.stats.invites, ua.stats.acks, ua.stats.byes) == (CALLS, CALLS, CALLS)
    assert ua.completed_uas_calls == CALLS
    assert ua.stats.failures == []


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_harness_uac_completes_calls_against_sipp_uas(transport: str, tmp_path) -> None:
    sipp_port = free_port(transport)
    args = [
        "-sn", "uas", "-i", HOST, "-p", str(sipp_port),
        "-t", SIPP_TRANSPORT[transport],
        "-m", str(CALLS), "-timeout", "20", "-timeout_error",
    ]  # fmt: skip
    ua = HarnessUA(hold=0.2)
    async with sipp(args, workdir=str(tmp_path)) as run:
        await wait_bound(sipp_port, transport)
        await ua.start(transport, free_port(transport))
        try:
            outcomes = await asyncio.gather(*(ua.call((HOST, sipp_port)) for _ in range(CALLS)))
            # Stay up until SIPp ends: it counts a TCP connection closed during its final 4 s
            # timewait as a failed call.
            result = await run.wait(timeout=15)
        finally:
            await ua.close()
    assert outcomes == ["completed"] * CALLS, (outcomes, result.output)
    assert result.returncode == 0, result.output
    assert result.stats["SuccessfulCall(C)"] == str(CALLS), result.stats
    assert result.stats["FailedCall(C)"] == "0", result.stats
    assert ua.stats.failures == []


async def test_sipp_uac_with_packet_loss_completes_through_retransmissions(tmp_path) -> None:
    """SIPp drops 15% of its UDP packets: lost INVITEs, BYEs and ACKs must be recovered by the
    retransmission paths (absorbed INVITE/BYE retransmissions, 2xx retransmitted by the UAS
    core until the ACK, §13.3.1.4 / §17.2)."""
    ua = HarnessUA()
    await ua.start("udp", free_port("udp"))
    try:
        args = [
            "-sn", "uac", f"{HOST}:{ua.address[1]}",
            "-i", HOST, "-p", str(free_port("udp")), "-t", "u1",
            "-m", "10", "-r", "20", "-d", "100", "-lost", "15",
            "-timeout", "30", "-timeout_error",
        ]  # fmt: skip
        async with sipp(args, workdir=str(tmp_path)) as run:
            result = await run.wait(timeout=40)
    finally:
        await ua.close()
    assert result.returncode == 0, result.output
    assert result.stats["SuccessfulCall(C)"] == "10", result.stats
    # ~70 packets at 15% loss: P(no loss at all) is about 1e-5, so retransmissions did happen.
    assert int(result.stats["Retransmissions(C)"]) > 0, result.stats
    # Each INVITE reached the TU once: retransmitted INVITEs were absorbed by the transactions.
    assert ua.stats.invites == 10, ua.stats
    assert ua.stats.failures == []
    # No ACK/BYE count here: SIPp's `uac` does not check the CSeq method of a 200, so when it
    # loses its own ACK and BYE, our (correctly) retransmitted INVITE 200 ends its call.
