"""In-dialog requests relayed between the legs of an answered call: re-INVITE (hold/resume, with
the trunk's codec policy) and INFO (DTMF) and the like; the response comes back the same way.

Only the method, the (filtered) body and the allow-listed body headers cross
(``responses.relayable_headers``); each side keeps its own dialog, CSeq and Contact.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sipedge.edge.codecs import filter_sdp
from sipedge.edge.decisions import Reject
from sipedge.runtime.responses import (
    edge_warning,
    relay_response,
    relayable_headers,
    respond,
)
from sipedge.sip.dialog import DialogError
from sipedge.sip.message import Request, Response, canonical_name
from sipedge.sip.transaction import TxState
from sipedge.stack.transactions import ServerTransaction

if TYPE_CHECKING:
    from sipedge.runtime.b2bua import Call
    from sipedge.runtime.legs import Leg

__all__ = ["RELAYED_METHODS", "on_relay_failed", "on_relayed_response", "relay_request"]

log = logging.getLogger(__name__)

RELAYED_METHODS = frozenset({"INVITE", "INFO", "UPDATE", "MESSAGE", "NOTIFY"})


def _body_headers(msg: Request | Response) -> list[tuple[str, str]]:
    return [(n, v) for n, v in relayable_headers(msg) if canonical_name(n) != "content-type"]


def relay_request(call: Call, leg: Leg, request: Request, tx: ServerTransaction) -> None:
    """``request`` arrived in ``leg``'s dialog: send its counterpart on the other leg."""
    other = call.other(leg)
    method = request.method
    if call.ended or other.dialog is None or other.dialog.early:
        tx.respond(respond(request, 491))
        return
    body, content_type = request.body, request.content_type
    if method == "INVITE":
        busy = any(r.method == "INVITE" for _, r in other.pending.values())
        if busy or leg.ok is not None:
            tx.respond(respond(request, 491))  # RFC 3261 §14.2: one re-INVITE at a time
            return
        if body:
            filtered = filter_sdp(body, call.route.trunk.codecs)
            if isinstance(filtered, Reject):
                tx.respond(respond(request, 488, warning=edge_warning(filtered.reason)))
                return
            body, content_type = filtered.body or b"", "application/sdp"
    try:
        out = other.dialog.create_request(
            method,
            body=body,
            content_type=content_type if body else None,
            headers=_body_headers(request),
        )
    except DialogError as exc:
        log.debug("cannot relay %s: %s", method, exc.reason)
        tx.respond(respond(request, 500))
        return
    other.pending[out.cseq.seq] = (tx, request)
    call.svc.send(out, other)


def on_relayed_response(call: Call, leg: Leg, response: Response) -> None:
    """A response on ``leg`` to a request we relayed onto it (or to our BYE: ignored)."""
    seq, method, status = response.cseq.seq, response.cseq.method, response.status
    entry = leg.pending.get(seq)
    if entry is None or entry[1].method != method:
        if method == "INVITE" and 200 <= status < 300:
            ack = leg.reinvite_ack
            if ack is not None and ack.cseq.seq == seq:
                call.svc.send_stateless(ack, leg)  # 2xx retransmission: our ACK was lost
        return
    if status < 200:
        return
    del leg.pending[seq]
    tx, original = entry
    origin = call.other(leg)
    body: bytes | None = response.body or None
    contact = None
    extra: list[tuple[str, str]] = []
    ok = method == "INVITE" and status < 300
    if ok:
        assert leg.dialog is not None
        leg.dialog.receive_response(response)
        ack = leg.dialog.create_request("ACK")
        leg.reinvite_ack = ack
        call.svc.send_stateless(ack, leg)
        if body is not None:
            body = call.filtered(body)
            if body is None:
                _answer(tx, respond(original, 488, warning=edge_warning("no common codec")))
                return
        contact = call.svc.contact(origin.transport, origin.peer)
    elif method != "INVITE":
        extra = _body_headers(response)
    else:
        body = None  # an error to a re-INVITE carries nothing worth relaying
    out = relay_response(original, response, to_tag=None, contact=contact, body=body, extra=extra)
    _answer(tx, out)
    if ok and not call.ended:
        call.send_2xx(origin, tx, out)


def on_relay_failed(call: Call, leg: Leg, request: Request) -> None:
    """A request we relayed onto ``leg`` timed out or could not be sent: 408 to its origin."""
    entry = leg.pending.pop(request.cseq.seq, None)
    if entry is not None:
        tx, original = entry
        _answer(tx, respond(original, 408))


def answer_pending(leg: Leg) -> None:
    """The call ended with relayed requests outstanding: answer their origins 481."""
    for tx, original in leg.pending.values():
        _answer(tx, respond(original, 481))
    leg.pending.clear()


def _answer(tx: ServerTransaction, response: Response) -> None:
    if tx.state in (TxState.TRYING, TxState.PROCEEDING):
        tx.respond(response)
