"""`sipedge serve` as a real process, restarted while the webhook receiver is down.

An admin sets the agent's `webhook_url` (a receiver on 127.0.0.1, `allow_private_webhooks`); a
SIPp call goes through; the receiver answers 503, sipedge is stopped (SIGTERM) and started again
on the same database, the receiver comes back: it gets ringing, in-progress and completed, in
order, signed with the secret `sipedge webhook secret` prints.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from harness import free_port
from inbound_env import run_pair
from sipp_runner import SIPP
from test_serve_e2e import NUMBER, TOKEN_LINE, _agent_body, _Env
from webhook_receiver import http_receiver

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]


class Process:
    def __init__(self, tmp_path: Path) -> None:
        self.http_port, self.sip_port = free_port("tcp"), free_port("udp")
        self.agent_port = free_port("udp")
        self.env = {
            **os.environ,
            "SIPEDGE_DATABASE__URL": f"sqlite:///{tmp_path / 'sipedge.db'}",
            "SIPEDGE_HTTP__PORT": str(self.http_port),
            "SIPEDGE_SIP__HOST": "127.0.0.1",
            "SIPEDGE_SIP__PORT": str(self.sip_port),
            "SIPEDGE_AGENTS__ENDPOINT": f"sip:127.0.0.1:{self.agent_port}",
            "SIPEDGE_SECURITY__ALLOW_PRIVATE_WEBHOOKS": "true",
            "SIPEDGE_WEBHOOKS__BACKOFF_BASE_SECONDS": "0.2",
            "SIPEDGE_WEBHOOKS__BACKOFF_MAX_SECONDS": "0.5",
            "SIPEDGE_WEBHOOKS__POLL_INTERVAL_SECONDS": "0.2",
            "SIPEDGE_LOGGING__LEVEL": "WARNING",
        }
        self.cwd = tmp_path
        self.proc: subprocess.Popen[str] | None = None
        self.token = ""
        self.api = f"http://127.0.0.1:{self.http_port}"

    def start(self) -> None:
        """Start `sipedge serve` and wait until the API answers (blocking: run in a thread)."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sipedge.cli", "serve"],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 30
        if not self.token:
            assert self.proc.stdout is not None
            while not self.token and time.monotonic() < deadline:
                line = self.proc.stdout.readline()
                if not line and self.proc.poll() is not None:
                    break
                if match := TOKEN_LINE.search(line):
                    self.token = match.group(1)
            assert self.token, "serve printed no first token"
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.api}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("serve did not come up")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def secret(self, user: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "sipedge.cli", "webhook", "secret", "--user", user],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()


async def test_a_restart_while_the_receiver_is_down_loses_no_webhook(tmp_path: Path) -> None:
    served = Process(tmp_path)
    async with http_receiver(status=503) as receiver:
        await asyncio.to_thread(served.start)
        try:
            headers = {"Authorization": f"Bearer {served.token}"}
            async with httpx.AsyncClient(base_url=served.api, headers=headers, timeout=10) as api:
                body = _agent_body()
                body["agent_config"]["webhook_url"] = receiver.url  # type: ignore[index]
                created = await api.post("/v2/agent", json=body)
                assert created.status_code == 201, created.text
                agent_id = created.json()["agent_id"]
                trunk = await api.post(
                    "/trunk/trunks",
                    json={
                        "name": "Loopback carrier",
                        "codecs": "PCMA,PCMU",
                        "ip_acls": [{"cidr": "127.0.0.1/32"}],
                        "numbers": [{"e164": NUMBER, "agent_id": agent_id}],
                    },
                )
                assert trunk.status_code == 201, trunk.text
            carrier, agent = await run_pair(
                _Env(served, str(tmp_path)),  # type: ignore[arg-type]
                "uac-answered-expect-200.xml",
                "uas-answer-any.xml",
            )
            assert carrier.returncode == 0, carrier.output
            assert agent.returncode == 0, agent.output
            for _ in range(100):
                if receiver.attempts >= 2:
                    break
                await asyncio.sleep(0.05)
            assert receiver.attempts >= 2 and receiver.received == []
            await asyncio.to_thread(served.stop)
            receiver.status = 200
            await asyncio.to_thread(served.start)
            await receiver.wait_for(3, timeout=20)
        finally:
            await asyncio.to_thread(served.stop)
    secret = await asyncio.to_thread(served.secret, "admin")
    assert receiver.statuses() == ["ringing", "in-progress", "completed"]
    assert all(r.signed_with(secret) for r in receiver.received)
    assert {r.payload["agent_id"] for r in receiver.received} == {agent_id}
