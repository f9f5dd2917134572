"""The outbound call path under test: a migrated SQLite store, the admin API (in-process, httpx),
the snapshot loader, ``SipEdge`` and the ``Dialer`` wired as ``sipedge serve`` wires them, with a
real ``ActivityTracker`` (trunk health) and list-backed call records. SIPp plays the carrier
gateways (``uas-carrier-*.xml``) and the agent (``uas-agent-outbound.xml``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from harness import HOST, free_port
from inbound_env import Records
from sipp_runner import SippResult, sipp, wait_bound

from sipedge.api.app import create_app
from sipedge.config import Settings
from sipedge.edge.channels import ChannelLimiter
from sipedge.runtime.active_calls import active_calls_from
from sipedge.runtime.activity import ActivityTracker
from sipedge.runtime.cluster_channels import ChannelStore, ClusterChannels
from sipedge.runtime.dialer import Dialer
from sipedge.runtime.edge_app import SipEdge
from sipedge.runtime.gateway_dns import GatewayDns
from sipedge.runtime.snapshot_loader import SnapshotLoader
from sipedge.store.agents import create_agent
from sipedge.store.changes import ChangeNotifier
from sipedge.store.db import make_engine, make_session_factory
from sipedge.store.migrate import upgrade
from sipedge.store.ownership import Principal
from sipedge.store.tokens import create_token

SCENARIOS = Path(__file__).resolve().parents[2] / "sipp_scenarios"
FROM = "+14155550100"
TO = "+12125550123"
USER, PASSWORD = "carrier-user", "s3cret-Pa55"
T1 = 0.05  # Timer B = 64*T1 = 3.2 s: a silent gateway fails over quickly
FINAL = {"completed", "busy", "no-answer", "failed", "canceled"}


@dataclass
class OutboundEnv:
    edge: SipEdge
    dialer: Dialer
    loader: SnapshotLoader
    tracker: ActivityTracker
    limiter: ChannelLimiter
    records: Records
    client: httpx.AsyncClient
    agent_port: int
    workdir: str
    sessions: Any = None
    clock: list[datetime] = field(default_factory=lambda: [datetime.now(UTC)])
    make_dialer: Callable[[], Dialer] | None = None

    async def restart_dialer(self) -> None:
        """A new dialer on the same store, as after a process restart."""
        await self.dialer.stop()
        assert self.make_dialer is not None
        self.dialer = self.make_dialer()
        self.dialer.start()

    async def agent_id(self, guardrails: tuple[int, int] = (0, 23)) -> str:
        async with self.sessions() as session:
            agent = await create_agent(
                session, owner=Principal("alice"), agent_name="outbound",
                telephony_provider="sip-trunk",
            )  # fmt: skip
            agent.call_start_hour, agent.call_end_hour = guardrails
            await session.commit()
            return agent.id

    async def trunk(self, agent_id: str, gateways: list[tuple[str, int]], **fields: Any) -> str:
        body = {
            "name": "carrier",
            "codecs": "PCMA,PCMU",
            "gateways": [
                {"host": host, "port": port, "priority": i}
                for i, (host, port) in enumerate(gateways)
            ],
            "numbers": [{"e164": FROM, "agent_id": agent_id}],
            **fields,
        }
        response = await self.client.post("/trunk/trunks", json=body)
        assert response.status_code == 201, response.text
        trunk_id: str = response.json()["id"]
        await self.loader.load()
        return trunk_id

    async def place(self, agent_id: str, to: str = TO) -> str:
        response = await self.client.post(
            "/call", json={"agent_id": agent_id, "recipient_phone_number": to}
        )
        assert response.status_code == 201, response.text
        run_id: str = response.json()["run_id"]
        return run_id

    async def ringing_call(self, agent_id: str, gateway_port: int) -> tuple[str, str]:
        """A trunk on the gateway at ``gateway_port`` and a call to it, once it rings:
        (trunk id, run id)."""
        trunk_id = await self.trunk(agent_id, [("127.0.0.1", gateway_port)])
        run_id = await self.place(agent_id)
        ringing = await self.wait_status(run_id, lambda s: s == "ringing")
        assert ringing["status"] == "ringing", ringing
        return trunk_id, run_id

    async def state(self, run_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/call/{run_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def wait_status(
        self, run_id: str, accept: Callable[[str], bool] = FINAL.__contains__, timeout: float = 15
    ) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            await self.dialer.flush()
            state = await self.state(run_id)
            if accept(state["status"]) or loop.time() > deadline:
                return state
            await asyncio.sleep(0.05)

    async def health(self, trunk_id: str) -> str:
        await self.tracker.flush()
        response = await self.client.get(f"/trunk/trunks/{trunk_id}")
        health: str = response.json()["health"]
        return health

    def channels(self, trunk_id: str) -> int:
        return self.limiter.active(trunk_id)


def settings(url: str, agent_port: int, *, ring_timeout: float = 120.0) -> Settings:
    base = Settings(
        database={"url": url},  # type: ignore[arg-type]
        sip={"host": HOST, "port": 5060, "t1": T1, "t2": 0.4},  # type: ignore[arg-type]
        agents={"endpoint": f"sip:{HOST}:{agent_port}"},  # type: ignore[arg-type]
        security={"allow_private_gateways": True},  # type: ignore[arg-type]
        http={"rate_limit_per_minute": 0},  # type: ignore[arg-type]
        outbound={"ring_timeout_seconds": ring_timeout},  # type: ignore[arg-type]
    )
    return base.model_copy(update={"sip": base.sip.model_copy(update={"port": 0})})


@contextlib.asynccontextmanager
async def running(
    workdir: str, *, ring_timeout: float = 120.0, channel_store: ChannelStore | None = None
) -> AsyncIterator[OutboundEnv]:
    """The outbound path; with ``channel_store`` its channel counts are cluster-wide."""
    url = f"sqlite:///{workdir}/sipedge.db"
    upgrade(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    notifier = ChangeNotifier()
    agent_port = free_port("udp")
    config = settings(url, agent_port, ring_timeout=ring_timeout)
    loader = SnapshotLoader(sessions)
    await loader.load()
    unsubscribe = loader.subscribe(notifier)
    limiter = ChannelLimiter()
    tracker = ActivityTracker(sessions, flush_interval=0.1)
    records = Records()
    cluster = None
    if channel_store is not None:
        cluster = ClusterChannels(channel_store, limiter, lease_seconds=60.0, timeout=0.5)
    edge = SipEdge(
        config,
        snapshots=loader,
        limiter=limiter,
        records=records,
        activity=tracker,
        cluster=cluster,
    )
    await edge.start()
    holder: list[datetime] = [datetime.now(UTC)]

    def make_dialer() -> Dialer:
        return Dialer(
            sessions,
            edge,
            loader,
            resolve=GatewayDns(allow_private=True).resolve,
            refresh=loader.load,
            now=lambda: holder[0],
            poll_interval=0.1,
        )

    dialer = make_dialer()
    dialer.start()
    stop_waking = notifier.subscribe(lambda change: env.dialer.wake(change))
    async with sessions() as session:
        token = await create_token(session, user_id="alice")
        await session.commit()
    app = create_app(
        config, engine=engine, notifier=notifier, active_calls=active_calls_from(limiter)
    )
    app.state.services = dataclasses.replace(app.state.services, now=lambda: holder[0])
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://sipedge.test",
        headers={"Authorization": f"Bearer {token}"},
    )
    env = OutboundEnv(
        edge,
        dialer,
        loader,
        tracker,
        limiter,
        records,
        client,
        agent_port,
        workdir,
        sessions,
        holder,
        make_dialer,
    )
    try:
        yield env
    finally:
        stop_waking()
        await env.dialer.stop()
        await edge.stop()
        if cluster is not None:
            await cluster.stop()
        await env.dialer.flush()
        unsubscribe()
        await loader.stop()
        await tracker.stop()
        await client.aclose()
        await engine.dispose()


def carrier_args(scenario: str, port: int, calls: int = 1, tcp: bool = False) -> list[str]:
    return [
        "-sf", str(SCENARIOS / scenario), "-i", HOST, "-p", str(port),
        "-t", "t1" if tcp else "u1", "-m", str(calls), "-timeout", "20", "-timeout_error", "-trace_msg",
    ]  # fmt: skip


def agent_args(env: OutboundEnv, scenario: str) -> list[str]:
    return [
        "-sf", str(SCENARIOS / scenario), "-i", HOST, "-p", str(env.agent_port),
        "-t", "u1", "-m", "1", "-timeout", "20", "-timeout_error", "-trace_msg",
    ]  # fmt: skip


@contextlib.asynccontextmanager
async def carrier(
    env: OutboundEnv, scenario: str, calls: int = 1, *, tcp: bool = False
) -> AsyncIterator[Any]:
    kind = "tcp" if tcp else "udp"
    port = free_port(kind)
    async with sipp(carrier_args(scenario, port, calls, tcp), workdir=env.workdir) as run:
        await wait_bound(port, kind)
        run.port = port
        yield run


@contextlib.asynccontextmanager
async def agent(env: OutboundEnv, scenario: str = "uas-agent-outbound.xml") -> AsyncIterator[Any]:
    async with sipp(agent_args(env, scenario), workdir=env.workdir) as run:
        await wait_bound(env.agent_port, "udp")
        yield run


def ok(result: SippResult, calls: int = 1) -> bool:
    return (
        result.returncode == 0
        and result.stats.get("SuccessfulCall(C)") == str(calls)
        and result.stats.get("FailedCall(C)") == "0"
    )


@contextlib.contextmanager
def blackhole() -> Any:
    """A UDP port that takes every datagram and never answers (a silent gateway)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((HOST, 0))
    sock.setblocking(False)
    try:
        yield sock
    finally:
        sock.close()


def drained(sock: socket.socket) -> list[bytes]:
    got = []
    with contextlib.suppress(BlockingIOError):
        while True:
            got.append(sock.recv(65535))
    return got
