"""`sipedge serve` as a user runs it: a real process, SQLite, the admin API and the SIP edge.

An admin creates an agent and a trunk over HTTP; a SIPp carrier calls the number and a SIPp agent
answers; the call record, health and activity show up in the API; a PATCH that disables the trunk
stops the very next INVITE, with no restart. And the scale-out shape: separate `api` and `sip`
processes on PostgreSQL, where the API's writes reach the SIP process through LISTEN/NOTIFY.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness import free_port
from inbound_env import raw_invite, run_pair, statuses, udp_exchange
from sipp_runner import SIPP

from api.conftest import create_pg_database, drop_pg_database

pytestmark = [
    pytest.mark.sipp,
    pytest.mark.skipif(SIPP is None, reason="sipp not installed (Debian package sip-tester)"),
]

NUMBER = "+14155550100"
TOKEN_LINE = re.compile(r"export SIPEDGE_TOKEN=(sk_[A-Za-z0-9_-]+)")


class Served:
    def __init__(self, proc: subprocess.Popen[str], http_port: int, sip_port: int, agent_port: int):
        self.proc = proc
        self.api = f"http://127.0.0.1:{http_port}"
        self.sip_port = sip_port
        self.agent_port = agent_port
        self.token = ""

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    http_port, sip_port, agent_port = free_port("tcp"), free_port("udp"), free_port("udp")
    env = {
        **os.environ,
        "SIPEDGE_DATABASE__URL": f"sqlite:///{tmp_path / 'sipedge.db'}",
        "SIPEDGE_HTTP__PORT": str(http_port),
        "SIPEDGE_SIP__HOST": "127.0.0.1",
        "SIPEDGE_SIP__PORT": str(sip_port),
        "SIPEDGE_AGENTS__ENDPOINT": f"sip:127.0.0.1:{agent_port}",
        "SIPEDGE_SECURITY__UNKNOWN_SOURCE": "reject",
        "SIPEDGE_LOGGING__LEVEL": "WARNING",
    }
    # cwd: no config/sipedge.toml there, so defaults + the environment above
    proc = _start("serve", env, tmp_path, capture=True)
    served = Served(proc, http_port, sip_port, agent_port)
    try:
        deadline = time.monotonic() + 30
        served.token = _first_token(proc, deadline)
        _wait_http(f"{served.api}/healthz", deadline)
        yield served
    finally:
        _stop(proc)


def _agent_body() -> dict[str, object]:
    return {
        "agent_config": {
            "agent_name": "Front desk",
            "agent_welcome_message": "Hello!",
            "webhook_url": None,
            "telephony_provider": "sip-trunk",
            "tasks": [
                {
                    "task_type": "conversation",
                    "toolchain": {"execution": "parallel", "pipelines": [["llm"]]},
                    "tools_config": {},
                    "task_config": {},
                }
            ],
        },
        "agent_prompts": {"task_1": {"system_prompt": "Be kind."}},
    }


class _Env:
    """What inbound_env's SIPp helpers need, pointed at the served process."""

    def __init__(self, served: Served, workdir: str) -> None:
        self.port = served.sip_port
        self.agent_port = served.agent_port
        self.workdir = workdir


