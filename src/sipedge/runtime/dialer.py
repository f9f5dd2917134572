"""The dialer of a SIP process: claims queued (and due scheduled) outbound calls from the store and
places them through the edge (SPEC §5 Outbound).

The API only writes rows; in ``serve`` it also signals ``call.queued`` / ``call.hangup`` through
the in-process ``ChangeNotifier`` (``wake``), and every ``poll_interval`` the dialer looks anyway
(the ``sip`` role has no API beside it). Claims are compare-and-set on ``claimed_at``, so several
SIP processes never place one call twice. Scheduled calls live in the database: a restarted dialer
finds them with its first poll. Each dialer stamps the calls it holds every ``heartbeat_interval``
(``claimed_by``, ``heartbeat_at``), and ends other dialers' calls whose stamps stopped: a crashed
process leaves no call "in-progress" for ever. Status changes from the call path are queued (never
awaited there) and written in order by the dialer's task. The trunk password is read here at dial
time and handed only to the call's digest answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sipedge.edge.channels import ChannelLease
from sipedge.edge.inbound import InboundRoute
from sipedge.edge.snapshot import AgentView, GatewayView, NumberView, RoutingSnapshot
from sipedge.metrics import OutboundAttemptResult, outbound_attempt, outbound_claims_swept_total
from sipedge.runtime.edge_app import SipEdge
from sipedge.runtime.outbound_call import OutboundCall, OutboundSetup
from sipedge.runtime.ports import CallRecordEvent, SnapshotSource
from sipedge.sip.transaction import Address
from sipedge.store import outbound_calls as repo
from sipedge.store.changes import CALL_SIGNALS, Change
from sipedge.store.outbound_calls import ClaimedCall
from sipedge.store.outbound_updates import write_call_updates
from sipedge.store.types import utcnow

__all__ = ["Dialer"]

log = logging.getLogger(__name__)

FLUSH_DELAY = 0.02  # seconds a status change waits for others to share its write
CLAIM_DELAY = 0.01  # seconds a wake-up waits for more new calls to share one claim
CALL_HANGUP = "call.hangup"
STALE_HEARTBEATS = 3  # a dialer silent this many heartbeat intervals is gone: its calls end
EDGE_LOST = "edge lost"  # the reason of a call whose dialer died
Resolve = Callable[[GatewayView, str], Awaitable[list[Address]]]


class Dialer:
    """``start()`` on the loop after the edge started; ``await stop()`` before the edge stops."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        edge: SipEdge,
        snapshots: SnapshotSource,
        *,
        resolve: Resolve,
        refresh: Callable[[], Awaitable[bool]] | None = None,
        now: Callable[[], datetime] = utcnow,
        poll_interval: float = 1.0,
        heartbeat_interval: float = 10.0,
        node_id: str | None = None,
    ) -> None:
        self._sessions = sessions
        self._edge = edge
        self._snapshots = snapshots
        self._resolve = resolve
        self._refresh = refresh
        self._now = now
        self._poll_interval = poll_interval
        self._heartbeat_interval = heartbeat_interval
        self._last_heartbeat = float("-inf")
        self.node_id = node_id or secrets.token_hex(8)  # claimed_by of the calls it holds
        self._updates: list[tuple[str, dict[str, Any]]] = []
        self._flush_lock = asyncio.Lock()  # batches are written one after another, in order
        self._flushing: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._hangups_asked = True  # look at hangups on the next poll (and on every interval)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.calls: dict[str, OutboundCall] = {}  # run_id -> live call placed by this dialer

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="dialer")

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._flushing is not None:  # the run loop's last flush wrote what it held
            await self._flushing
            self._flushing = None

    async def flush(self) -> None:
        """Write the status changes queued so far (the call path only queues them)."""
        async with self._flush_lock:
            while self._updates:
                batch, self._updates = self._updates, []
                try:
                    async with self._sessions() as session:
                        # Status webhooks are written with their change, in this transaction.
                        await write_call_updates(session, batch, now=self._now())
                        await session.commit()
                except Exception:
                    log.exception("writing outbound call status failed (retried)")
                    self._updates[:0] = batch
                    return

    async def _flush_soon(self) -> None:
        # Statuses of many calls arrive in bursts: one short wait lets them share a transaction.
        # A failed write stays queued for the next poll (poll_interval), not a tight retry loop.
        await asyncio.sleep(FLUSH_DELAY)
        await self.flush()

    def wake(self, change: Change | None = None) -> None:
        """A ``ChangeNotifier`` subscriber: new calls or hangups to look at now."""
        if change is None or change.kind in CALL_SIGNALS:
            if change is None or change.kind == CALL_HANGUP:
                self._hangups_asked = True
            self._wake.set()

    def report(self, run_id: str, values: dict[str, Any]) -> None:
        """From the call path: never awaits, never raises."""
        self._updates.append((run_id, values))
        if values.get("status") in ("completed", "busy", "no-answer", "failed", "canceled"):
            self.calls.pop(run_id, None)
        # Only a write is due: a status change needs no claim or hangup poll (those are woken
        # by the API's call.queued / call.hangup signals and the poll interval).
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flush_soon())

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self._poll_interval)
            except TimeoutError:
                self._hangups_asked = True  # the interval: a hangup asked on another node
            else:
                # POST /call wakes us once per call: a moment's wait lets a burst of them
                # share one claim (one UPDATE ... RETURNING) instead of one claim each.
                await asyncio.sleep(CLAIM_DELAY)
            self._wake.clear()
            try:
                await self.poll()
            except Exception:
                log.exception("dialer poll failed")
            if time.monotonic() - self._last_heartbeat >= self._heartbeat_interval:
                self._last_heartbeat = time.monotonic()
                try:
                    await self.keep_claims()
                except Exception:
                    log.exception("dialer heartbeat failed")
        await self.flush()

    # --- one round -----------------------------------------------------------------------------

    async def poll(self) -> None:
        """Write queued updates, act on hangups asked through the API, place due calls.

        Hangups are looked up only after a ``call.hangup`` signal or a poll interval (a new
        call's signal cannot have asked for one), and the trunks' credentials are read once
        per claim, not once per call."""
        await self.flush()
        if self.calls and self._hangups_asked:
            self._hangups_asked = False
            async with self._sessions() as session:
                asked = await repo.hangups_requested(session, run_ids=list(self.calls))
            for run_id in asked:
                call = self.calls.get(run_id)
                if call is not None:
                    call.hangup()
        if self._stopping:
            return
        async with self._sessions() as session:
            now = self._now()
            # Most polls find nothing: a read says so without the claim's UPDATE (write lock).
            if not await repo.any_due_calls(session, now=now):
                return
            rows = await repo.claim_due_calls(session, now=now, node=self.node_id)
            await session.commit()  # the claim alone holds SQLite's write lock, briefly
            # Only trunks the snapshot knows to have credentials are read (none: no statement).
            trunks = self._snapshots.current.trunks
            wanted = {
                row.trunk_id
                for row in rows
                if (trunk := trunks.get(row.trunk_id)) is None or trunk.has_credentials
            }
            credentials = await repo.trunks_credentials(session, trunk_ids=wanted)
        for row in rows:
            await self._place(row, credentials.get(row.trunk_id))
        await self.flush()

    async def keep_claims(self) -> list[str]:
        """Stamp the calls this dialer holds (it is alive), and end the unfinished calls of
        dialers that stopped stamping theirs ``STALE_HEARTBEATS`` intervals ago (a crashed
        process, a lost node): "failed", reason "edge lost", their webhooks queued as for any
        status. Returns the run ids it ended. Their channels were the dead process's own
        (single-node counts), so there is nothing to release here."""
        now = self._now()
        before = now - timedelta(seconds=STALE_HEARTBEATS * self._heartbeat_interval)
        async with self._sessions() as session:
            if self.calls:
                await repo.heartbeat_claims(session, node=self.node_id, now=now)
            stale = [
                run_id
                for run_id in await repo.stale_claims(session, before=before)
                if run_id not in self.calls  # ours, if our own stamps failed: we still hold it
            ]
            if stale:
                ended = {"status": "failed", "reason": EDGE_LOST, "ended_at": now}
                await write_call_updates(session, [(r, ended) for r in stale], now=now)
            await session.commit()
        if stale:
            outbound_claims_swept_total.inc(len(stale))
            log.warning("ended %d outbound calls whose dialer is gone", len(stale))
        return stale

    async def _snapshot_with(self, row: ClaimedCall) -> RoutingSnapshot:
        snapshot = self._snapshots.current
        if row.trunk_id not in snapshot.trunks and self._refresh is not None:
            await self._refresh()  # the API just wrote the trunk: the snapshot may lag
            snapshot = self._snapshots.current
        return snapshot

    async def _place(self, row: ClaimedCall, credentials: tuple[str, str] | None) -> None:
        run_id = row.id
        snapshot = await self._snapshot_with(row)
        trunk = snapshot.trunks.get(row.trunk_id)
        started = self._now()
        if trunk is None or not trunk.places_outbound or not trunk.gateways:
            self._refuse(row, started, 503, "trunk unavailable")
            return
        svc = self._edge.services
        if row.hangup_requested:
            self.report(run_id, {"status": "canceled", "reason": "canceled", "ended_at": started})
            return
        # The limit is cluster-wide with redis.url: the other nodes' calls on the trunk count.
        held = svc.limiter.try_acquire(trunk.id, trunk.channels, run_id) and (
            await svc.confirm_channel(trunk.id, trunk.channels, run_id)
        )
        if not held:
            outbound_attempt(OutboundAttemptResult.CHANNELS)
            self._refuse(row, started, 486, "channel limit reached", record=True)
            return
        try:
            if not trunk.has_credentials:
                credentials = None  # the snapshot is newer than the claim's read
            number = snapshot.numbers_by_key.get(row.from_number.lstrip("+")) or NumberView(
                row.number_id, trunk.id, row.from_number, row.from_number.lstrip("+")
            )
            agent = snapshot.agents.get(row.agent_id) or AgentView(row.agent_id)
            route = InboundRoute(
                trunk=trunk,
                number=number,
                agent=agent,
                lease=ChannelLease(trunk.id, run_id),
                sdp=None,
                late_offer=False,
                dialled=row.to_number.lstrip("+"),
                snapshot_version=snapshot.version,
            )
            setup = OutboundSetup(
                run_id=run_id,
                route=route,
                recipient=row.to_number,
                transport=self._edge.transport(trunk.transport),
                credentials=credentials,
                resolve=self._resolve,
                report=self.report,
            )
            call = OutboundCall(svc, setup, trunk.gateways)
        except Exception:
            log.exception("cannot place outbound call %s", run_id)
            svc.release_channel(trunk.id, run_id)
            self._refuse(row, started, 500, "internal error")
            return
        self.calls[run_id] = call
        call.start()

    def _refuse(
        self, row: ClaimedCall, at: datetime, code: int, reason: str, *, record: bool = False
    ) -> None:
        """The call ends before any INVITE: ``failed`` with the reason (and a call record when the
        trunk's own limit refused it)."""
        self.report(
            row.id,
            {"status": "failed", "reason": reason, "final_sip_code": code, "ended_at": at},
        )
        if record:
            self._edge.services.records.record(
                CallRecordEvent(
                    run_id=row.id,
                    trunk_id=row.trunk_id,
                    direction="outbound",
                    started_at=at,
                    ended_at=datetime.now(UTC),
                    final_sip_code=code,
                    decided_by="channels",
                    number_id=row.number_id,
                    agent_id=row.agent_id,
                    from_number=row.from_number,
                    to_number=row.to_number,
                    hangup_side="edge",
                )
            )
