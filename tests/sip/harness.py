"""End-to-end harness: a tiny UAS and UAC built on sipedge's own layers (transports, transaction
layer, ``sip.dialog``), and a free-port helper.

Process helpers for SIPp live in ``sipp_runner.py``, the pjsua2 peer in ``pjsua2_peer.py``.

UAS: answers INVITE with 180 then 200 + SDP (2xx retransmitted over UDP until the ACK, RFC 3261
§13.3.1.4), takes the ACK, answers BYE with 200, CANCEL with 200 (+ 487 to the INVITE), anything
else with 200. UAC: INVITE with SDP, ACK on 2xx (re-sent on 2xx retransmissions), BYE after a
short hold; ``call()`` resolves with the outcome.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import socket
from dataclasses import dataclass, field

from sipedge.sip.dialog import Dialog, DialogId, dialog_id
from sipedge.sip.headers import parse_via
from sipedge.sip.message import Headers, Request, Response
from sipedge.sip.timers import TimerConfig
from sipedge.sip.transaction import Address, TerminationReason, TxState, build_response
from sipedge.sip.uri import SipUri, parse_uri
from sipedge.stack.transactions import (
    AnyTransaction,
    ClientTransaction,
    ServerTransaction,
    SipTransport,
    TransactionLayer,
)
from sipedge.stack.transport_tcp import TcpTransport
from sipedge.stack.transport_udp import UdpTransport

HOST = "127.0.0.1"


def free_port(kind: str = "udp") -> int:
    """A port on 127.0.0.1 free right now: for UDP, or for both UDP and TCP when ``kind`` is
    "tcp" (peers bind both). Picked at run time so parallel test runs do not collide."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((HOST, 0))
            port = int(udp.getsockname()[1])
            if kind == "udp":
                return port
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((HOST, port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no free port")


def sdp_body(rtp_port: int, *, offer: bool = False, version: int = 1) -> bytes:
    """An offer lists PCMU, PCMA and telephone-event; an answer picks PCMU only, so peers that
    lock a multi-codec answer with a re-INVITE (pjsua2) have no reason to."""
    payloads = "0 8 101" if offer else "0 101"
    lines = [
        "v=0",
        f"o=harness 1 {version} IN IP4 {HOST}",
        "s=sipedge harness",
        f"c=IN IP4 {HOST}",
        "t=0 0",
        f"m=audio {rtp_port} RTP/AVP {payloads}",
        "a=rtpmap:0 PCMU/8000",
        *(["a=rtpmap:8 PCMA/8000"] if offer else []),
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:101 0-16",
        "a=sendrecv",
    ]
    return ("\r\n".join(lines) + "\r\n").encode()


@dataclass
class UacCall:
    invite: Request
    dest: Address
    done: asyncio.Future[str]
    dialog: Dialog | None = None
    ack: Request | None = None
    statuses: list[int] = field(default_factory=list)
    bye_handle: asyncio.TimerHandle | None = None


@dataclass
class UasCall:
    invite_tx: ServerTransaction
    ok: Response | None = None
    dialog: Dialog | None = None
    acked: bool = False
    byed: bool = False
    retransmit: asyncio.TimerHandle | None = None
    answer_later: asyncio.TimerHandle | None = None


@dataclass
class Stats:
    invites: int = 0
    reinvites: int = 0
    acks: int = 0
    byes: int = 0
    cancels: int = 0
    failures: list[str] = field(default_factory=list)


class HarnessUA:
    """One UA on one transport, acting as UAS for what it receives and UAC for ``call()``."""

    def __init__(
        self, *, config: TimerConfig | None = None, hold: float = 0.2, ring: float = 0.0
    ) -> None:
        self.config = config or TimerConfig()
        self.hold = hold
        self.ring = ring  # delay between 180 and 200
        self.stats = Stats()
        self.transport: SipTransport | None = None
        self.layer: TransactionLayer | None = None
        self._uas: dict[DialogId, UasCall] = {}
        self._uac: dict[str, UacCall] = {}
        self._tag = itertools.count(1)
        self._media = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # swallows the peer's RTP
        self._media.bind((HOST, 0))
        self._media.setblocking(False)
        self.rtp_port = int(self._media.getsockname()[1])
        self._endpoint: UdpTransport | TcpTransport | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self, transport: str, port: int) -> None:
        """Bind ``transport`` ("udp"/"tcp") on 127.0.0.1:``port`` with a transaction layer."""
        layer = TransactionLayer(self, config=self.config)
        self.layer = layer
        endpoint: UdpTransport | TcpTransport
        if transport == "udp":
            endpoint = await UdpTransport.create(HOST, port, layer.on_transport_message)
        else:
            endpoint = await TcpTransport.create(
                HOST, port, layer.on_transport_message, on_connect_error=layer.connect_failed
            )
        layer.attach(endpoint)
        self.transport = endpoint
        self._endpoint = endpoint

    async def close(self) -> None:
        for call in self._uas.values():
            for handle in (call.retransmit, call.answer_later):
                if handle is not None:
                    handle.cancel()
        for uac in self._uac.values():
            if uac.bye_handle is not None:
                uac.bye_handle.cancel()
        if self.layer is not None:
            self.layer.close()
        if self._endpoint is not None:
            await self._endpoint.close()
        self._media.close()

    @property
    def address(self) -> Address:
        assert self.transport is not None
        return self.transport.local_address

    @property
    def uas_calls(self) -> list[UasCall]:
        return list(self._uas.values())

    @property
    def completed_uas_calls(self) -> int:
        """Calls answered 200 and ended by a BYE we answered 200. The ACK is counted apart
        (``stats.acks``): a BYE may legitimately overtake a lost ACK."""
        return sum(1 for c in self._uas.values() if c.byed)

    # --- TransactionUser ---------------------------------------------------------------------

    def on_request(
        self,
        request: Request,
        tx: ServerTransaction | None,
        source: Address,
        transport: SipTransport,
    ) -> None:
        method = request.method
        if method == "ACK":
            self._on_ack(request)
            return
        if tx is None:
            return
        if method == "INVITE":
            self._on_invite(request, tx)
        elif method == "BYE":
            self._on_bye(request, tx)
        elif method == "CANCEL":
            self._on_cancel(request, tx)
        else:
            tx.respond(build_response(request, 200, "OK", to_tag=self._new_tag()))

    def on_response(self, response: Response, tx: ClientTransaction | None) -> None:
        call = self._uac.get(response.call_id)
        if call is None:
            return
        method = response.cseq.method
        if method == "INVITE":
            self._on_invite_response(call, response)
        elif method == "BYE" and response.status >= 200 and not call.done.done():
            call.done.set_result("completed" if response.status < 300 else f"bye-{response.status}")

    def on_terminated(self, tx: AnyTransaction, reason: TerminationReason) -> None:
        if reason is TerminationReason.NORMAL:
            return
        self.stats.failures.append(f"{tx.request.method} {reason.value}")
        call = self._uac.get(tx.request.call_id)
        if call is not None and not call.done.done():
            call.done.set_result(f"{tx.request.method.lower()}-{reason.value}")

    # --- UAS ---------------------------------------------------------------------------------

    def _new_tag(self) -> str:
        return f"h{next(self._tag)}{secrets.token_hex(4)}"

    def _contact(self) -> str:
        assert self.transport is not None
        host, port = self.transport.local_address
        return f"<sip:harness@{host}:{port};transport={self.transport.name.lower()}>"

    def _on_invite(self, invite: Request, tx: ServerTransaction) -> None:
        if invite.to.tag is not None:
            self._on_reinvite(invite, tx)
            return
        self.stats.invites += 1
        tag = self._new_tag()
        ringing = build_response(invite, 180, "Ringing", to_tag=tag)
        ringing.headers.add("Contact", self._contact())
        tx.respond(ringing)
        ok = build_response(invite, 200, "OK", to_tag=tag)
        ok.headers.add("Contact", self._contact())
        ok.headers.add("Content-Type", "application/sdp")
        ok.body = sdp_body(self.rtp_port)
        assert self.transport is not None
        host, port = self.transport.local_address
        local_via = parse_via(f"SIP/2.0/{self.transport.name} {host}:{port}")[0]
        call = UasCall(tx, ok, Dialog.uas(invite, ok, local_via=local_via))
        assert call.dialog is not None
        self._uas[call.dialog.id] = call
        if self.ring > 0:
            call.answer_later = asyncio.get_running_loop().call_later(self.ring, self._answer, call)
        else:
            self._answer(call)

    def _on_reinvite(self, invite: Request, tx: ServerTransaction) -> None:
        call = self._uas.get(dialog_id(invite))
        if call is None or call.byed:
            tx.respond(build_response(invite, 481, "Call/Transaction Does Not Exist"))
            return
        self.stats.reinvites += 1
        ok = build_response(invite, 200, "OK")
        ok.headers.add("Contact", self._contact())
        ok.headers.add("Content-Type", "application/sdp")
        ok.body = sdp_body(self.rtp_port, version=2)
        call.invite_tx, call.ok, call.acked = tx, ok, False
        self._answer(call)

    def _answer(self, call: UasCall) -> None:
        if call.invite_tx.state is not TxState.PROCEEDING or call.ok is None:
            return  # cancelled meanwhile
        call.invite_tx.respond(call.ok)
        if not call.invite_tx.transport.reliable:
            # RFC 3261 §13.3.1.4: the UAS core retransmits its 2xx (T1 doubling up to T2) until
            # the ACK arrives; the transaction (Accepted, RFC 6026) passes them through.
            self._schedule_2xx(call, self.config.t1, self.config.timeout)

    def _schedule_2xx(self, call: UasCall, interval: float, remaining: float) -> None:
        if remaining <= 0:
            self.stats.failures.append("2xx never acknowledged")
            return
        loop = asyncio.get_running_loop()

        def fire() -> None:
            if call.acked or call.ok is None:
                return
            call.invite_tx.respond(call.ok)
            self._schedule_2xx(call, min(2 * interval, self.config.t2), remaining - interval)

        call.retransmit = loop.call_later(interval, fire)

    def _on_ack(self, ack: Request) -> None:
        call = self._uas.get(dialog_id(ack))
        if call is None:
            return  # the ACK for a non-2xx is absorbed by the transaction; this is noise
        if not call.acked:
            self.stats.acks += 1
        call.acked = True
        if call.retransmit is not None:
            call.retransmit.cancel()

    def _on_bye(self, bye: Request, tx: ServerTransaction) -> None:
        call = self._uas.get(dialog_id(bye))
        if call is None:
            tx.respond(build_response(bye, 481, "Call/Transaction Does Not Exist"))
            return
        self.stats.byes += 1
        call.byed = True
        if call.retransmit is not None:
            call.retransmit.cancel()
        tx.respond(build_response(bye, 200, "OK"))

    def _on_cancel(self, cancel: Request, tx: ServerTransaction) -> None:
        assert self.layer is not None
        self.stats.cancels += 1
        invite_tx = self.layer.find_invite(cancel)
        if invite_tx is None:
            tx.respond(build_response(cancel, 481, "Call/Transaction Does Not Exist"))
            return
        tx.respond(build_response(cancel, 200, "OK", to_tag=self._new_tag()))
        if invite_tx.state is TxState.PROCEEDING:
            # RFC 3261 §9.2: the INVITE is answered 487 once cancelled.
            for call in self._uas.values():
                if call.invite_tx is invite_tx:
                    call.ok = None
                    invite_tx.respond(
                        build_response(
                            invite_tx.request,
                            487,
                            "Request Terminated",
                            to_tag=call.dialog.local_tag if call.dialog else None,
                        )
                    )

    # --- UAC ---------------------------------------------------------------------------------

    async def call(self, dest: Address, *, user: str = "service", timeout: float = 15.0) -> str:
        """Place one call to ``dest``; returns "completed" or a failure label."""
        assert self.layer is not None and self.transport is not None
        loop = asyncio.get_running_loop()
        host, port = self.transport.local_address
        call_id = f"{secrets.token_hex(8)}@{host}"
        target = f"sip:{user}@{dest[0]}:{dest[1]};transport={self.transport.name.lower()}"
        headers = Headers()
        headers.add("Max-Forwards", "70")
        headers.add("From", f"<sip:harness@{host}:{port}>;tag={self._new_tag()}")
        headers.add("To", f"<sip:{user}@{dest[0]}:{dest[1]}>")
        headers.add("Call-ID", call_id)
        headers.add("CSeq", "1 INVITE")
        headers.add("Contact", self._contact())
        headers.add("Content-Type", "application/sdp")
        invite = Request("INVITE", parse_uri(target), headers, sdp_body(self.rtp_port, offer=True))
        call = UacCall(invite, dest, loop.create_future())
        self._uac[call_id] = call
        self.layer.send_request(invite, dest, self.transport)
        try:
            return await asyncio.wait_for(asyncio.shield(call.done), timeout)
        except TimeoutError:
            return "timeout"

    def _on_invite_response(self, call: UacCall, response: Response) -> None:
        call.statuses.append(response.status)
        status = response.status
        if status < 200:
            return
        if status >= 300:
            if not call.done.done():
                call.done.set_result(f"invite-{status}")
            return
        assert self.layer is not None and self.transport is not None
        if call.dialog is None:
            call.dialog = Dialog.uac(call.invite, response)
            call.ack = call.dialog.create_request("ACK")
            loop = asyncio.get_running_loop()
            call.bye_handle = loop.call_later(self.hold, self._send_bye, call)
        assert call.ack is not None
        # A 2xx retransmission means our ACK was lost: send the same ACK again (§13.2.2.4).
        self.layer.send_stateless(call.ack, self._target(call), self.transport)

    def _target(self, call: UacCall) -> Address:
        assert call.dialog is not None
        uri = call.dialog.remote_target
        if isinstance(uri, SipUri):
            return uri.host, uri.port or 5060
        return call.dest

    def _send_bye(self, call: UacCall) -> None:
        assert self.layer is not None and self.transport is not None and call.dialog is not None
        bye = call.dialog.create_request("BYE")
        self.layer.send_request(bye, self._target(call), self.transport)