async def test_api_to_sip_end_to_end(served: Served, tmp_path: Path) -> None:
    async with httpx.AsyncClient(base_url=served.api, headers=served.auth, timeout=10) as api:
        created = await api.post("/v2/agent", json=_agent_body())
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
        trunk_id = trunk.json()["id"]
        assert trunk.json()["health"] == "waiting_for_carrier"
        # The write answered only once the SIP edge routes on it: the agent is routable now.
        agent = (await api.get(f"/v2/agent/{agent_id}")).json()
        assert agent["agent_status"] == "processed"

        carrier, agent_side = await run_pair(
            _Env(served, str(tmp_path)),  # type: ignore[arg-type]
            "uac-answered-expect-200.xml",
            "uas-answer-any.xml",
        )
        assert carrier.returncode == 0, carrier.output
        assert agent_side.returncode == 0, agent_side.output

        calls: list[dict[str, object]] = []
        for _ in range(50):  # records are written in batches, off the call path
            calls = (await api.get(f"/trunk/trunks/{trunk_id}/calls")).json()["items"]
            if calls:
                break
            await asyncio.sleep(0.1)
        assert len(calls) == 1
        call = calls[0]
        assert (call["final_sip_code"], call["decided_by"], call["direction"]) == (
            200,
            "answered",
            "inbound",
        )
        assert (call["agent_id"], call["to"]) == (agent_id, NUMBER)

        for _ in range(50):  # health and last_inbound_at are flushed in the background too
            shown = (await api.get(f"/trunk/trunks/{trunk_id}")).json()
            if shown["health"] == "ready" and shown["last_inbound_at"]:
                break
            await asyncio.sleep(0.1)
        assert shown["health"] == "ready"
        assert shown["last_inbound_at"] is not None
        assert shown["numbers"][0]["last_inbound_at"] is not None
        assert shown["active_calls"] == 0

        # Disable the trunk: the next INVITE (no restart, no wait) meets an unknown source.
        patched = await api.patch(f"/trunk/trunks/{trunk_id}", json={"is_active": False})
        assert patched.status_code == 200
        assert patched.json()["health"] == "disabled"
        replies = await udp_exchange(
            raw_invite(served.sip_port, number=NUMBER, call_id="after-disable@e2e"),
            ("127.0.0.1", served.sip_port),
        )
        assert statuses(replies) == [403]
        assert b'Warning: 399 sipedge "unknown source"' in replies[0]

        # And back on: the same INVITE is routed again (reaches the agent step: 100 first).
        patched = await api.patch(f"/trunk/trunks/{trunk_id}", json={"is_active": True})
        assert patched.status_code == 200
        replies = await udp_exchange(
            raw_invite(served.sip_port, number=NUMBER, call_id="after-enable@e2e"),
            ("127.0.0.1", served.sip_port),
            wait=0.3,
        )
        assert statuses(replies)[:1] == [100]


def test_the_sip_role_serves_its_metrics(tmp_path: Path) -> None:
    # A `sip`-only process has no admin API; its http address serves the Prometheus metrics.
    http_port, sip_port = free_port("tcp"), free_port("udp")
    db = tmp_path / "sipedge.db"
    env = {
        **os.environ,
        "SIPEDGE_DATABASE__URL": f"sqlite:///{db}",
        "SIPEDGE_HTTP__PORT": str(http_port),
        "SIPEDGE_SIP__HOST": "127.0.0.1",
        "SIPEDGE_SIP__PORT": str(sip_port),
        "SIPEDGE_LOGGING__LEVEL": "WARNING",
    }
    proc = _start("sip", env, tmp_path)
    try:
        body, deadline = "", time.monotonic() + 30
        while not body and time.monotonic() < deadline and proc.poll() is None:
            try:
                response = httpx.get(f"http://127.0.0.1:{http_port}/metrics", timeout=1)
                body = response.text if response.status_code == 200 else ""
            except httpx.TransportError:
                time.sleep(0.1)
        assert "sipedge_sip_limit_hits_total" in body, proc.poll()
        assert "sipedge_snapshot_version" in body
    finally:
        _stop(proc)
    assert proc.returncode == 0


