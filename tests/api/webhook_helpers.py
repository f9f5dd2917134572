"""Helpers for the webhook outbox and delivery tests (both databases)."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from api.conftest import Api
from sipedge.runtime.ports import CallStatus, CallStatusEvent
from sipedge.store.db import make_session_factory
from sipedge.store.webhook_outbox import OutboxEntry, enqueue

T0 = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
HOOK = "http://127.0.0.1:9/hooks"


async def webhook_agent(api: Api, url: str | None = HOOK, user: str = "alice") -> str:
    agent_id = await api.agent(user)
    await api.execute("UPDATE agents SET webhook_url = :url WHERE id = :id", url=url, id=agent_id)
    return agent_id


def entry(run_id: str, agent_id: str, status: str = "ringing") -> OutboxEntry:
    return OutboxEntry(run_id=run_id, agent_id=agent_id, status=status, body=f'{{"s":"{status}"}}')


async def put(api: Api, entries: list[OutboxEntry], now: datetime = T0) -> int:
    async with make_session_factory(api.engine)() as session:
        added = await enqueue(session, entries, now=now)
        await session.commit()
    return added


def status_event(run_id: str, agent_id: str, status: CallStatus) -> CallStatusEvent:
    return CallStatusEvent(
        run_id=run_id,
        status=status,
        direction="inbound",
        created_at=T0,
        updated_at=T0,
        agent_id=agent_id,
        trunk_id="trunk-1",
        from_number="+14155550999",
        to_number="+14155550100",
    )


class Clock:
    """A settable UTC clock for the sender."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Delivery:
    url: str
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data

    def signed_with(self, secret: str) -> bool:
        timestamp = self.headers["x-sipedge-timestamp"]
        message = timestamp.encode() + b"." + self.body
        digest = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers["x-sipedge-signature"], f"sha256={digest}")


@dataclass
class Receiver:
    """An `httpx.MockTransport` receiver: answers `status` (or raises `error`), records 2xx."""

    status: int = 200
    error: Exception | None = None
    attempts: int = 0
    delivered: list[Delivery] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        if self.error is not None:
            raise self.error
        if 200 <= self.status < 300:
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.delivered.append(Delivery(str(request.url), headers, request.content))
        return httpx.Response(self.status, text="ok" if self.status < 300 else "down")
