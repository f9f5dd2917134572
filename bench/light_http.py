"""A minimal HTTP/1.1 keep-alive client for the outbound ramp's load: one prebuilt request, many
times, over a bounded pool of connections.

Why not httpx: on this machine httpx costs ~2.5 ms of the driver's CPU per request, so a driver
sharing core 1 with two SIPps topped out near 300 requests/s and could not offer the 500 calls/s
the issue asks to measure. This client parses only what the bench needs (the status line,
`Content-Length`, the body) and costs a few tens of µs per request.

Scope, on purpose: responses must carry `Content-Length` (uvicorn's do; chunked bodies are an
error), one request at a time per connection (no pipelining), loopback only. Every wait is
bounded by the caller's timeout; a connection that fails is dropped from the pool.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["HttpPool", "HttpResponse", "build_request"]

_MAX_HEADER_BYTES = 65_536


class HttpResponse:
    __slots__ = ("body", "status")

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body


def build_request(
    method: str, path: str, host: str, headers: dict[str, str], body: bytes = b""
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _parse(buffer: bytearray) -> tuple[HttpResponse, int] | None:
    """A complete response at the start of ``buffer`` and its length, else None (need more)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > _MAX_HEADER_BYTES:
            raise ConnectionError("response header too large")
        return None
    head = bytes(buffer[:end]).decode("latin-1")
    status_line, _, header_text = head.partition("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ConnectionError("not an HTTP/1.x response")
    length = None
    for line in header_text.split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        elif name.strip().lower() == "transfer-encoding":
            raise ConnectionError("chunked responses are not supported")
    if length is None:
        raise ConnectionError("response without Content-Length")
    total = end + 4 + length
    if len(buffer) < total:
        return None
    return HttpResponse(int(parts[1]), bytes(buffer[end + 4 : total])), total


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[HttpResponse] | None = None
        self.broken = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        try:
            parsed = _parse(self.buffer)
        except (ConnectionError, ValueError) as exc:
            self._fail(ConnectionError(str(exc)))
            return
        if parsed is not None:
            response, used = parsed
            del self.buffer[:used]
            self.waiter = None
            waiter.set_result(response)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection lost: {exc}"))

    def _fail(self, exc: Exception) -> None:
        self.broken = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        self.waiter = None
        if self.transport is not None:
            self.transport.close()

    def send(self, data: bytes) -> asyncio.Future[HttpResponse]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self.waiter


class HttpPool:
    """Up to ``max_connections`` keep-alive connections to ``host:port``; `request` waits for a
    free one (FIFO) when all are busy."""

    def __init__(self, host: str, port: int, max_connections: int) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.host = host
        self.port = port
        self.max_connections = max_connections
        self._idle: deque[_Connection] = deque()
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def _acquire(self) -> _Connection:
        while True:
            while self._idle:
                connection = self._idle.pop()
                if not connection.broken:
                    return connection
                self._open -= 1
            if self._open < self.max_connections:
                self._open += 1
                try:
                    _, protocol = await asyncio.get_running_loop().create_connection(
                        _Connection, self.host, self.port
                    )
                except OSError:
                    self._open -= 1
                    self._wake_one()
                    raise
                return protocol
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if not waiter.done():
                    waiter.cancel()

    def _release(self, connection: _Connection) -> None:
        if connection.broken:
            self._open -= 1
        else:
            self._idle.append(connection)
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def request(self, data: bytes, timeout: float) -> HttpResponse:
        """Send one prebuilt request (``build_request``); raises ``ConnectionError``, ``OSError``
        or ``TimeoutError``."""
        async with asyncio.timeout(timeout):
            connection = await self._acquire()
            try:
                return await connection.send(data)
            except BaseException:
                connection.broken = True
                if connection.transport is not None:
                    connection.transport.close()
                raise
            finally:
                self._release(connection)

    def close(self) -> None:
        while self._idle:
            connection = self._idle.pop()
            if connection.transport is not None:
                connection.transport.close()
        self._open = 0
