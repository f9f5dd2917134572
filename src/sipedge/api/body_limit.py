"""ASGI middleware refusing request bodies larger than `http.max_body_bytes` with 413 `{message}`
(`{error: 413, message}` under /v2/agent, the seed's Agent error shape).

The body is read (up to the limit) before the app runs, so an oversized upload is refused
without reaching FastAPI's parser; a declared Content-Length over the limit is refused at once.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sipedge.api.errors import is_agent_path


class BodySizeLimit:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await _reject(scope, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # Client went away: hand the disconnect to the app as it would have seen it.
                await self.app(scope, _replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await _reject(scope, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        await self.app(
            scope,
            _replay([{"type": "http.request", "body": body, "more_body": False}], receive),
            send,
        )


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _reject(scope: Scope, send: Send) -> None:
    payload: dict[str, object] = {"message": "request body too large"}
    if is_agent_path(str(scope.get("path", ""))):
        payload = {"error": 413, **payload}
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
