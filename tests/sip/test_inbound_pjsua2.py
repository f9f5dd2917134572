"""A second, independent SIP stack as the carrier: pjsua2 places an inbound call through the edge
to a SIPp agent, over UDP and TCP (one pjsua2 Endpoint per subprocess, TESTING.md)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from harness import HOST, free_port
from inbound_env import NUMBER, agent_args, ok, running_edge, snapshot, trunk
from sipp_runner import SIPP, sipp, wait_bound

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
    pytest.mark.skipif(
        importlib.util.find_spec("pjsua2") is None,
        reason="pjsua2 not importable (pip install pjsua2-python)",
    ),
]

PEER = str(Path(__file__).with_name("pjsua2_peer.py"))


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_pjsua2_carrier_call_through_the_edge(transport: str, tmp_path) -> None:
    async with running_edge(str(tmp_path), snapshot(trunk(transport=transport))) as env:
        async with sipp(agent_args(env, "uas-answer-any.xml"), workdir=env.workdir) as agent_run:
            await wait_bound(env.agent_port, "udp")
            target = f"sip:{NUMBER}@{HOST}:{env.port};transport={transport}"
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                PEER,
                "call",
                transport,
                str(free_port(transport)),
                target,
                "0.3",
                "15",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), 25)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            agent = await agent_run.wait(timeout=10)
        await env.settle()
        output = out.decode(errors="replace")
        assert proc.returncode == 0, output
        result = next(
            json.loads(line[len("RESULT ") :])
            for line in output.splitlines()
            if line.startswith("RESULT ")
        )
        assert "confirmed" in result["states"], output
        assert ok(agent), agent.output
        assert env.channels_in_use() == 0
        [record] = env.records.events
        assert (record.decided_by, record.hangup_side) == ("answered", "carrier")
