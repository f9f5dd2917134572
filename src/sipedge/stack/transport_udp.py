"""SIP over UDP (RFC 3261 §18): one ``DatagramProtocol`` per bound socket.

Everything runs inside ``datagram_received``: parse, then call ``on_message`` synchronously (no
task per message, STYLE.md). A request that fails to parse with a status is answered here,
statelessly (RFC 3261 §8.2.6 / §18.2.2), unless an ``on_error`` callback is given, in which case
the callback decides (it gets the error, the raw bytes, the source and this endpoint; the helper
``stack.routing.stateless_error_bytes`` builds the answer). Errors whose status is None are
dropped. A datagram over ``max_size`` is not parsed: a request gets 513 Message Too Large
(answered from its raw header block, when it has what routing the answer needs), anything else is
dropped. Every hard limit hit (``sip.limits``) bumps ``sipedge_sip_limit_hits_total``.

``admit(source_ip) -> bool``, when given, runs first for every datagram, before any parsing: False
drops the datagram unread (the flood guard's hook, ``edge.flood``; it keeps its own metrics).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

from sipedge.metrics import LIMIT_CHILDREN
from sipedge.sip.errors import SipError, SipLimitError, TransportError
from sipedge.sip.limits import DEFAULT_LIMITS, LimitKind, Limits
from sipedge.sip.message import Message, Response
from sipedge.sip.parser import parse_message
from sipedge.stack.routing import (
    Address,
    map_os_errors,
    reply_destination,
    response_destination,
    stateless_error_bytes,
)

__all__ = ["Admit", "OnError", "OnMessage", "UdpTransport"]

log = logging.getLogger(__name__)

# on_message(msg, source, transport name, connection-or-endpoint)
OnMessage = Callable[[Message, Address, str, Any], None]
# on_error(error, raw bytes, source, transport name, connection-or-endpoint)
OnError = Callable[[SipError, bytes, Address, str, Any], None]
# admit(source ip) -> False drops the packet before it is parsed (flood protection)
Admit = Callable[[str], bool]
MAX_DATAGRAM = 65535


class UdpTransport(asyncio.DatagramProtocol):
    """A bound UDP endpoint. Satisfies ``stack.transactions.SipTransport``."""

    name = "UDP"
    reliable = False

    def __init__(
        self,
        on_message: OnMessage,
        on_error: OnError | None = None,
        *,
        max_size: int = MAX_DATAGRAM,
        limits: Limits = DEFAULT_LIMITS,
        admit: Admit | None = None,
    ) -> None:
        self.on_message = on_message
        self.on_error = on_error
        self.max_size = max_size
        self.limits = limits
        self.admit = admit
        self.dropped = 0  # datagrams dropped (oversize or unanswerable garbage)
        self._transport: asyncio.DatagramTransport | None = None
        self._local: Address = ("", 0)
        self._closed: asyncio.Future[None] | None = None

    @classmethod
    async def create(
        cls,
        host: str,
        port: int,
        on_message: OnMessage,
        on_error: OnError | None = None,
        *,
        max_size: int = MAX_DATAGRAM,
        limits: Limits = DEFAULT_LIMITS,
        admit: Admit | None = None,
        receive_buffer: int | None = None,
    ) -> UdpTransport:
        """Bind ``host:port`` (port 0 = ephemeral; IPv6 literals without brackets).

        ``receive_buffer``: SO_RCVBUF in bytes (the kernel caps it at net.core.rmem_max); a
        larger buffer rides out bursts instead of dropping datagrams that the peers must then
        retransmit."""
        loop = asyncio.get_running_loop()
        self = cls(on_message, on_error, max_size=max_size, limits=limits, admit=admit)
        self._closed = loop.create_future()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with map_os_errors(f"bind udp {host}:{port}"):
            await loop.create_datagram_endpoint(
                lambda: self, local_addr=(host, port), family=family
            )
        if receive_buffer is not None and self._transport is not None:
            sock = self._transport.get_extra_info("socket")
            with map_os_errors("set udp receive buffer"):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        return self

    # --- asyncio callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        sockname = transport.get_extra_info("sockname")
        self._local = (sockname[0], sockname[1])

    def connection_lost(self, exc: Exception | None) -> None:
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    def error_received(self, exc: Exception) -> None:
        # ICMP errors (port unreachable ...) on an unconnected socket: nothing to act on here;
        # the transaction timers notice the silence.
        log.debug("udp error received: %s", exc)

    def datagram_received(self, data: bytes, addr: tuple[Any, ...]) -> None:
        source: Address = (addr[0], addr[1])
        if self.admit is not None and not self.admit(source[0]):
            return
        if len(data) > self.max_size:
            status = None if data[:4] == b"SIP/" else 513  # RFC 3261 §21.5.11
            self._reject(
                SipLimitError("message too large", status, LimitKind.MESSAGE_SIZE), data, source
            )
            return
        if not data.strip(b"\r\n"):
            return  # CRLF keep-alive
        try:
            msg = parse_message(data, self.limits)
        except SipError as exc:
            self._reject(exc, data, source)
            return
        self.on_message(msg, source, "UDP", self)

    def _reject(self, exc: SipError, data: bytes, source: Address) -> None:
        if isinstance(exc, SipLimitError):
            LIMIT_CHILDREN[exc.limit].inc()
        if self.on_error is not None:
            self.on_error(exc, data, source, "UDP", self)
            return
        answer = stateless_error_bytes(data, exc)
        if answer is None:
            self.dropped += 1
            return
        wire, response = answer
        try:
            self.send(wire, reply_destination(response.top_via, source))
        except TransportError as err:
            log.debug("stateless answer to %s failed: %s", source, err.reason)

    # --- sending -------------------------------------------------------------------------------

    @property
    def local_address(self) -> Address:
        return self._local

    def send(self, data: bytes, dest: Address) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            raise TransportError("udp transport closed")
        try:  # not map_os_errors(): a context manager per datagram shows in the profile
            transport.sendto(data, dest)
        except OSError as exc:
            raise TransportError(f"udp send: {exc.strerror or type(exc).__name__}") from exc

    def send_message(self, msg: Message, dest: Address) -> None:
        self.send(bytes(msg), dest)

    def send_response(self, response: Response) -> None:
        """Send a response to the address its top Via names (RFC 3261 §18.2.2, RFC 3581)."""
        self.send(bytes(response), response_destination(response))

    async def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        if self._closed is not None:
            await self._closed
