"""SIP over TCP (RFC 3261 §18): a listener plus one connection per peer, reused both ways.

- Framing is by Content-Length (``sip.framing.StreamFramer``); an unframeable stream or a message
  over ``max_size`` closes the connection, since no later boundary can be trusted (a request
  over ``max_size`` whose header block arrived is first answered 513 Message Too Large).
- Hard limits (``sip.limits``: ``limits``), the connection caps and idle closes each bump
  ``sipedge_sip_limit_hits_total``.
- Connections are keyed by the peer's (ip, port): ``send(data, dest)`` writes on an existing
  connection to ``dest`` whichever side opened it, otherwise it opens one (writes are buffered
  until it is up; a failed connect is reported to ``on_connect_error``).
- Caps: ``max_connections`` overall and ``max_per_peer`` per peer IP; an inbound connection
  over a cap is closed at once. Idle connections close after ``idle_timeout`` seconds, checked by
  one lazily re-armed timer per connection (no per-message timer churn).
- ``admit(peer_ip) -> bool`` (flood protection), when given, runs for every framed message
  before it is parsed; False drops that message (the connection stays).
- Invalid requests are answered statelessly on the connection they came on (or handed to
  ``on_error``, same contract as ``UdpTransport``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import cast

from sipedge.metrics import LIMIT_CHILDREN, SipLimit
from sipedge.sip.errors import SipError, SipLimitError, TransportError
from sipedge.sip.framing import DEFAULT_MAX_MESSAGE_SIZE, StreamFramer
from sipedge.sip.limits import DEFAULT_LIMITS, Limits
from sipedge.sip.message import Message, Response
from sipedge.sip.parser import parse_message
from sipedge.stack.routing import (
    Address,
    map_os_errors,
    response_destination,
    stateless_error_bytes,
)
from sipedge.stack.transport_udp import Admit, OnError, OnMessage

__all__ = ["TcpConnection", "TcpTransport"]

log = logging.getLogger(__name__)


class TcpConnection(asyncio.Protocol):
    """One TCP connection; messages it carries are delivered with ``conn=self``."""

    def __init__(self, endpoint: TcpTransport, peer: Address | None = None) -> None:
        self.endpoint = endpoint
        self.peer: Address = peer or ("", 0)
        self.outbound = peer is not None
        self.framer = StreamFramer(endpoint.max_size)
        self._transport: asyncio.Transport | None = None
        self._pending: list[bytes] = []  # written before an outbound connect completed
        self._last_activity = 0.0
        self._idle_handle: asyncio.TimerHandle | None = None
        self._closed = False
        self.done: asyncio.Future[None] = endpoint.loop.create_future()

    @property
    def is_open(self) -> bool:
        return not self._closed and (self._transport is None or not self._transport.is_closing())

    # --- asyncio callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # No isinstance check: uvloop's TCPTransport is not an asyncio.Transport subclass.
        transport = cast(asyncio.Transport, transport)
        if self._closed:  # closed (endpoint shutdown) while the connect was in flight
            transport.close()
            return
        self._transport = transport
        if not self.outbound:
            # Outbound connections keep the address they were opened for as their key.
            peer = transport.get_extra_info("peername")
            self.peer = (peer[0], peer[1])
            if not self.endpoint._admit(self):
                transport.abort()  # over a cap: close at once, read nothing
                return
        self._touch()
        self._arm_idle()
        for data in self._pending:
            transport.write(data)
        self._pending.clear()

    def data_received(self, data: bytes) -> None:
        self._touch()
        try:
            frames = self.framer.feed(data)
        except SipError as exc:
            log.debug("closing unframeable tcp stream from %s: %s", self.peer, exc.reason)
            if isinstance(exc, SipLimitError):
                LIMIT_CHILDREN[exc.limit].inc()
                head = self.framer.rejected_head
                answer = stateless_error_bytes(head, exc) if head is not None else None
                if answer is not None and self.is_open:
                    self.write(answer[0])
            self.close()
            return
        if self.framer.pong_due:  # RFC 5626 §3.5.1: answer a CRLFCRLF ping with CRLF
            self.framer.pong_due = False
            self.write(b"\r\n")
        ep = self.endpoint
        admit = ep.admit
        for frame in frames:
            if admit is not None and not admit(self.peer[0]):
                continue
            try:
                msg = parse_message(frame, ep.limits)
            except SipError as exc:
                ep._reject(exc, frame, self)
                continue
            ep.on_message(msg, self.peer, "TCP", self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        self.endpoint._forget(self)
        if not self.done.done():
            self.done.set_result(None)

    # --- idle timeout --------------------------------------------------------------------------

    def _touch(self) -> None:
        self._last_activity = self.endpoint.loop.time()

    def _arm_idle(self) -> None:
        timeout = self.endpoint.idle_timeout
        if timeout is None:
            return
        when = self._last_activity + timeout
        self._idle_handle = self.endpoint.loop.call_at(when, self._check_idle)

    def _check_idle(self) -> None:
        timeout = self.endpoint.idle_timeout
        assert timeout is not None
        if self.endpoint.loop.time() - self._last_activity >= timeout:
            log.debug("closing idle tcp connection to %s", self.peer)
            LIMIT_CHILDREN[SipLimit.TCP_IDLE].inc()
            self.close()
        else:
            self._arm_idle()  # activity since arming: re-arm for the remainder

    # --- sending / closing ---------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self._closed:
            raise TransportError("tcp connection closed")
        if self._transport is None:
            self._pending.append(data)
            return
        if self._transport.is_closing():
            raise TransportError("tcp connection closed")
        with map_os_errors("tcp send"):
            self._transport.write(data)
        self._touch()

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
        elif self._transport is None:
            self._closed = True
            self.endpoint._forget(self)
            if not self.done.done():
                self.done.set_result(None)


class TcpTransport:
    """A TCP listener and its connection table. Satisfies ``stack.transactions.SipTransport``."""

    name = "TCP"
    reliable = True

    def __init__(
        self,
        on_message: OnMessage,
        on_error: OnError | None = None,
        *,
        max_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        idle_timeout: float | None = 300.0,
        max_connections: int = 10000,
        max_per_peer: int = 64,
        on_connect_error: Callable[[Address, TransportError], None] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        admit: Admit | None = None,
    ) -> None:
        self.on_message = on_message
        self.limits = limits
        self.admit = admit
        self.on_error = on_error
        self.on_connect_error = on_connect_error
        self.max_size = max_size
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.max_per_peer = max_per_peer
        self.loop = asyncio.get_running_loop()
        self.rejected = 0  # connections refused by a cap
        self._server: asyncio.Server | None = None
        self._local: Address = ("", 0)
        self._by_peer: dict[Address, TcpConnection] = {}
        self._per_ip: dict[str, int] = {}
        self._conns: set[TcpConnection] = set()
        self._connecting: set[asyncio.Task[None]] = set()
        self._closing = False

    @classmethod
    async def create(
        cls,
        host: str,
        port: int,
        on_message: OnMessage,
        on_error: OnError | None = None,
        **options: object,
    ) -> TcpTransport:
        """Listen on ``host:port`` (port 0 = ephemeral). Options as for ``__init__``."""
        self = cls(on_message, on_error, **options)  # type: ignore[arg-type]
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with map_os_errors(f"listen tcp {host}:{port}"):
            self._server = await self.loop.create_server(
                lambda: TcpConnection(self), host, port, family=family
            )
        sockname = self._server.sockets[0].getsockname()
        self._local = (sockname[0], sockname[1])
        return self

    @property
    def local_address(self) -> Address:
        return self._local

    @property
    def connections(self) -> int:
        return len(self._conns)

    def connection_to(self, dest: Address) -> TcpConnection | None:
        conn = self._by_peer.get(dest)
        return conn if conn is not None and conn.is_open else None

    # --- connection table ----------------------------------------------------------------------

    def _admit(self, conn: TcpConnection) -> bool:
        ip = conn.peer[0]
        if self._closing:
            self.rejected += 1
            return False
        if len(self._conns) >= self.max_connections:
            LIMIT_CHILDREN[SipLimit.TCP_CONNECTIONS].inc()
            self.rejected += 1
            return False
        if self._per_ip.get(ip, 0) >= self.max_per_peer:
            LIMIT_CHILDREN[SipLimit.TCP_CONNECTIONS_PER_PEER].inc()
            self.rejected += 1
            return False
        self._register(conn)
        return True

    def _register(self, conn: TcpConnection) -> None:
        self._conns.add(conn)
        self._per_ip[conn.peer[0]] = self._per_ip.get(conn.peer[0], 0) + 1
        self._by_peer[conn.peer] = conn

    def _forget(self, conn: TcpConnection) -> None:
        if conn not in self._conns:
            return
        self._conns.discard(conn)
        ip = conn.peer[0]
        left = self._per_ip.get(ip, 1) - 1
        if left:
            self._per_ip[ip] = left
        else:
            self._per_ip.pop(ip, None)
        if self._by_peer.get(conn.peer) is conn:
            del self._by_peer[conn.peer]

    # --- sending -------------------------------------------------------------------------------

    def send(self, data: bytes, dest: Address) -> None:
        """Write on the connection to ``dest``, opening one if there is none."""
        if self._closing:
            raise TransportError("tcp transport closed")
        conn = self.connection_to(dest)
        if conn is None:
            conn = self._open(dest)
        conn.write(data)

    def send_message(self, msg: Message, dest: Address) -> None:
        self.send(bytes(msg), dest)

    def send_response(self, response: Response, conn: TcpConnection | None = None) -> None:
        """RFC 3261 §18.2.2: on the request's connection while it is open, else per top Via."""
        data = bytes(response)
        if conn is not None and conn.is_open:
            conn.write(data)
            return
        self.send(data, response_destination(response))

    def _open(self, dest: Address) -> TcpConnection:
        if (
            len(self._conns) >= self.max_connections
            or self._per_ip.get(dest[0], 0) >= self.max_per_peer
        ):
            raise TransportError("tcp connection cap reached")
        conn = TcpConnection(self, dest)
        self._register(conn)
        task = self.loop.create_task(self._connect(conn, dest))
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)
        return conn

    async def _connect(self, conn: TcpConnection, dest: Address) -> None:
        try:
            with map_os_errors(f"connect tcp {dest[0]}:{dest[1]}"):
                await self.loop.create_connection(lambda: conn, dest[0], dest[1])
        except TransportError as exc:
            conn.close()
            if self.on_connect_error is not None:
                self.on_connect_error(dest, exc)
            else:
                log.info("tcp connect to %s failed: %s", dest, exc.reason)

    def _reject(self, exc: SipError, data: bytes, conn: TcpConnection) -> None:
        if isinstance(exc, SipLimitError):
            LIMIT_CHILDREN[exc.limit].inc()
        if self.on_error is not None:
            self.on_error(exc, data, conn.peer, "TCP", conn)
            return
        answer = stateless_error_bytes(data, exc)
        if answer is not None and conn.is_open:
            conn.write(answer[0])

    async def close(self) -> None:
        """Stop listening, close every connection and wait until they are gone."""
        self._closing = True
        for task in list(self._connecting):
            task.cancel()
        if self._server is not None:
            self._server.close()
        conns = list(self._conns)
        for conn in conns:
            conn.close()
        if conns:
            await asyncio.gather(*(c.done for c in conns))
        if self._server is not None:
            await self._server.wait_closed()
