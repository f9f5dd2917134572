"""The asyncio transaction layer: owns the RFC 3261 §17 FSMs, matches messages to them, runs
their timers and sends through the transports.

Shape (see STYLE.md, "What a fast Python SIP path looks like"):
- no coroutine or task per message or per transaction: transports call ``on_message`` from their
  ``datagram_received``/``data_received`` callbacks and everything runs synchronously from there;
- one shared deadline heap (``stack.deadlines``) ticked by a single ``loop.call_at`` handle
  instead of a timer handle per FSM timer;
- the TU is one object with three callbacks (``TransactionUser``).

Stateless parts (RFC 3261 §17, §18): an ACK that matches no transaction (the ACK for a 2xx, its
own "transaction" per §17.1.1.3) and a response that matches no client transaction (2xx
retransmissions after Timer M, forks) go to the TU with ``tx=None``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol, TypeAlias

from sipedge.metrics import LIMIT_CHILDREN, SipLimit
from sipedge.sip.dialog import default_branch
from sipedge.sip.errors import SipError, TransportError
from sipedge.sip.keys import (
    ClientKey,
    LegacyServerKey,
    ServerKey,
    cancel_target_key,
    client_key,
    server_key,
)
from sipedge.sip.message import Message, Request, Response
from sipedge.sip.randomness import token_hex
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import (
    Address,
    CancelSent,
    CancelTimer,
    Deliver,
    Event,
    Received,
    Send,
    SendResponse,
    Start,
    StartTimer,
    Terminated,
    TerminationReason,
    TimerFired,
    TransportFailed,
    TxState,
    build_response,
)
from sipedge.sip.transaction_client import InviteClientTransaction, NonInviteClientTransaction
from sipedge.sip.transaction_server import InviteServerTransaction, NonInviteServerTransaction
from sipedge.stack.deadlines import DeadlineHeap
from sipedge.stack.local_address import advertised_host
from sipedge.stack.routing import reply_destination, stamp_received
from sipedge.stack.wait_records import WaitRecord, WaitRecords

__all__ = [
    "AnyTransaction",
    "ClientTransaction",
    "ServerTransaction",
    "SipTransport",
    "TransactionLayer",
    "TransactionUser",
]

log = logging.getLogger(__name__)


class SipTransport(Protocol):
    """What the layer needs from a transport (adapted from ``stack.transport_udp/tcp``)."""

    @property
    def name(self) -> str:
        """The Via transport token: "UDP" or "TCP"."""
        ...

    @property
    def reliable(self) -> bool: ...

    @property
    def local_address(self) -> Address:
        """Host and port we put in Via sent-by."""
        ...

    def send_message(self, msg: Message, dest: Address) -> None:
        """Send, raising ``TransportError`` on a fatal failure."""
        ...

    def send(self, data: bytes, dest: Address) -> None:
        """Send bytes already serialised (a retired transaction's answer to a retransmission)."""
        ...


class TransactionUser(Protocol):
    def on_request(
        self,
        request: Request,
        tx: ServerTransaction | None,
        source: Address,
        transport: SipTransport,
    ) -> None:
        """A new request (``tx`` set; answer through ``tx.respond``), an ACK for a 2xx matched to
        an Accepted INVITE transaction (``tx`` set), or a stray ACK (``tx`` None)."""
        ...

    def on_response(self, response: Response, tx: ClientTransaction | None) -> None:
        """A response for a client transaction, or a stray one (``tx`` None)."""
        ...

    def on_terminated(self, tx: AnyTransaction, reason: TerminationReason) -> None:
        """A transaction ended; TIMEOUT and TRANSPORT_ERROR are failures the TU must act on."""
        ...


class ServerTransaction:
    """The TU's handle on a server transaction: its request, state and ``respond``."""

    __slots__ = ("fsm", "key", "layer", "source", "timers", "transport")

    def __init__(
        self,
        layer: TransactionLayer,
        transport: SipTransport,
        fsm: InviteServerTransaction | NonInviteServerTransaction,
        key: ServerKey | LegacyServerKey,
        source: Address,
    ) -> None:
        self.layer = layer
        self.transport = transport
        self.fsm = fsm
        self.key = key
        self.source = source
        self.timers: dict[str, int] = {}  # timer name -> seq of its live heap entry

    @property
    def request(self) -> Request:
        return self.fsm.request

    @property
    def state(self) -> TxState:
        return self.fsm.state

    def respond(self, response: Response) -> None:
        self.layer.send_response(self, response)


class ClientTransaction:
    """The TU's handle on a client transaction it started with ``send_request``."""

    __slots__ = ("dest", "fsm", "key", "layer", "timers", "transport")

    def __init__(
        self,
        layer: TransactionLayer,
        transport: SipTransport,
        fsm: InviteClientTransaction | NonInviteClientTransaction,
        key: ClientKey,
        dest: Address,
    ) -> None:
        self.layer = layer
        self.transport = transport
        self.fsm = fsm
        self.key = key
        self.dest = dest
        self.timers: dict[str, int] = {}

    @property
    def request(self) -> Request:
        return self.fsm.request

    @property
    def state(self) -> TxState:
        return self.fsm.state


AnyTransaction: TypeAlias = ServerTransaction | ClientTransaction


class TransactionLayer:
    """Owns every transaction of one SIP process: two dicts (server, client) keyed by
    ``sip.keys``, one deadline heap for their timers, and the TU callbacks."""

    def __init__(
        self,
        tu: TransactionUser,
        *,
        config: TimerConfig | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        new_branch: Callable[[], str] | None = None,
        max_transactions: int | None = None,
        retry_after: int = 5,
        overload_warning: str | None = None,
        defer_tu: bool = False,
    ) -> None:
        self.tu = tu
        # defer_tu: TU callbacks run from the loop's ready queue (in order) instead of inside the
        # transport callback, so every datagram already read gets its transaction-level answer
        # (100 Trying, a retransmitted response) before any call logic runs; a burst's first
        # responses do not wait behind the calls' work.
        self._defer = defer_tu
        # At this many live transactions (server + client) a new request is refused with a
        # stateless 503 + Retry-After (sip.max_transactions); None: no cap. ``retry_after`` is
        # the seconds every 503 of this process names (flood.retry_after_seconds).
        self.max_transactions = max_transactions
        self.retry_after = retry_after
        # The Warning value (RFC 3261 §20.43) of that 503, naming the rule for the peer.
        self.overload_warning = overload_warning
        self.config = config or TimerConfig()
        self._loop = loop or asyncio.get_running_loop()
        self._transports: dict[str, SipTransport] = {}
        self._server: dict[ServerKey | LegacyServerKey, ServerTransaction] = {}
        self._client: dict[ClientKey, ClientTransaction] = {}
        self._deadlines: DeadlineHeap[AnyTransaction] = DeadlineHeap(self._loop, self._timer_fired)
        # Transactions that only wait out their last timer, as plain records (stack.wait_records).
        self._waiting = WaitRecords(self._loop)
        self._wait_transports: dict[str, SipTransport] = {}
        self._new_branch = new_branch or default_branch

    # --- introspection (tests, metrics) ------------------------------------------------------

    @property
    def server_count(self) -> int:
        """Server transactions, those waiting out their last timer included."""
        return len(self._server) + len(self._waiting.server)

    @property
    def client_count(self) -> int:
        return len(self._client) + len(self._waiting.client)

    @property
    def timer_count(self) -> int:
        return self._deadlines.live

    def close(self) -> None:
        self._deadlines.close()
        self._waiting.close()

    # --- from the transports -----------------------------------------------------------------

    def attach(self, transport: SipTransport) -> None:
        """Register a transport so ``on_transport_message`` can find it by its name."""
        self._transports[transport.name] = transport

    def on_transport_message(
        self, msg: Message, source: Address, transport_name: str, conn: object
    ) -> None:
        """The ``on_message`` callback of ``UdpTransport``/``TcpTransport``. Sending goes through
        the attached endpoint, which finds a TCP connection by the peer address."""
        transport = self._transports.get(transport_name)
        if transport is None:
            log.warning("message on unattached transport %s dropped", transport_name)
            return
        self.on_message(msg, source, transport)

    def connect_failed(self, dest: Address, error: TransportError) -> None:
        """``TcpTransport``'s ``on_connect_error``: every transaction sending to ``dest`` learns
        of the failure (RFC 3261 §17.1.1.2, §17.1.2.2, §17.2.4)."""
        now = self._loop.time()
        failed: list[AnyTransaction] = [t for t in self._client.values() if t.dest == dest]
        failed += [t for t in self._server.values() if t.fsm.dest == dest]
        for tx in failed:
            self._run(tx, TransportFailed(error.reason), now)

    def on_message(self, msg: Message, source: Address, transport: SipTransport) -> None:
        """Entry point for every parsed message a transport receives."""
        try:
            if isinstance(msg, Request):
                self._on_request(msg, source, transport)
            else:
                self._on_response(msg)
        except SipError as exc:
            # A header the matcher needs is malformed: nothing sensible can answer it.
            log.debug("dropping unmatchable %r from %s: %s", msg, source, exc.reason)

    def _on_request(self, request: Request, source: Address, transport: SipTransport) -> None:
        key = server_key(request)
        if key is None:
            return
        now = self._loop.time()
        tx = self._server.get(key)
        if tx is not None:
            self._run(tx, Received(request), now)
            return
        waiting = self._waiting.server.get(key)
        if waiting is not None:
            _, passes_up, resend, dest, transport_name = waiting
            if request.method == "ACK":
                if passes_up:  # RFC 6026 §8.7: the ACK of the 2xx is the TU's
                    self._to_tu(self._stray, request, source, transport)
            elif resend is not None:  # §17.2.2: a retransmission gets the final response again
                self._resend(resend, dest, transport_name)
            return
        if request.method == "ACK":
            # §17.2.3 no match: the ACK for a 2xx (or a late ACK); the TU's business.
            self._to_tu(self._stray, request, source, transport)
            return
        reliable = transport.reliable
        cap = self.max_transactions
        if cap is not None and self.server_count + self.client_count >= cap:
            self._refuse_over_cap(request, source, transport)
            return
        # RFC 3261 §18.2.1 / RFC 3581 §4: record received/rport in the top Via before a response
        # copies it. Only for a new transaction: retransmissions are answered from the copy.
        via = stamp_received(request, source)
        # §18.2.2 / RFC 3581: back on the connection when reliable, else to the source IP and
        # the rport or sent-by port.
        dest = source if reliable else reply_destination(via, source)
        fsm: InviteServerTransaction | NonInviteServerTransaction
        if request.method == "INVITE":
            fsm = InviteServerTransaction(request, dest, reliable, self.config)
        else:
            fsm = NonInviteServerTransaction(request, dest, reliable, self.config)
        tx = ServerTransaction(self, transport, fsm, key, source)
        self._server[key] = tx
        self._run(tx, Received(request), now)

    def _refuse_over_cap(self, request: Request, source: Address, transport: SipTransport) -> None:
        """sip.max_transactions reached: answer 503 + Retry-After without keeping any state
        (RFC 3261 §21.5.4); the client retries later, retransmissions get the same answer."""
        LIMIT_CHILDREN[SipLimit.TRANSACTIONS].inc()
        via = stamp_received(request, source)
        busy = build_response(request, 503, "Service Unavailable", to_tag=token_hex(6))
        busy.headers.add("Retry-After", str(self.retry_after))
        if self.overload_warning is not None:
            busy.headers.add("Warning", self.overload_warning)
        dest = source if transport.reliable else reply_destination(via, source)
        try:
            transport.send_message(busy, dest)
        except TransportError as exc:
            log.debug("503 (transaction limit) to %s failed: %s", source, exc.reason)

    def _on_response(self, response: Response) -> None:
        key = client_key(response)
        tx = self._client.get(key) if key is not None else None
        if tx is None:
            waiting = self._waiting.client.get(key) if key is not None else None
            if waiting is not None:
                _, passes_up, resend, dest, transport_name = waiting
                if response.status >= 300 and resend is not None:
                    self._resend(resend, dest, transport_name)  # §17.1.1.2: the ACK again
                elif 200 <= response.status < 300 and passes_up:
                    self._to_tu(self._stray, response, None, None)  # RFC 6026 §8.4
                return
            self._to_tu(self._stray, response, None, None)
            return
        self._run(tx, Received(response), self._loop.time())

    # --- from the TU -------------------------------------------------------------------------

    def send_request(
        self, request: Request, dest: Address, transport: SipTransport
    ) -> ClientTransaction:
        """Start a client transaction. A request without Via gets ours with a new branch; a CANCEL
        must carry its INVITE's Via (RFC 3261 §9.1) and so keeps it."""
        if request.method == "ACK":
            raise ValueError("an ACK is not a transaction: use send_stateless")
        key: ClientKey | None
        if "Via" not in request.headers:
            branch = self._new_branch()
            request.headers.prepend("Via", self.via_value(transport, branch, dest=dest))
            key = ClientKey(branch, request.method)  # our own Via: no need to parse it back
        else:
            key = client_key(request)
        if key is None:
            raise ValueError("request top Via has no branch")
        fsm: InviteClientTransaction | NonInviteClientTransaction
        if request.method == "INVITE":
            fsm = InviteClientTransaction(request, dest, transport.reliable, self.config)
        else:
            fsm = NonInviteClientTransaction(request, dest, transport.reliable, self.config)
        tx = ClientTransaction(self, transport, fsm, key, dest)
        self._client[key] = tx
        self._run(tx, Start(), self._loop.time())
        if request.method == "CANCEL":
            invite = self._client.get(ClientKey(key.branch, "INVITE"))
            if invite is not None:
                self._run(invite, CancelSent(), self._loop.time())
        return tx

    def send_response(self, tx: ServerTransaction, response: Response) -> None:
        self._run(tx, SendResponse(response), self._loop.time())

    def send_stateless(self, msg: Message, dest: Address, transport: SipTransport) -> None:
        """Send outside any transaction (the ACK for a 2xx, a stateless rejection)."""
        transport.send_message(msg, dest)

    def find_invite(self, cancel: Request) -> ServerTransaction | None:
        """The INVITE server transaction a CANCEL targets (RFC 3261 §9.2), if it still works."""
        key = cancel_target_key(cancel)
        return self._server.get(key) if key is not None else None

    def knows_invite(self, cancel: Request) -> bool:
        """Whether the INVITE a CANCEL targets still has a transaction, working or waiting out
        its last timer (§9.2: 200 to the CANCEL, else 481)."""
        key = cancel_target_key(cancel)
        return key is not None and (key in self._server or key in self._waiting.server)

    def via_value(
        self, transport: SipTransport, branch: str | None = None, *, dest: Address | None = None
    ) -> str:
        host, port = transport.local_address
        if dest is not None:
            host = advertised_host("", host, dest[0])
        return f"SIP/2.0/{transport.name} {host}:{port};branch={branch or self._new_branch()};rport"

    # --- running FSMs ------------------------------------------------------------------------

    def _run(self, tx: AnyTransaction, event: Event, now: float) -> None:
        fsm = tx.fsm
        failure: str | None = None
        # Timers started in this batch are armed after it: a transaction that is left with only
        # its last wait retires to a record instead, and its timer never touches the heap.
        starts: dict[str, float] = {}
        for action in fsm.handle(event, now):
            if isinstance(action, Send):
                try:
                    tx.transport.send_message(action.msg, action.dest)
                except TransportError as exc:
                    failure = exc.reason
            elif isinstance(action, StartTimer):
                starts.pop(action.name, None)  # re-armed: keep the order of the latest
                starts[action.name] = action.at
            elif isinstance(action, CancelTimer):
                if starts.pop(action.name, None) is None:
                    self._deadlines.cancel(tx, action.name)
            elif isinstance(action, Deliver):
                self._to_tu(self._deliver, tx, action.msg)
            elif isinstance(action, Terminated):
                starts.clear()
                self._forget(tx)
                self._to_tu(self._notify_terminated, tx, action.reason)
        if starts:
            retirement = fsm.retirement() if failure is None and len(starts) == 1 else None
            if retirement is not None:
                (until,) = starts.values()
                self._retire(tx, until, *retirement)
                return
            for name, at in starts.items():
                self._deadlines.arm(tx, name, at)
        if failure is not None and not fsm.terminated:
            # Fed after the batch so the FSM sees a consistent state (§17.1.1.2, §17.2.4).
            self._run(tx, TransportFailed(failure), now)

    def _retire(
        self, tx: AnyTransaction, until: float, passes_up: bool, resend: bytes | None
    ) -> None:
        """Only the wait for ``until`` is left: keep a record instead of the transaction. The TU
        hears of its (normal) end now: nothing it could do to it would be sent any more, but a
        2xx it retransmits itself (RFC 6026) still goes out through the object it holds."""
        live = (
            self._server.get(tx.key) is tx
            if isinstance(tx, ServerTransaction)
            else self._client.get(tx.key) is tx
        )
        if not live:
            return  # already forgotten (the TU re-sent a 2xx through a retired transaction)
        name = tx.transport.name
        self._wait_transports.setdefault(name, tx.transport)
        self._forget(tx)
        record = WaitRecord(until, passes_up, resend, tx.fsm.dest, name)
        self._waiting.add(isinstance(tx, ServerTransaction), tx.key, record)
        self._to_tu(self._notify_terminated, tx, TerminationReason.NORMAL)

    def _resend(self, data: bytes, dest: Address, transport_name: str) -> None:
        transport = self._wait_transports.get(transport_name)
        if transport is None:
            return
        try:
            transport.send(data, dest)
        except TransportError as exc:
            log.debug("re-send to %s failed: %s", dest, exc.reason)

    def _to_tu(self, callback: Callable[..., None], *args: object) -> None:
        if self._defer:
            self._loop.call_soon(callback, *args)
        else:
            callback(*args)

    def _deliver(self, tx: AnyTransaction, msg: Message) -> None:
        # A failing TU must not leave the transaction half-processed (timers unarmed): log the
        # error with its traceback and carry on with the remaining actions.
        try:
            if isinstance(tx, ServerTransaction) and isinstance(msg, Request):
                self.tu.on_request(msg, tx, tx.source, tx.transport)
            elif isinstance(tx, ClientTransaction) and isinstance(msg, Response):
                self.tu.on_response(msg, tx)
        except Exception:
            log.exception("TU failed handling %r", msg)

    def _stray(self, msg: Message, source: Address | None, transport: SipTransport | None) -> None:
        # Same policy as _deliver: a TU error is logged with its traceback, never mistaken for
        # an unmatchable message by on_message's SipError handler.
        try:
            if isinstance(msg, Request):
                assert source is not None and transport is not None
                self.tu.on_request(msg, None, source, transport)
            else:
                self.tu.on_response(msg, None)
        except Exception:
            log.exception("TU failed handling stray %r", msg)

    def _notify_terminated(self, tx: AnyTransaction, reason: TerminationReason) -> None:
        try:
            self.tu.on_terminated(tx, reason)
        except Exception:
            log.exception("TU failed handling termination (%s)", reason.value)

    def _forget(self, tx: AnyTransaction) -> None:
        self._deadlines.cancel_all(tx)
        if isinstance(tx, ServerTransaction):
            if self._server.get(tx.key) is tx:
                del self._server[tx.key]
        elif self._client.get(tx.key) is tx:
            del self._client[tx.key]

    def _timer_fired(self, tx: AnyTransaction, name: str, now: float) -> None:
        self._run(tx, TimerFired(name), now)
