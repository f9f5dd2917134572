"""The change signal across processes and nodes: PostgreSQL LISTEN/NOTIFY (SPEC §5 Robustness).

In one `sipedge serve` process the API's writes reach the SIP edge through the in-process
`ChangeNotifier`. With separate `api` and `sip` processes, or several nodes, on PostgreSQL:

- a publishing process (`api`, `serve`) sends each committed change of its own as
  ``NOTIFY sipedge_changes, '<json>'`` (after the commit, so a listener reads the new rows);
- a listening process (`sip`, `serve`) holds one connection in ``LISTEN sipedge_changes`` and
  replays what other processes sent into its own notifier: the routing snapshot reloads, the
  dialer wakes for a queued call or a hangup. A node ignores its own notifications.

Changes replayed from the database carry ``origin`` and are never published again (two nodes
would otherwise echo each other forever). A lost listening connection is re-opened after
``reconnect_delay``; changes sent meanwhile were missed, so a reconnect signals a full reload
(``kind="resync"``). The `sip` role's periodic re-read stays as a safety net, slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from sipedge.store.changes import Change, ChangeNotifier

__all__ = ["CHANNEL", "PgChangeBridge", "supports_notify"]

log = logging.getLogger(__name__)

CHANNEL = "sipedge_changes"
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")
# Local signals that are not changes of the store: nothing for other nodes.
_LOCAL_KINDS = frozenset({"poll", "resync"})


def supports_notify(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "postgresql"


class PgChangeBridge:
    """Publishes ``notifier``'s local changes and/or replays other nodes' into it.

    ``publish`` / ``listen`` choose the directions; ``node_id`` tells this process's own
    notifications apart (random by default)."""

    def __init__(
        self,
        engine: AsyncEngine,
        notifier: ChangeNotifier,
        *,
        publish: bool,
        listen: bool,
        node_id: str | None = None,
        reconnect_delay: float = 1.0,
    ) -> None:
        self._engine = engine
        self._notifier = notifier
        self._publish_enabled = publish
        self._listen_enabled = listen
        self.node_id = node_id or secrets.token_hex(8)
        self._reconnect_delay = reconnect_delay
        self._unsubscribe: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._outgoing: list[str] = []  # payloads not sent yet, in order
        self._sender: asyncio.Task[None] | None = None
        self._stopping = False
        self.listening = asyncio.Event()  # set while the LISTEN connection is up
        self.published = 0
        self.received = 0

    async def start(self) -> None:
        if self._publish_enabled:
            self._unsubscribe = self._notifier.subscribe(self._publish)
        if self._listen_enabled:
            self._listener = asyncio.get_running_loop().create_task(
                self._listen_forever(), name="change-listener"
            )

    async def stop(self) -> None:
        self._stopping = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._sender is not None:
            await asyncio.wait({self._sender}, timeout=5.0)
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None

    # --- publishing ------------------------------------------------------------------------

    def _publish(self, change: Change) -> None:
        if change.origin is not None or change.kind in _LOCAL_KINDS or self._stopping:
            return
        payload = json.dumps(
            {"n": self.node_id, "k": change.kind, "t": change.trunk_id, "a": change.agent_id},
            separators=(",", ":"),
        )
        self._outgoing.append(payload)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        """One sender at a time, in order: what queued meanwhile goes in one transaction (its
        notifications are delivered in the order they were sent)."""
        while self._outgoing:
            batch, self._outgoing = self._outgoing, []
            try:
                async with self._engine.connect() as connection:
                    for payload in batch:
                        await connection.execute(_NOTIFY, {"channel": CHANNEL, "payload": payload})
                    await connection.commit()
                self.published += len(batch)
            except Exception:
                # Other nodes catch up with their periodic re-read; the write itself succeeded.
                log.warning(
                    "could not publish %d changes to other nodes", len(batch), exc_info=True
                )

    # --- listening -------------------------------------------------------------------------

    async def _listen_forever(self) -> None:
        first = True
        while not self._stopping:
            try:
                await self._listen_once(resync=not first)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("change listener connection failed", exc_info=True)
            self.listening.clear()
            first = False
            await asyncio.sleep(self._reconnect_delay)

    async def _listen_once(self, *, resync: bool) -> None:
        async with self._engine.connect() as connection:
            raw = await connection.get_raw_connection()
            driver: Any = raw.driver_connection  # asyncpg.Connection: LISTEN is the driver's API
            if driver is None:
                raise RuntimeError("no driver connection to LISTEN on")
            lost = asyncio.Event()

            def on_close(_connection: object) -> None:
                lost.set()

            await driver.add_listener(CHANNEL, self._on_notification)
            driver.add_termination_listener(on_close)
            try:
                self.listening.set()
                if resync:
                    # Whatever was sent while we were away is lost: reload everything.
                    self._notifier.notify("resync", None, origin="listener")
                await lost.wait()
            finally:
                self.listening.clear()
                driver.remove_termination_listener(on_close)
                if not driver.is_closed():
                    await driver.remove_listener(CHANNEL, self._on_notification)

    def _on_notification(self, _connection: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            data = json.loads(payload)
            origin, kind = str(data["n"]), str(data["k"])
            trunk_id, agent_id = data.get("t"), data.get("a")
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a malformed change notification")
            return
        if origin == self.node_id:
            return
        self.received += 1
        self._notifier.notify(
            kind,
            trunk_id if isinstance(trunk_id, str) else None,
            agent_id if isinstance(agent_id, str) else None,
            origin=origin,
        )