def _start(
    role: str, env: dict[str, str], cwd: Path, *, capture: bool = False
) -> subprocess.Popen[str]:
    """``sipedge <role>``; ``capture`` pipes its output (to read the first token from)."""
    return subprocess.Popen(
        [sys.executable, "-m", "sipedge.cli", role],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _first_token(proc: subprocess.Popen[str], deadline: float) -> str:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        if match := TOKEN_LINE.search(line):
            return match.group(1)
    raise AssertionError("the process printed no first token")


def _wait_http(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


async def _first_status(sip_port: int, call_id: str) -> int | None:
    replies = await udp_exchange(
        raw_invite(sip_port, number=NUMBER, call_id=call_id), ("127.0.0.1", sip_port), wait=0.2
    )
    found = statuses(replies)
    return found[0] if found else None


async def _until_status(sip_port: int, wanted: int, tag: str, limit: float) -> float:
    """Seconds until an INVITE is first answered ``wanted``; fails after ``limit``."""
    started = time.monotonic()
    n = 0
    while time.monotonic() - started < limit:
        n += 1
        if await _first_status(sip_port, f"{tag}-{n}@e2e") == wanted:
            return time.monotonic() - started
    raise AssertionError(f"no {wanted} within {limit} s")


@pytest.fixture
def pg_url() -> Iterator[str]:
    url = create_pg_database()  # an empty database; the api process migrates it at start
    try:
        yield url
    finally:
        drop_pg_database(url)


@pytest.mark.postgres
async def test_separate_api_and_sip_processes_share_changes_and_channels(
    tmp_path: Path, pg_url: str
) -> None:
    # Scale-out shape on PostgreSQL + Redis. The `sip` process re-reads the store only every
    # 60 s when it can LISTEN: a trunk created and then disabled through the `api` process must
    # take effect within a few seconds. And the `api` process, which holds no calls, shows the
    # live call on the `sip` node (cluster-wide counts from Redis).
    url = pg_url
    http_port, metrics_port, sip_port = free_port("tcp"), free_port("tcp"), free_port("udp")
    agent_port = free_port("udp")
    base = {
        **os.environ,
        "SIPEDGE_DATABASE__URL": url,
        "SIPEDGE_REDIS__URL": os.environ.get("SIPEDGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "SIPEDGE_SECURITY__UNKNOWN_SOURCE": "reject",
        "SIPEDGE_LOGGING__LEVEL": "WARNING",
        "SIPEDGE_AGENTS__ENDPOINT": f"sip:127.0.0.1:{agent_port}",
    }
    api_env = {**base, "SIPEDGE_HTTP__PORT": str(http_port)}
    api_proc = _start("api", api_env, tmp_path, capture=True)
    sip_proc: subprocess.Popen[str] | None = None
    # The agent: bound (no ICMP errors), never answers, so an accepted call stays up.
    agent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    agent.bind(("127.0.0.1", agent_port))
    try:
        deadline = time.monotonic() + 60
        token = _first_token(api_proc, deadline)
        _wait_http(f"http://127.0.0.1:{http_port}/healthz", deadline)
        sip_env = {
            **base,
            "SIPEDGE_HTTP__PORT": str(metrics_port),
            "SIPEDGE_SIP__HOST": "127.0.0.1",
            "SIPEDGE_SIP__PORT": str(sip_port),
        }
        sip_proc = _start("sip", sip_env, tmp_path)
        _wait_http(f"http://127.0.0.1:{metrics_port}/metrics", deadline)
        assert await _first_status(sip_port, "before@e2e") == 403  # no trunk yet
        auth = {"Authorization": f"Bearer {token}"}
        api_url = f"http://127.0.0.1:{http_port}"
        async with httpx.AsyncClient(base_url=api_url, headers=auth, timeout=10) as api:
            created = await api.post("/v2/agent", json=_agent_body())
            assert created.status_code == 201, created.text
            body = {
                "name": "Loopback carrier",
                "ip_acls": [{"cidr": "127.0.0.1/32"}],
                "numbers": [{"e164": NUMBER, "agent_id": created.json()["agent_id"]}],
            }
            trunk = await api.post("/trunk/trunks", json=body)
            assert trunk.status_code == 201, trunk.text
            trunk_url = f"/trunk/trunks/{trunk.json()['id']}"
            assert (await api.get(trunk_url)).json()["active_calls"] == 0
            assert await _until_status(sip_port, 100, "created", 2.5) < 2.5  # a call, held
            shown = 0
            for _ in range(60):  # the api process reads the counts every 2 s
                shown = (await api.get(trunk_url)).json()["active_calls"]
                if shown:
                    break
                await asyncio.sleep(0.1)
            assert shown == 1
            patched = await api.patch(trunk_url, json={"is_active": False})
            assert patched.status_code == 200
            assert await _until_status(sip_port, 403, "disabled", 2.5) < 2.5
    finally:
        agent.close()
        if sip_proc is not None:
            _stop(sip_proc)
        _stop(api_proc)
    assert api_proc.returncode == 0 and sip_proc is not None and sip_proc.returncode == 0
