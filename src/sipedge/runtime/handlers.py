"""The transaction user of the edge: every request and response the transaction layer delivers.

New INVITEs run the edge pipeline (``edge.inbound.evaluate_invite``) and ``render_decision`` turns
its answer into a response, a log line and a metric (livekit's seam: one switch). Requests and
responses of live calls go to their ``Call``; anything else gets the RFC answer (481, 405, 200 to
OPTIONS from a carrier).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sipedge.edge.carrier_acl import UnknownSourcePolicy
from sipedge.edge.channels import channels_reject
from sipedge.edge.decisions import Accept, Drop, Reject
from sipedge.edge.flood import FloodGuard
from sipedge.edge.inbound import (
    InboundDecision,
    InboundInvite,
    InboundRoute,
    crossed_trunks,
    evaluate_invite,
    evaluate_options,
)
from sipedge.edge.numbers import dialled_digits
from sipedge.edge.snapshot import RoutingSnapshot
from sipedge.metrics import (
    DROP_CHILDREN,
    FLOOD_CHILDREN,
    INBOUND_CHILDREN,
    LIMIT_CHILDREN,
    CallEnd,
    InboundAction,
    InboundOutcome,
    SipLimit,
)
from sipedge.runtime.b2bua import Call
from sipedge.runtime.call_status import emit, status_of_record
from sipedge.runtime.legs import EdgeServices
from sipedge.runtime.messages import caller_number
from sipedge.runtime.ports import CallRecordEvent, HangupSide, SnapshotSource
from sipedge.runtime.relay import (
    RELAYED_METHODS,
    on_relay_failed,
    on_relayed_response,
    relay_request,
)
from sipedge.runtime.responses import ALLOW, edge_warning, render_reject, respond
from sipedge.sip.errors import SipError
from sipedge.sip.message import Request, Response
from sipedge.sip.transaction import TerminationReason, TxState
from sipedge.sip.uri import SipUri, TelUri
from sipedge.stack.transactions import (
    AnyTransaction,
    ClientTransaction,
    ServerTransaction,
    SipTransport,
)

__all__ = ["EdgeHandler", "render_decision"]

log = logging.getLogger(__name__)

_IN_DIALOG = frozenset({"BYE", "ACK", "CANCEL", "INFO", "UPDATE", "PRACK", "NOTIFY"})
_ALLOWED = frozenset(m.strip() for m in ALLOW.split(","))


@dataclass(frozen=True, slots=True)
class _NewInvite:
    """A new INVITE between its policy decision and its answer (which may wait for Redis)."""

    request: Request
    tx: ServerTransaction
    tag: str
    source: tuple[str, int]
    transport: SipTransport
    started_at: datetime
    started_mono: float
    dialled: tuple[str | None, str, str | None]  # the Request-URI user, its scheme, To's user


def render_decision(
    decision: InboundDecision,
    request: Request,
    tx: ServerTransaction,
    to_tag: str,
) -> InboundRoute | None:
    """The one switch: answer (or not), count, log. Returns the route of an accepted call."""
    if isinstance(decision, Accept):
        INBOUND_CHILDREN[(InboundAction.ACCEPTED, InboundOutcome.ACCEPTED)].inc()
        log.debug("INVITE %s accepted on trunk %s", request.call_id, decision.route.trunk.id)
        return decision.route
    outcome = InboundOutcome(decision.metric_reason.value)
    if isinstance(decision, Drop):
        INBOUND_CHILDREN[(InboundAction.DROPPED, outcome)].inc()
        DROP_CHILDREN[outcome].inc()
        log.debug("INVITE %s dropped: %s", request.call_id, outcome.value)
        return None
    tx.respond(render_reject(request, decision, to_tag=to_tag))
    INBOUND_CHILDREN[(InboundAction.REJECTED, outcome)].inc()
    log.debug("INVITE %s refused %d: %s", request.call_id, decision.status, decision.reason)
    return None


def _uri_user(request: Request) -> tuple[str | None, str, str | None]:
    uri = request.uri
    user: str | None
    if isinstance(uri, TelUri):
        user, scheme = uri.number, "tel"
    elif isinstance(uri, SipUri):
        user, scheme = uri.user, uri.scheme
    else:
        user, scheme = None, "sip"
    to_uri = request.to.uri
    to_user = to_uri.user if isinstance(to_uri, SipUri) else None
    return user, scheme, to_user


class EdgeHandler:
    """``stack.transactions.TransactionUser`` of the edge."""

    def __init__(
        self,
        svc: EdgeServices,
        *,
        snapshots: SnapshotSource,
        unknown_source: UnknownSourcePolicy,
        observe: Callable[[RoutingSnapshot], None],
        flood: FloodGuard | None = None,
        max_dialogs: int | None = None,
    ) -> None:
        self.svc = svc
        self.flood = flood
        # sip.max_dialogs: a call holds two dialogs (carrier and agent legs); None: no cap.
        self.max_dialogs = max_dialogs
        self.snapshots = snapshots
        self.unknown_source: UnknownSourcePolicy = unknown_source
        self.observe = observe
        # Call-ID -> the INVITE whose channel is being confirmed in Redis (redis.url set).
        self._confirming: dict[str, ServerTransaction] = {}
        self._confirm_tasks: set[asyncio.Task[None]] = set()

    # --- requests ------------------------------------------------------------------------------

    def on_request(
        self,
        request: Request,
        tx: ServerTransaction | None,
        source: tuple[str, int],
        transport: SipTransport,
    ) -> None:
        call = self.svc.calls.get(request.call_id)
        if call is not None:
            self._in_call(call, request, tx)
            return
        method = request.method
        if method == "ACK" or tx is None:
            return
        tag = self.svc.new_tag()
        if request.to.tag is None and method == "INVITE":
            self._new_invite(request, tx, source, transport)
        elif request.to.tag is None and method == "OPTIONS":
            decision = evaluate_options(
                source[0], self.snapshots.current, unknown_source=self.unknown_source
            )
            if isinstance(decision, Accept):
                ok = respond(request, 200, to_tag=tag)
                ok.headers.add("Allow", ALLOW)
                ok.headers.add("Accept", "application/sdp")
                tx.respond(ok)
            elif isinstance(decision, Reject):
                tx.respond(render_reject(request, decision, to_tag=tag))
        elif method == "CANCEL":
            found = self.svc.layer.knows_invite(request)
            # §9.2: a CANCEL for an INVITE already answered has no effect but gets its 200.
            tx.respond(respond(request, 200 if found else 481, to_tag=tag))
            pending = self._confirming.get(request.call_id)
            if pending is not None and pending is self.svc.layer.find_invite(request):
                # Its channel is being confirmed in Redis: end it now (§9.2: 487), the
                # confirmation sees the answered transaction and gives the channel back.
                pending.respond(respond(pending.request, 487, to_tag=tag))
        elif request.to.tag is not None or method in _IN_DIALOG or method in _ALLOWED:
            tx.respond(respond(request, 481, to_tag=tag))
        else:
            tx.respond(respond(request, 405, to_tag=tag))

    def _new_invite(
        self,
        request: Request,
        tx: ServerTransaction,
        source: tuple[str, int],
        transport: SipTransport,
    ) -> None:
        svc = self.svc
        started_at, started_mono = datetime.now(UTC), svc.loop.time()
        tag = svc.new_tag()
        try:
            hops = request.max_forwards
        except SipError:
            hops = -1
        if hops <= 0:
            status = 483 if hops == 0 else 400
            tx.respond(respond(request, status, to_tag=tag))
            INBOUND_CHILDREN[(InboundAction.REJECTED, InboundOutcome.INVALID)].inc()
            return
        flood = self.flood
        if flood is not None and not flood.admit_invite(svc.loop.time()):
            # The global INVITE admission cap: shed load before the process saturates.
            FLOOD_CHILDREN["invite_cap"].inc()
            self._overloaded(request, tx, tag)
            return
        cap = self.max_dialogs
        if cap is not None and 2 * (len(svc.live) + 1) > cap:
            LIMIT_CHILDREN[SipLimit.DIALOGS].inc()
            self._overloaded(request, tx, tag)
            return
        snapshot = self.snapshots.current
        self.observe(snapshot)
        user, scheme, to_user = _uri_user(request)
        sdp = request.body if _is_sdp(request) else None
        invite = InboundInvite(
            source_ip=source[0],
            transport="tcp" if transport.reliable else "udp",
            call_id=request.call_id,
            request_uri_user=user,
            request_uri_scheme=scheme,
            to_user=to_user,
            sdp=sdp,
        )
        decision = evaluate_invite(
            invite, snapshot, svc.limiter, unknown_source=self.unknown_source
        )
        new = _NewInvite(
            request, tx, tag, source, transport, started_at, started_mono, (user, scheme, to_user)
        )
        if svc.cluster is not None and isinstance(decision, Accept):
            # The channel is this node's; the trunk's limit is the cluster's: ask Redis first.
            self._confirming[request.call_id] = tx
            task = svc.loop.create_task(self._confirm(decision, new))
            self._confirm_tasks.add(task)  # the loop keeps only a weak reference to a task
            task.add_done_callback(self._confirm_tasks.discard)
            return
        self._decided(decision, new)

    async def _confirm(self, decision: Accept[InboundRoute], new: _NewInvite) -> None:
        svc = self.svc
        route = decision.route
        try:
            held = await svc.confirm_channel(
                route.trunk.id, route.trunk.channels, route.lease.call_id
            )
        finally:
            self._confirming.pop(new.request.call_id, None)
        if new.tx.state is not TxState.PROCEEDING:
            # CANCELled while we asked (487 sent), or the transaction failed: no call, but the
            # INVITE crossed the trunk and leaves its record like any call that got that far.
            svc.release_channel(route.trunk.id, route.lease.call_id)  # a no-op when refused
            self._cancelled_early(decision, new)
            return
        final: InboundDecision = decision
        if not held:
            final = channels_reject(
                route.trunk.id, number_id=route.number.id, agent_id=route.agent.id
            )
        self._decided(final, new)

    def _cancelled_early(self, decision: Accept[InboundRoute], new: _NewInvite) -> None:
        route, request = decision.route, new.request
        try:
            self._report(decision, route, request, new.started_at, new.dialled)
            self._unanswered(
                request,
                new.started_at,
                trunk_id=route.trunk.id,
                status=487,
                decided_by=CallEnd.CANCELED.value,
                number_id=route.number.id,
                agent_id=route.agent.id,
                to_number=route.number.e164,
                side="carrier",
            )
        except Exception:
            log.exception("activity/record sink failed")  # the sinks must not raise (ports.py)

    def _decided(self, decision: InboundDecision, new: _NewInvite) -> None:
        """Answer, report and, when accepted, start the call."""
        svc = self.svc
        request, tx, tag = new.request, new.tx, new.tag
        route = render_decision(decision, request, tx, tag)
        try:
            self._report(decision, route, request, new.started_at, new.dialled)
        except Exception:
            # The sinks must not raise (ports.py); if one does, the call path carries on.
            log.exception("activity/record sink failed")
        if route is None:
            return
        try:
            call = Call(
                svc,
                route=route,
                invite=request,
                tx=tx,
                source=new.source,
                transport=new.transport,
                started_at=new.started_at,
                started_mono=new.started_mono,
            )
        except Exception:
            # Never leak the channel the pipeline took, whatever went wrong building the leg.
            log.exception("cannot build the agent leg")
            svc.release_channel(route.trunk.id, route.lease.call_id)
            tx.respond(respond(request, 503, to_tag=tag, warning=edge_warning("internal error")))
            return
        svc.register(call)
        call.start()

    def _overloaded(self, request: Request, tx: ServerTransaction, tag: str) -> None:
        """503 + Retry-After (the layer's, from flood.retry_after_seconds): try again soon."""
        busy = respond(request, 503, to_tag=tag, warning=edge_warning("overloaded"))
        busy.headers.add("Retry-After", str(self.svc.layer.retry_after))
        tx.respond(busy)

    def _report(
        self,
        decision: InboundDecision,
        route: InboundRoute | None,
        request: Request,
        started_at: datetime,
        dialled: tuple[str | None, str, str | None],
    ) -> None:
        """Trunks crossed at step 3 saw traffic (health, ``last_inbound_at``); a refused call
        that got that far leaves its record."""
        svc = self.svc
        now = datetime.now(UTC)
        crossed = crossed_trunks(decision)
        number_id = route.number.id if route is not None else getattr(decision, "number_id", None)
        for trunk_id in crossed:
            svc.activity.call_crossed(
                trunk_id=trunk_id, number_id=number_id, direction="inbound", at=now
            )
        if not isinstance(decision, Reject) or not crossed:
            return
        self._unanswered(
            request,
            started_at,
            trunk_id=crossed[0],
            status=decision.status,
            decided_by=decision.metric_reason.value,
            number_id=decision.number_id,
            agent_id=decision.agent_id,
            to_number=_dialled(*dialled),
            side="edge",
        )

    def _unanswered(
        self,
        request: Request,
        started_at: datetime,
        *,
        trunk_id: str,
        status: int,
        decided_by: str,
        number_id: str | None,
        agent_id: str | None,
        to_number: str | None,
        side: HangupSide,
    ) -> None:
        """The record (and its one, final status) of an INVITE that crossed the trunk and was
        answered ``status`` without ever becoming a call."""
        svc = self.svc
        record = CallRecordEvent(
            run_id=svc.new_run_id(),
            trunk_id=trunk_id,
            direction="inbound",
            started_at=started_at,
            ended_at=datetime.now(UTC),
            final_sip_code=status,
            decided_by=decided_by,
            number_id=number_id,
            agent_id=agent_id,
            from_number=caller_number(request.from_),
            to_number=to_number,
            carrier_call_id=request.call_id,
            hangup_side=side,
        )
        svc.records.record(record)
        emit(svc.statuses, status_of_record(record))

    def _in_call(self, call: Call, request: Request, tx: ServerTransaction | None) -> None:
        leg = call.leg_of(request.call_id)
        method = request.method
        if method == "ACK":
            call.on_ack(leg, request)
            return
        if tx is None:
            return
        if method == "CANCEL":
            invite_tx = self.svc.layer.find_invite(request)
            tx.respond(respond(request, 200 if self.svc.layer.knows_invite(request) else 481))
            if invite_tx is call.invite_tx:
                call.on_cancel()
            return
        dialog = leg.dialog
        if dialog is None or request.to.tag != dialog.local_tag or dialog.early:
            # A second INVITE on a live Call-ID without our tag is a merged request (§8.2.2.2).
            status = 482 if method == "INVITE" and request.to.tag is None else 481
            tx.respond(respond(request, status, to_tag=self.svc.new_tag()))
            return
        refused = dialog.receive_request(request)
        if refused is not None:
            tx.respond(respond(request, refused))
        elif method == "BYE":
            tx.respond(respond(request, 200))
            call.on_bye(leg)
        elif method == "OPTIONS":
            ok = respond(request, 200)
            ok.headers.add("Allow", ALLOW)
            tx.respond(ok)
        elif method in RELAYED_METHODS:
            relay_request(call, leg, request, tx)
        else:
            tx.respond(respond(request, 405))

    # --- responses and terminations ------------------------------------------------------------

    def on_response(self, response: Response, tx: ClientTransaction | None) -> None:
        if tx is not None and response.status >= 200:
            self.svc.byes.discard(tx)
        call = self.svc.calls.get(response.call_id)
        if call is None:
            if 200 <= response.status < 300 and response.cseq.method == "INVITE":
                self.svc.clean_up_orphan(response, tx)
            return
        leg = call.leg_of(response.call_id)
        cseq = response.cseq
        if call.on_own_response(leg, response):
            return
        if leg is call.agent and cseq.method == "INVITE" and cseq.seq == call.agent_invite_seq:
            call.on_agent_invite_response(response)
        else:
            on_relayed_response(call, leg, response)

    def on_terminated(self, tx: AnyTransaction, reason: TerminationReason) -> None:
        request = tx.request
        if isinstance(tx, ClientTransaction):
            self.svc.byes.discard(tx)
        if reason is TerminationReason.NORMAL:
            return
        call = self.svc.calls.get(request.call_id)
        if call is None:
            return
        leg = call.leg_of(request.call_id)
        if isinstance(tx, ClientTransaction):
            if call.on_own_failure(request, reason):
                return
            if request is call.agent_invite:
                call.on_agent_invite_failed(reason)
            else:
                on_relay_failed(call, leg, request)
        elif tx is call.invite_tx and reason is TerminationReason.TRANSPORT_ERROR:
            call.carrier_lost()


def _is_sdp(request: Request) -> bool:
    content_type = request.content_type
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() == (
        "application/sdp"
    )


def _dialled(user: str | None, scheme: str, to_user: str | None) -> str | None:
    digits = dialled_digits(user, scheme) or dialled_digits(to_user, "sip")
    return f"+{digits}" if digits else None
