"""The inbound call path under test: ``SipEdge`` started in-process on 127.0.0.1 with a snapshot
built by ``edge.snapshot.build_snapshot``, held by a trivial snapshot source, and list-backed
call-record and activity sinks. SIPp plays the carrier (``uac-*.xml``) and the agent
(``uas-*.xml``) from ``sipp_scenarios/``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from harness import HOST, free_port
from sipp_runner import SippResult, sipp, wait_bound

from sipedge.config import Settings
from sipedge.edge.channels import ChannelLimiter
from sipedge.edge.snapshot import AgentView, NumberView, RoutingSnapshot, TrunkView, build_snapshot
from sipedge.runtime.cluster_channels import ChannelStore, ClusterChannels
from sipedge.runtime.edge_app import SipEdge
from sipedge.runtime.ports import CallRecordEvent, CallStatusSink

SCENARIOS = Path(__file__).resolve().parents[2] / "sipp_scenarios"
NUMBER = "+14155550100"  # number-1 -> agent-1
NUMBER_NO_AGENT = "+14155550101"  # number-2, no agent (falls back to the trunk default, if any)
T1 = 0.05  # Timer B/F/H = 64*T1 = 3.2 s: the agent-down cases stay short


@dataclass
class Records:
    events: list[CallRecordEvent] = field(default_factory=list)

    def record(self, event: CallRecordEvent) -> None:
        self.events.append(event)


@dataclass
class Activity:
    crossed: list[tuple[str, str | None]] = field(default_factory=list)
    outcomes: list[tuple[str, str]] = field(default_factory=list)

    def call_crossed(
        self, *, trunk_id: str, number_id: str | None, direction: str, at: datetime
    ) -> None:
        self.crossed.append((trunk_id, number_id))

    def call_outcome(self, *, trunk_id: str, outcome: str, at: datetime) -> None:
        self.outcomes.append((trunk_id, outcome))


@dataclass
class Snapshots:
    current: RoutingSnapshot


def trunk(**changes: object) -> TrunkView:
    base = TrunkView(
        id="trunk-1",
        channels=10,
        transport="udp",
        codecs=("PCMA", "PCMU"),
        default_inbound_agent_id=None,
        cidrs=("127.0.0.1/32",),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def snapshot(*trunks: TrunkView, version: int = 1) -> RoutingSnapshot:
    trunks = trunks or (trunk(),)
    numbers = [
        NumberView("number-1", "trunk-1", NUMBER, NUMBER[1:], agent_id="agent-1"),
        NumberView("number-2", "trunk-1", NUMBER_NO_AGENT, NUMBER_NO_AGENT[1:]),
    ]
    agents = [AgentView("agent-1"), AgentView("agent-default")]
    return build_snapshot(trunks, numbers, agents, version=version)


@dataclass
class Env:
    edge: SipEdge
    snapshots: Snapshots
    limiter: ChannelLimiter
    records: Records
    activity: Activity
    agent_port: int
    workdir: str

    @property
    def port(self) -> int:
        return self.edge.address[1]

    async def settle(self, timeout: float = 3.0) -> None:
        """Wait until no call is live on the edge."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.edge.active_calls and loop.time() < deadline:
            await asyncio.sleep(0.02)

    async def wait_calls(self, count: int, timeout: float = 5.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.edge.active_calls < count and loop.time() < deadline:
            await asyncio.sleep(0.02)

    def channels_in_use(self) -> int:
        return self.limiter.active("trunk-1")


def settings(agent_port: int, **sip: object) -> Settings:
    unknown = sip.pop("unknown_source", "drop")
    flood = sip.pop("flood", {})
    base = Settings(
        sip={"host": HOST, "port": 5060, "t1": T1, "t2": 0.4, **sip},
        agents={"endpoint": f"sip:{HOST}:{agent_port}"},
        security={"unknown_source": unknown},
        flood=flood,
    )
    # Port 0 (ephemeral) is not a valid setting, but SipEdge supports it: tests bind it.
    return base.model_copy(update={"sip": base.sip.model_copy(update={"port": 0})})


@contextlib.asynccontextmanager
async def running_edge(
    workdir: str,
    snap: RoutingSnapshot | None = None,
    *,
    statuses: CallStatusSink | None = None,
    channel_store: ChannelStore | None = None,
    **sip: object,
) -> AsyncIterator[Env]:
    """An edge on its own ports; with ``channel_store`` its channel counts are cluster-wide
    (``ClusterChannels`` over that store, as ``redis.url`` sets up)."""
    agent_port = free_port("udp")
    snapshots = Snapshots(snap or snapshot())
    limiter = ChannelLimiter()
    cluster = None
    if channel_store is not None:
        cluster = ClusterChannels(channel_store, limiter, lease_seconds=60.0, timeout=0.5)
    env = Env(
        edge=SipEdge(
            settings(agent_port, **sip),
            snapshots=snapshots,
            limiter=limiter,
            records=(records := Records()),
            activity=(activity := Activity()),
            statuses=statuses,
            cluster=cluster,
        ),
        snapshots=snapshots,
        limiter=limiter,
        records=records,
        activity=activity,
        agent_port=agent_port,
        workdir=workdir,
    )
    await env.edge.start()
    try:
        yield env
    finally:
        await env.edge.stop()
        if cluster is not None:
            await cluster.stop()  # the releases of the calls stop() ended reach the store


def carrier_args(env: Env, scenario: str, *, service: str = NUMBER, tcp: bool = False) -> list[str]:
    return [
        "-sf", str(SCENARIOS / scenario), f"{HOST}:{env.port}",
        "-i", HOST, "-p", str(free_port("tcp" if tcp else "udp")),
        "-t", "t1" if tcp else "u1", "-s", service,
        "-m", "1", "-timeout", "15", "-timeout_error", "-trace_msg",
    ]  # fmt: skip


def agent_args(env: Env, scenario: str) -> list[str]:
    return [
        "-sf", str(SCENARIOS / scenario), "-i", HOST, "-p", str(env.agent_port),
        "-t", "u1", "-m", "1", "-timeout", "15", "-timeout_error", "-trace_msg",
    ]  # fmt: skip


async def run_carrier(env: Env, scenario: str, **kw: object) -> SippResult:
    async with sipp(carrier_args(env, scenario, **kw), workdir=env.workdir) as run:  # type: ignore[arg-type]
        return await run.wait(timeout=20)


async def run_pair(
    env: Env, carrier: str, agent: str, **kw: object
) -> tuple[SippResult, SippResult]:
    """The agent SIPp (uas) first, then the carrier SIPp (uac); both must end on their own."""
    async with sipp(agent_args(env, agent), workdir=env.workdir) as agent_run:
        await wait_bound(env.agent_port, "udp")
        async with sipp(carrier_args(env, carrier, **kw), workdir=env.workdir) as carrier_run:  # type: ignore[arg-type]
            carrier_result = await carrier_run.wait(timeout=20)
        agent_result = await agent_run.wait(timeout=10)
    return carrier_result, agent_result


def ok(result: SippResult, calls: int = 1) -> bool:
    return (
        result.returncode == 0
        and result.stats.get("SuccessfulCall(C)") == str(calls)
        and result.stats.get("FailedCall(C)") == "0"
    )


def messages(workdir: str, scenario: str) -> str:
    """Everything SIPp's ``-trace_msg`` logged for runs of ``scenario`` in ``workdir``."""
    stem = scenario.removesuffix(".xml")
    out = []
    for name in sorted(os.listdir(workdir)):
        if name.startswith(stem + "_") and name.endswith("_messages.log"):
            out.append(Path(workdir, name).read_text(errors="replace"))
    return "\n".join(out)


def raw_invite(port: int, host: str = HOST, *, number: str = NUMBER, call_id: str) -> bytes:
    """An INVITE without SDP; ``{SRC}`` stands for the sending port (``udp_exchange`` fills it)."""
    sport = "{SRC}"
    lines = [
        f"INVITE sip:{number}@{HOST}:{port} SIP/2.0",
        f"Via: SIP/2.0/UDP {host}:{sport};branch=z9hG4bK{call_id.replace('@', '')}",
        f"From: <sip:+14155550999@{host}:{sport}>;tag=raw1",
        f"To: <sip:{number}@{HOST}:{port}>",
        f"Call-ID: {call_id}",
        "CSeq: 1 INVITE",
        f"Contact: <sip:raw@{host}:{sport}>",
        "Max-Forwards: 70",
        "Content-Length: 0",
        "",
        "",
    ]
    return "\r\n".join(lines).encode()


async def udp_exchange(
    data: bytes, dest: tuple[str, int], *, source_host: str = HOST, wait: float = 0.6
) -> list[bytes]:
    """Send one datagram from ``source_host`` and collect whatever comes back within ``wait``
    (a plain socket, in a thread: the edge runs on this test's event loop)."""
    return await asyncio.to_thread(_exchange, data, dest, source_host, wait)


def _exchange(data: bytes, dest: tuple[str, int], source_host: str, wait: float) -> list[bytes]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((source_host, 0))
        sock.sendto(data.replace(b"{SRC}", str(sock.getsockname()[1]).encode()), dest)
        got: list[bytes] = []
        deadline = time.monotonic() + wait
        with contextlib.suppress(TimeoutError):
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                got.append(sock.recv(65535))
        return got


def statuses(datagrams: Sequence[bytes]) -> list[int]:
    return [int(d.split(b" ", 2)[1]) for d in datagrams if d.startswith(b"SIP/2.0 ")]
