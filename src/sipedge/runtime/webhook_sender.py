"""Delivers the webhook outbox: claims due rows, POSTs them, records each attempt.

Runs wherever the SIP edge runs (`serve`, `sip`): several processes may share one database, the
claim (`store.webhook_outbox.claim_due`, a lease with expiry) keeps them from sending a row
twice at once. A round claims up to `batch_size` due rows (at most one per call, so a call's
events stay in order) and sends them concurrently; an attempt succeeds on any 2xx. Anything
else (connection error, timeout, redirect, other status) is retried after `backoff_delay`, until
`give_up_after_seconds` after the event; then the row is marked `failed`. Delivery is at least
once: receivers de-duplicate on `X-Sipedge-Event-Id`.

The URL is checked again before each attempt: it must still be a valid http(s) URL and, unless
`security.allow_private_webhooks`, its host must resolve only to public addresses; otherwise the
row is given up at once with the reason in `last_error`. (The HTTP client resolves the name
again when connecting; a name that changes between the two look-ups is not caught.) Redirects
are never followed, proxies from the environment are not used. Secrets and payloads are never
logged above DEBUG.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import random
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge.api.webhook_urls import WebhookUrlError, validate_webhook_url
from sipedge.config import WebhooksSettings
from sipedge.metrics import WEBHOOK_CHILDREN, WebhookOutcome
from sipedge.runtime.webhook_payload import backoff_delay, signed_headers
from sipedge.store.types import new_id, utcnow
from sipedge.store.webhook_models import WebhookOutbox
from sipedge.store.webhook_outbox import (
    Outcome,
    any_due,
    claim_due,
    finish_attempt,
    purge_finished,
    secret_for,
)

__all__ = ["Attempt", "WebhookSender"]

log = logging.getLogger(__name__)

PURGE_EVERY = 3600.0  # seconds between two purges of the outbox (see purge)
PURGE_BATCH = 1000  # rows per DELETE: a purge never holds the loop or the write lock long

Resolver = Callable[[str, int], Awaitable[list[str]]]
_PRIVATE_TARGET = "webhook host resolves to a private, loopback or link-local address"


@dataclass(frozen=True, slots=True)
class Attempt:
    """How one attempt ended, as written back to the outbox row."""

    outcome: Outcome
    last_status: int | None = None
    error: str | None = None
    next_attempt_at: datetime | None = None


class _GiveUp(Exception):
    """The row can never be delivered as it stands (bad or private URL)."""


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def _getaddrinfo(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class WebhookSender:
    """`start()` on the loop, `await stop()` to end; `wake()` when new rows were written."""

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        settings: WebhooksSettings,
        *,
        allow_private: bool,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], datetime] = utcnow,
        jitter: Callable[[], float] = random.random,
        resolve: Resolver = _getaddrinfo,
    ) -> None:
        self._sessions = session_factory
        self.settings = settings
        self._allow_private = allow_private
        self._transport = transport
        self._clock = clock
        self._jitter = jitter
        self._resolve = resolve
        self._client: httpx.AsyncClient | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        """Start delivering in the background (idempotent)."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="webhook-sender")

    async def stop(self) -> None:
        """Let the round in flight finish (bounded by the request timeout), then stop."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, timeout=self.settings.timeout_seconds + 5.0)
            except TimeoutError:
                log.warning("webhook sender did not stop in time; unfinished leases will expire")
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def purge(self) -> int:
        """Delete the delivered and failed rows older than `retention_days`, in bounded
        statements (the loop serves calls between them). Returns the count."""
        before = self._clock() - timedelta(days=self.settings.retention_days)
        purged = 0
        while not self._stopping:
            async with self._sessions() as session:
                count = await purge_finished(session, before=before, limit=PURGE_BATCH)
                await session.commit()
            purged += count
            if count < PURGE_BATCH:
                break
        return purged

    async def _run(self) -> None:
        next_purge = 0.0
        while not self._stopping:
            if time.monotonic() >= next_purge:
                next_purge = time.monotonic() + PURGE_EVERY
                try:
                    if purged := await self.purge():
                        log.info("purged %d delivered or failed webhook events", purged)
                except Exception:
                    log.warning("webhook outbox purge failed", exc_info=True)
            try:
                handled = await self.run_once()
            except Exception:  # a database hiccup: log, wait, try again
                log.warning("webhook delivery round failed", exc_info=True)
                handled = 0
            if handled and not self._stopping:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._wake.wait(), timeout=self.settings.poll_interval_seconds
                )
            self._wake.clear()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            source = self.settings.source_address or None
            transport = self._transport or httpx.AsyncHTTPTransport(local_address=source)
            self._client = httpx.AsyncClient(
                transport=transport,
                timeout=httpx.Timeout(self.settings.timeout_seconds),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    async def run_once(self) -> int:
        """One round: claim due rows, send them, record the outcomes. Returns rows attempted."""
        token = new_id()
        now = self._clock()
        async with self._sessions() as session:
            # Most polls find nothing: a read says so for a tenth of the claim's loop time
            # (the claim is an UPDATE that takes SQLite's write lock).
            if not await any_due(session, now=now):
                return 0
            rows = await claim_due(
                session,
                token=token,
                now=now,
                lease=self.settings.lease_seconds,
                limit=self.settings.batch_size,
            )
            await session.commit()
        if not rows:
            return 0
        keys: dict[str, str] = {}
        async with self._sessions() as session:
            for row in rows:
                if row.account_key not in keys:
                    keys[row.account_key] = await secret_for(session, row.account_key)
            await session.commit()
        attempts = await asyncio.gather(*(self.attempt(row, keys[row.account_key]) for row in rows))
        async with self._sessions() as session:
            for row, result in zip(rows, attempts, strict=True):
                kept = await finish_attempt(
                    session,
                    row_id=row.id,
                    token=token,
                    now=self._clock(),
                    outcome=result.outcome,
                    next_attempt_at=result.next_attempt_at,
                    last_status=result.last_status,
                    error=result.error,
                )
                if not kept:
                    log.warning("webhook %s: lease expired before the attempt was recorded", row.id)
            await session.commit()
        return len(rows)

    async def attempt(self, row: WebhookOutbox, secret: str) -> Attempt:
        """Send `row` once and decide what happens next."""
        try:
            await self._check_target(row.url)
        except _GiveUp as exc:
            return self._gave_up(row, str(exc), None)
        except ValueError:  # a host name the resolver cannot even encode
            return self._gave_up(row, "webhook_url must be an http or https URL", None)
        except OSError as exc:  # DNS failure: maybe temporary
            return self._failed(row, f"webhook host does not resolve: {exc.strerror or exc}", None)
        body = row.body.encode()
        headers = signed_headers(
            secret=secret,
            timestamp=int(self._clock().timestamp()),
            body=body,
            event_id=row.id,
        )
        try:
            client = self._http()
            request = client.build_request("POST", row.url, content=body, headers=headers)
            response = await client.send(request, stream=True)
            await response.aclose()  # the answer's body is never read
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            return self._failed(row, f"{type(exc).__name__}: {exc}", None)
        status = response.status_code
        if 200 <= status < 300:
            WEBHOOK_CHILDREN[WebhookOutcome.DELIVERED].inc()
            log.debug("webhook %s (run %s, %s) delivered", row.id, row.run_id, row.status)
            return Attempt("delivered", last_status=status)
        return self._failed(row, f"HTTP {status}", status)

    async def _check_target(self, url: str) -> None:
        try:
            validate_webhook_url(url, allow_private=self._allow_private)
        except WebhookUrlError as exc:
            raise _GiveUp(str(exc)) from None
        if self._allow_private:
            return
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        addresses = await self._resolve(host, port)
        if not addresses or not all(_public(address) for address in addresses):
            raise _GiveUp(_PRIVATE_TARGET)

    def _failed(self, row: WebhookOutbox, error: str, status: int | None) -> Attempt:
        now = self._clock()
        deadline = row.created_at + timedelta(seconds=self.settings.give_up_after_seconds)
        if now >= deadline:
            return self._gave_up(
                row, f"{error} (gave up after {row.attempts + 1} attempts)", status
            )
        delay = backoff_delay(
            row.attempts + 1,
            base=self.settings.backoff_base_seconds,
            cap=self.settings.backoff_max_seconds,
            jitter=self._jitter(),
        )
        WEBHOOK_CHILDREN[WebhookOutcome.RETRY].inc()
        log.debug(
            "webhook %s (run %s) failed, retry in %.1fs: %s", row.id, row.run_id, delay, error
        )
        next_at = min(now + timedelta(seconds=delay), deadline)
        return Attempt("retry", last_status=status, error=error, next_attempt_at=next_at)

    def _gave_up(self, row: WebhookOutbox, error: str, status: int | None) -> Attempt:
        WEBHOOK_CHILDREN[WebhookOutcome.GAVE_UP].inc()
        log.warning("webhook %s (run %s, %s) given up: %s", row.id, row.run_id, row.status, error)
        return Attempt("failed", last_status=status, error=error)
