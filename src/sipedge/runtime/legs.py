"""What the calls share: the ``Leg`` value (one dialog side of a call) and ``EdgeServices`` (the
call registry, our addresses, and sending through the transaction layer)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from sipedge.edge.channels import ChannelLimiter
from sipedge.metrics import active_calls
from sipedge.runtime.call_timers import call_deadlines
from sipedge.runtime.cluster_channels import ClusterChannels
from sipedge.runtime.messages import via_value
from sipedge.runtime.ports import ActivitySink, CallRecordSink, CallStatusSink, NoStatuses
from sipedge.runtime.responses import contact_value
from sipedge.sip.dialog import Dialog, DialogError
from sipedge.sip.errors import TransportError
from sipedge.sip.message import Message, Request, Response
from sipedge.sip.randomness import token_hex, uuid4
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import Address
from sipedge.sip.uri import SipUri
from sipedge.stack.local_address import advertised_host
from sipedge.stack.transactions import ClientTransaction, ServerTransaction, SipTransport

if TYPE_CHECKING:
    from sipedge.runtime.b2bua import Call
    from sipedge.stack.transactions import TransactionLayer

__all__ = ["CallTimeouts", "EdgeServices", "Leg"]

log = logging.getLogger(__name__)

# Agent-INVITE 2xx that arrived after their call ended: kept to re-send the ACK (bounded).
_MAX_ORPHANS = 4096


@dataclass(frozen=True, slots=True)
class CallTimeouts:
    """Seconds a call waits for an answer (config ``[agents]`` and ``[outbound]``)."""

    # Timer C in spirit (RFC 3261 §16.6 step 11): an agent that rings but never answers.
    agent_ring: float = 180.0
    # Outbound: the agent must answer the leg bridged to an answered carrier call within this.
    bridge_answer: float = 15.0
    # Outbound: a ringing carrier leg is CANCELled after this (no-answer).
    carrier_ring: float = 120.0


@dataclass(slots=True, eq=False)
class Leg:
    """One side of a bridged call. ``peer`` is where in-dialog requests go: the carrier's source
    address (NAT-safe, and the TCP connection it opened) or the agent endpoint."""

    side: Literal["carrier", "agent"]
    call_id: str
    transport: SipTransport
    peer: Address
    dialog: Dialog | None = None
    # Our 2xx in flight on this leg (initial INVITE or re-INVITE), retransmitted until the ACK.
    ok: Response | None = None
    ok_tx: ServerTransaction | None = None
    ok_interval: float = 0.0
    ok_elapsed: float = 0.0
    reinvite_ack: Request | None = None  # our ACK for the peer's 2xx to a relayed re-INVITE
    # CSeq of a request we relayed onto this leg -> (server tx on the other leg, its request).
    pending: dict[int, tuple[ServerTransaction, Request]] = field(default_factory=dict)


class EdgeServices:
    """Registry of live calls by both legs' Call-IDs, plus the helpers every call uses."""

    def __init__(
        self,
        *,
        loop: asyncio.AbstractEventLoop,
        layer: TransactionLayer,
        timers: TimerConfig,
        advertised: str,
        agent_target: SipUri,
        agent_peer: Address,
        agent_transport: SipTransport,
        max_call_duration: float,
        timeouts: CallTimeouts = CallTimeouts(),
        limiter: ChannelLimiter,
        records: CallRecordSink,
        activity: ActivitySink,
        statuses: CallStatusSink | None = None,
        cluster: ClusterChannels | None = None,
    ) -> None:
        self.loop = loop
        self.layer = layer
        self.timers = timers
        self.advertised = advertised
        self.agent_target = agent_target
        self.agent_peer = agent_peer
        self.agent_transport = agent_transport
        self.max_call_duration = max_call_duration
        self.timeouts = timeouts
        self.limiter = limiter
        self.cluster = cluster  # cluster-wide channel counts (redis.url); None: this node only
        self.records = records
        self.activity = activity
        self.statuses: CallStatusSink = statuses if statuses is not None else NoStatuses()
        self.calls: dict[str, Call] = {}  # carrier and agent Call-IDs -> call
        self.live: dict[str, Call] = {}  # run_id -> call
        # Agent Call-ID -> the ACK of a 2xx after the end, where it went (bounded, cleared when
        # full: a record outlives its 2xx retransmissions, 64*T1, by design).
        self.orphans: dict[str, tuple[Request, Address, SipTransport]] = {}
        self.byes: set[ClientTransaction] = set()  # our BYEs not yet answered (stop() waits)
        self.call_deadlines = call_deadlines(loop)  # every call's CallTimers

    async def confirm_channel(self, trunk_id: str, limit: int, call_id: str) -> bool:
        """Whether the cluster agrees to the channel ``call_id`` already took on this node
        (always, without ``redis.url``); on a refusal the local channel goes back at once."""
        if self.cluster is None:
            return True
        held = await self.cluster.confirm(trunk_id, limit, call_id)
        if not held:
            self.limiter.release(call_id)
        return held

    def release_channel(self, trunk_id: str, call_id: str) -> None:
        """The one way a call gives its channel back: this node's count now, the cluster's
        lease in the background. Idempotent, like ``ChannelLimiter.release``."""
        if self.limiter.release(call_id) and self.cluster is not None:
            self.cluster.release(trunk_id, call_id)

    # --- addresses -----------------------------------------------------------------------------

    def new_tag(self) -> str:
        return token_hex(6)

    def new_run_id(self) -> str:
        return str(uuid4())

    def local_host(self, transport: SipTransport, peer: Address) -> str:
        """Our address as `peer` must see it (the configured one, or the route's source)."""
        return advertised_host(self.advertised, transport.local_address[0], peer[0])

    def via(self, transport: SipTransport, peer: Address) -> str:
        host = self.local_host(transport, peer)
        return via_value(transport.name, host, transport.local_address[1])

    def contact(self, transport: SipTransport, peer: Address) -> str:
        host = self.local_host(transport, peer)
        return contact_value(host, transport.local_address[1], transport.name)

    # --- registry ------------------------------------------------------------------------------

    def register(self, call: Call) -> None:
        self.calls[call.carrier.call_id] = call
        self.calls[call.agent.call_id] = call
        self.live[call.run_id] = call
        active_calls.inc()

    def forget(self, call: Call) -> None:
        for call_id in (call.carrier.call_id, call.agent.call_id):
            if self.calls.get(call_id) is call:
                del self.calls[call_id]
        self.live.pop(call.run_id, None)

    def calls_of_trunk(self, trunk_id: str) -> list[Call]:
        return [c for c in self.live.values() if c.route.trunk.id == trunk_id]

    # --- sending -------------------------------------------------------------------------------

    def send(self, request: Request, leg: Leg) -> ClientTransaction:
        """A request on ``leg`` as a client transaction (failures come back as terminations)."""
        return self.layer.send_request(request, leg.peer, leg.transport)

    def send_stateless(self, msg: Message, leg: Leg, dest: Address | None = None) -> None:
        try:
            self.layer.send_stateless(msg, dest or leg.peer, leg.transport)
        except TransportError as exc:
            log.debug("stateless send on the %s leg failed: %s", leg.side, exc.reason)

    def send_bye(self, leg: Leg) -> None:
        if leg.dialog is None:
            return
        try:
            bye = leg.dialog.create_request("BYE")
        except DialogError as exc:
            log.debug("no BYE on the %s leg: %s", leg.side, exc.reason)
            return
        tx = self.send(bye, leg)
        if not tx.fsm.terminated:
            self.byes.add(tx)

    def clean_up_orphan(self, response: Response, tx: ClientTransaction | None) -> None:
        """An agent 2xx whose call already ended (CANCEL race): ACK it and hang it up. Its
        retransmissions (which reach us without their transaction, RFC 6026 Accepted) get the
        same ACK again."""
        call_id = response.call_id
        known = self.orphans.get(call_id)
        if known is not None:
            self._send_raw(*known)
            return
        if tx is None:
            return
        try:
            dialog = Dialog.uac(tx.request, response)
            ack, bye = dialog.create_request("ACK"), dialog.create_request("BYE")
        except DialogError:
            return
        if len(self.orphans) >= _MAX_ORPHANS:
            self.orphans.clear()
        self.orphans[call_id] = (ack, tx.dest, tx.transport)
        self._send_raw(ack, tx.dest, tx.transport)
        self.layer.send_request(bye, tx.dest, tx.transport)

    def _send_raw(self, msg: Message, dest: Address, transport: SipTransport) -> None:
        try:
            self.layer.send_stateless(msg, dest, transport)
        except TransportError as exc:
            log.debug("orphan ACK failed: %s", exc.reason)
