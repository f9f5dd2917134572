"""``SipEdge``: the SIP side of the process — transports, the transaction layer, the B2BUA.

The one place where stack + edge + storage seams + metrics meet. Every message arrives through a
transport callback and is handled synchronously (no task per message). Before the transaction
layer sees a request outside a live call, its source is screened against the snapshot's carrier
ACL (SPEC §5 step 3), so an unknown source gets nothing at all under ``drop`` — not even the
100 Trying that the INVITE server transaction sends at once — and a stateless 403 under
``reject``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from typing import Any

from sipedge.config import Settings
from sipedge.edge.channels import ChannelLimiter
from sipedge.edge.decisions import MetricReason, Reject, warning_header
from sipedge.edge.flood import FloodConfig, FloodGuard, Verdict
from sipedge.edge.snapshot import RoutingSnapshot
from sipedge.metrics import (
    DROP_CHILDREN,
    FLOOD_CHILDREN,
    INBOUND_CHILDREN,
    CallEnd,
    InboundAction,
    InboundOutcome,
    flood_bans_total,
    snapshot_version,
)
from sipedge.runtime.cluster_channels import ClusterChannels
from sipedge.runtime.handlers import EdgeHandler
from sipedge.runtime.legs import CallTimeouts, EdgeServices
from sipedge.runtime.ports import ActivitySink, CallRecordSink, CallStatusSink, SnapshotSource
from sipedge.runtime.responses import edge_warning, respond
from sipedge.sip.errors import SipError, TransportError
from sipedge.sip.message import Message, Request
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import Address
from sipedge.sip.uri import SipUri, parse_uri
from sipedge.stack.local_address import is_ip_literal
from sipedge.stack.routing import reply_destination, stamp_received
from sipedge.stack.transactions import SipTransport, TransactionLayer
from sipedge.stack.transport_tcp import TcpTransport
from sipedge.stack.transport_udp import UdpTransport

__all__ = ["SipEdge"]

log = logging.getLogger(__name__)

SNAPSHOT_POLL = 1.0  # seconds between checks for a swapped snapshot (also checked per INVITE)
STOP_GRACE = 1.0  # seconds stop() waits for the BYEs it sent to be answered
_BIND_ATTEMPTS = 20


class SipEdge:
    """The inbound call path on UDP and TCP, same port."""

    def __init__(
        self,
        settings: Settings,
        *,
        snapshots: SnapshotSource,
        limiter: ChannelLimiter,
        records: CallRecordSink,
        activity: ActivitySink,
        statuses: CallStatusSink | None = None,
        cluster: ClusterChannels | None = None,
    ) -> None:
        self.settings = settings
        self.cluster = cluster  # cluster-wide channel counts (redis.url); None: this node's own
        self.snapshots = snapshots
        self.limiter = limiter
        self.records = records
        self.activity = activity
        self.statuses = statuses  # call status changes for the webhooks (None: not reported)
        self.unknown_source = settings.security.unknown_source
        target = parse_uri(settings.agents.endpoint)
        if not isinstance(target, SipUri):
            raise ValueError("agents.endpoint must be a sip: URI")
        self.agent_target = target
        self.agent_peer: Address = (target.host, target.port or 5060)
        self.flood = FloodGuard(FloodConfig(**settings.flood.model_dump()))
        self._trusted: frozenset[str] = frozenset()  # gateway addresses of the snapshot in force
        self._udp: UdpTransport | None = None
        self._tcp: TcpTransport | None = None
        self._layer: TransactionLayer | None = None
        self._svc: EdgeServices | None = None
        self._seen: RoutingSnapshot | None = None
        self._poll: asyncio.TimerHandle | None = None

    # --- lifecycle -----------------------------------------------------------------------------

    @property
    def address(self) -> Address:
        """The bound (host, port), the same for UDP and TCP."""
        if self._udp is None:
            raise RuntimeError("SipEdge not started")
        return self._udp.local_address

    @property
    def services(self) -> EdgeServices:
        if self._svc is None:
            raise RuntimeError("SipEdge not started")
        return self._svc

    def transport(self, kind: str) -> SipTransport:
        """The bound transport for a trunk's ``transport`` ("udp" or "tcp")."""
        transport: SipTransport | None = self._tcp if kind == "tcp" else self._udp
        if transport is None:
            raise RuntimeError("SipEdge not started")
        return transport

    @property
    def active_calls(self) -> int:
        return len(self._svc.live) if self._svc is not None else 0

    async def start(self) -> None:
        sip = self.settings.sip
        loop = asyncio.get_running_loop()
        timers = TimerConfig(t1=sip.t1, t2=sip.t2, t4=sip.t4)
        self.agent_peer = await _resolve_once(loop, self.agent_peer)
        layer = TransactionLayer(
            _Unbound(),
            config=timers,
            loop=loop,
            max_transactions=sip.max_transactions,
            retry_after=self.settings.flood.retry_after_seconds,
            overload_warning=edge_warning("overloaded"),
            defer_tu=True,
        )
        self._layer = layer
        self._udp, self._tcp = await self._bind(sip.host, sip.port, layer)
        layer.attach(self._udp)
        layer.attach(self._tcp)
        agent_transport: SipTransport = (
            self._tcp if self.agent_target.transport == "tcp" else self._udp
        )
        # Empty means "per peer": the bound address, or the route's source on a wildcard bind.
        advertised = self.settings.sip.advertised_address
        svc = EdgeServices(
            loop=loop,
            layer=layer,
            timers=timers,
            advertised=advertised,
            agent_target=self.agent_target,
            agent_peer=self.agent_peer,
            agent_transport=agent_transport,
            max_call_duration=sip.max_call_duration,
            timeouts=CallTimeouts(
                agent_ring=self.settings.agents.ring_timeout_seconds,
                bridge_answer=self.settings.agents.bridge_answer_timeout_seconds,
                carrier_ring=self.settings.outbound.ring_timeout_seconds,
            ),
            limiter=self.limiter,
            records=self.records,
            activity=self.activity,
            statuses=self.statuses,
            cluster=self.cluster,
        )
        self._svc = svc
        layer.tu = EdgeHandler(
            svc,
            snapshots=self.snapshots,
            unknown_source=self.unknown_source,
            observe=self.observe_snapshot,
            flood=self.flood,
            max_dialogs=sip.max_dialogs,
        )
        self._seen = self.snapshots.current
        self._trusted = _gateway_addresses(self._seen)
        snapshot_version.set(self._seen.version)
        self._poll = loop.call_later(SNAPSHOT_POLL, self._poll_snapshot)
        log.info("SIP edge listening on %s:%d (UDP, TCP)", *self.address)

    async def _bind(
        self, host: str, port: int, layer: TransactionLayer
    ) -> tuple[UdpTransport, TcpTransport]:
        sip = self.settings.sip
        for _ in range(_BIND_ATTEMPTS if port == 0 else 1):
            udp = await UdpTransport.create(
                host,
                port,
                self._on_transport_message,
                max_size=sip.max_message_bytes,
                limits=sip.limits(),
                admit=self._admit,
                receive_buffer=sip.udp_receive_buffer,
            )
            try:
                tcp = await TcpTransport.create(
                    host,
                    udp.local_address[1],
                    self._on_transport_message,
                    max_size=sip.max_message_bytes,
                    limits=sip.limits(),
                    admit=self._admit,
                    idle_timeout=sip.tcp_idle_timeout,
                    max_connections=sip.tcp_max_connections,
                    max_per_peer=sip.tcp_max_connections_per_peer,
                    on_connect_error=layer.connect_failed,
                )
            except TransportError:
                await udp.close()
                if port != 0:
                    raise
                continue
            return udp, tcp
        raise TransportError(f"no port free for both UDP and TCP on {host}")

    async def stop(self) -> None:
        """End live calls (BYE both legs / 503 + CANCEL), release channels, close transports."""
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None
        svc, layer = self._svc, self._layer
        if svc is not None:
            for call in list(svc.live.values()):
                call.terminate(CallEnd.SHUTDOWN)
        if layer is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + STOP_GRACE
            while svc is not None and svc.byes and loop.time() < deadline:
                await asyncio.sleep(0.02)
            layer.close()
        if svc is not None:
            svc.call_deadlines.close()
        for transport in (self._tcp, self._udp):
            if transport is not None:
                with contextlib.suppress(TransportError):
                    await transport.close()
        self._udp = self._tcp = None

    # --- snapshots -----------------------------------------------------------------------------

    def end_calls_of_trunk(self, trunk_id: str) -> int:
        """End every live call on ``trunk_id`` (deleted trunk); returns how many."""
        if self._svc is None:
            return 0
        calls = self._svc.calls_of_trunk(trunk_id)
        for call in calls:
            call.terminate(CallEnd.TRUNK_DELETED)
        return len(calls)

    def observe_snapshot(self, snapshot: RoutingSnapshot) -> None:
        """A snapshot is in force: calls on trunks it no longer holds end."""
        if snapshot is self._seen:
            return
        self._seen = snapshot
        self._trusted = _gateway_addresses(snapshot)
        snapshot_version.set(snapshot.version)
        if self._svc is None:
            return
        gone = {c.route.trunk.id for c in self._svc.live.values()} - set(snapshot.trunks)
        for trunk_id in gone:
            self.end_calls_of_trunk(trunk_id)

    def _poll_snapshot(self) -> None:
        self._poll = None
        try:
            self.observe_snapshot(self.snapshots.current)
        finally:
            if self._svc is not None and self._udp is not None:
                loop = self._svc.loop
                self._poll = loop.call_later(SNAPSHOT_POLL, self._poll_snapshot)

    # --- flood protection (before any parsing) ------------------------------------------------

    def _admit(self, ip: str) -> bool:
        """Per-source budget: carriers (ACL'd or our gateways) get the carrier rate, anyone
        else the unknown-source rate; the agent runtime is ours and never throttled."""
        if ip == self.agent_peer[0]:
            return True
        now = time.monotonic()
        if self.flood.is_banned(ip, now):
            # Before the ACL lookup: a banned flooder costs two dictionary probes per packet.
            FLOOD_CHILDREN[Verdict.BANNED.value].inc()
            return False
        is_carrier = ip in self._trusted or bool(self.snapshots.current.acl.trunks_for(ip))
        verdict = self.flood.check(ip, is_carrier, now)
        if verdict is Verdict.ALLOW:
            return True
        FLOOD_CHILDREN[verdict.value].inc()
        if verdict is Verdict.BAN:
            flood_bans_total.inc()
        return False

    # --- the pre-transaction screen ------------------------------------------------------------

    def _on_transport_message(self, msg: Message, source: Address, name: str, conn: Any) -> None:
        layer, svc = self._layer, self._svc
        if layer is None or svc is None:
            return
        if isinstance(msg, Request):
            try:
                admitted = self._screen(msg, source, svc, conn)
            except SipError as exc:
                log.debug("unscreenable request from %s dropped: %s", source, exc.reason)
                return
            if not admitted:
                return
        layer.on_transport_message(msg, source, name, conn)

    def _screen(self, request: Request, source: Address, svc: EdgeServices, conn: Any) -> bool:
        """SPEC §5 step 3 before any transaction state: a request outside a live call from an
        address no carrier range admits is dropped, or refused statelessly with 403."""
        if request.call_id in svc.calls or source == self.agent_peer:
            return True
        snapshot = self.snapshots.current
        if snapshot.acl.trunks_for(source[0]):
            return True
        is_invite = request.method == "INVITE"
        if self.unknown_source == "drop" or request.method == "ACK":
            DROP_CHILDREN[InboundOutcome.UNKNOWN_SOURCE].inc()
            if is_invite:
                INBOUND_CHILDREN[(InboundAction.DROPPED, InboundOutcome.UNKNOWN_SOURCE)].inc()
            return False
        reject = Reject(403, "unknown source", MetricReason.UNKNOWN_SOURCE)
        via = stamp_received(request, source)
        response = respond(request, 403, to_tag=svc.new_tag(), warning=warning_header(reject))
        transport: SipTransport | None = conn if isinstance(conn, UdpTransport) else self._tcp
        if transport is None:
            return False
        dest = source if transport.reliable else reply_destination(via, source)
        try:
            transport.send_message(response, dest)
        except TransportError as exc:
            log.debug("403 to %s failed: %s", source, exc.reason)
        if is_invite:
            INBOUND_CHILDREN[(InboundAction.REJECTED, InboundOutcome.UNKNOWN_SOURCE)].inc()
        return False


class _Unbound:
    """The layer's TU until the handler (which needs the layer) exists: nothing arrives yet."""

    def on_request(self, *args: Any) -> None:
        return None

    def on_response(self, *args: Any) -> None:
        return None

    def on_terminated(self, *args: Any) -> None:
        return None


async def _resolve_once(loop: asyncio.AbstractEventLoop, peer: Address) -> Address:
    """The agent endpoint as an address literal, looked up once at start.

    Sending to a name would resolve it (blocking) on every message of every call.
    """
    host, port = peer
    if is_ip_literal(host):
        return peer
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    except OSError as exc:
        raise TransportError(f"agents.endpoint host does not resolve: {exc}") from exc
    return (str(infos[0][4][0]), port)


def _gateway_addresses(snapshot: RoutingSnapshot) -> frozenset[str]:
    """Where outbound calls go: their responses come from there, at carrier rates."""
    return frozenset(
        ip
        for trunk in snapshot.trunks.values()
        for gateway in trunk.gateways
        for ip in (*gateway.resolved_ips, gateway.host)
    )
