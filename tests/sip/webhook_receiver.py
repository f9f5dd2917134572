"""A real webhook receiver on 127.0.0.1: ``asyncio.start_server`` and a minimal HTTP/1.1 reader.

Each request is read (request line, headers, ``Content-Length`` body), answered with the status
the test set (``Connection: close``) and, when that status is 2xx, recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data

    def signed_with(self, secret: str) -> bool:
        message = self.headers["x-sipedge-timestamp"].encode() + b"." + self.body
        digest = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers["x-sipedge-signature"], f"sha256={digest}")


@dataclass
class HttpReceiver:
    status: int = 200
    port: int = 0
    attempts: int = 0
    received: list[Received] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/calls"

    def statuses(self, run_id: str | None = None) -> list[str]:
        return [
            r.payload["status"]
            for r in self.received
            if run_id is None or r.payload["id"] == run_id
        ]

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        async def enough() -> None:
            while len(self.received) < count:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(enough(), timeout)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            _method, path, _version = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.attempts += 1
            status = self.status
            if 200 <= status < 300:
                self.received.append(Received(path, headers, body))
                self.arrived.set()
            writer.write(
                f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def http_receiver(status: int = 200) -> AsyncIterator[HttpReceiver]:
    receiver = HttpReceiver(status=status)
    server = await asyncio.start_server(receiver._serve, "127.0.0.1", 0)
    receiver.port = server.sockets[0].getsockname()[1]
    try:
        yield receiver
    finally:
        server.close()
        await server.wait_closed()
