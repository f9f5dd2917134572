"""Dialog state (RFC 3261 §12) and in-dialog request construction.

A dialog is created on the UAC side from a 2xx (or a tagged 1xx: an early dialog) to our INVITE
(§12.1.2) and on the UAS side when we send a 2xx or tagged 1xx (§12.1.1). It holds what every
later request of the call needs: the ids, the route set, the remote target, both CSeq counters.

Pure state: random branch values come from an injectable generator; nothing is sent from here.
The object is mutable on purpose (CSeq and the remote target change during the call) and owned by
one call leg, so nothing shares it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import NamedTuple

from sipedge.sip.errors import SipError
from sipedge.sip.headers import NameAddr, Via, parse_name_addr, parse_via
from sipedge.sip.keys import MAGIC_COOKIE
from sipedge.sip.message import Headers, Message, Request, Response
from sipedge.sip.randomness import token_hex
from sipedge.sip.uri import SipUri, Uri, parse_uri

__all__ = ["Dialog", "DialogError", "DialogId", "default_branch", "dialog_id"]

# Methods whose 2xx replaces the remote target with the Contact (§12.2, RFC 3311 UPDATE,
# RFC 6665 SUBSCRIBE/NOTIFY); these also carry our Contact when we send them.
TARGET_REFRESH = frozenset({"INVITE", "UPDATE", "SUBSCRIBE", "NOTIFY", "REFER"})
MAX_FORWARDS = 70
_MAX_FORWARDS = str(MAX_FORWARDS)


class DialogError(SipError):
    """A message cannot create or continue a dialog. ``status`` says what to answer, if anything."""


class DialogId(NamedTuple):
    """RFC 3261 §12: Call-ID + local tag + remote tag, from this UA's point of view."""

    call_id: str
    local_tag: str
    remote_tag: str


def dialog_id(msg: Message) -> DialogId:
    """The id of the dialog a message we *received* belongs to.

    A request we receive carries our tag in To and the peer's in From; a response to our request
    carries ours in From and the peer's in To (§12.2.2, §12.2.1.2). A missing tag is "" (RFC 2543
    peers), which never matches a dialog we created since our tags are never empty.
    """
    from_tag, to_tag = msg.from_.tag or "", msg.to.tag or ""
    if isinstance(msg, Request):
        return DialogId(msg.call_id, to_tag, from_tag)
    return DialogId(msg.call_id, from_tag, to_tag)


def default_branch() -> str:
    """A fresh RFC 3261 branch: the magic cookie and 64 random bits (§8.1.1.7)."""
    return MAGIC_COOKIE + token_hex(8)


def _contact_uri(msg: Message) -> Uri:
    contacts = msg.contact
    if len(contacts) != 1:
        # §12.1.1/§12.1.2: exactly one Contact URI in the dialog-creating messages.
        raise DialogError("dialog-creating message needs exactly one Contact", 400)
    return contacts[0].uri


def _is_secure(request: Request) -> bool:
    # §12.1.1/§12.1.2: secure when the request went over TLS and its Request-URI was SIPS. The
    # top Via names the transport of the hop this request took (ours for UAC, the peer's for UAS).
    uri = request.uri
    return isinstance(uri, SipUri) and uri.scheme == "sips" and request.top_via.transport == "TLS"


class Dialog:
    """One side's dialog state. What every request we send repeats (From, To, Via, Contact, the
    remote target) is kept as the header text it renders to, not as parsed values: a held call
    keeps two dialogs for its whole life, and each request would otherwise re-render them. The
    parsed views are properties (memoized parsers, so repeated reads cost a dict probe)."""

    __slots__ = (
        "_contact",
        "_from",
        "_target",
        "_to",
        "_via",
        "call_id",
        "early",
        "invite_seq",
        "local_seq",
        "local_tag",
        "new_branch",
        "remote_seq",
        "remote_tag",
        "route_set",
        "secure",
    )

    def __init__(
        self,
        *,
        call_id: str,
        local_tag: str,
        remote_tag: str,
        local_uri: NameAddr,
        remote_uri: NameAddr,
        remote_target: Uri,
        route_set: tuple[NameAddr, ...],
        local_seq: int,
        remote_seq: int | None,
        secure: bool,
        local_via: Via,
        local_contact: NameAddr | None = None,
        early: bool = False,
        invite_seq: int | None = None,
        new_branch: Callable[[], str] = default_branch,
    ) -> None:
        self.call_id = call_id
        self.local_tag = local_tag
        self.remote_tag = remote_tag
        self._from = str(local_uri)  # our From in requests we send, with our tag
        # Our To in requests we send, with the peer's tag (if any).
        self._to = str(remote_uri.with_tag(remote_tag) if remote_tag else remote_uri)
        self._target = str(remote_target)
        self.route_set = route_set
        self.local_seq = local_seq  # CSeq of the last request we sent in this dialog
        self.remote_seq = remote_seq  # CSeq of the last request the peer sent; None: none yet
        self.secure = secure
        # Our sent-by (transport/host/port/params); a branch is added per request.
        self._via = str(local_via)
        self._contact = str(local_contact) if local_contact is not None else None  # target refresh
        self.early = early
        # CSeq number of our last INVITE: the ACK for its 2xx reuses it (§13.2.2.4).
        self.invite_seq = invite_seq
        self.new_branch = new_branch

    def __repr__(self) -> str:
        return f"Dialog({self.id!r}, early={self.early})"

    @property
    def id(self) -> DialogId:
        return DialogId(self.call_id, self.local_tag, self.remote_tag)

    @property
    def local_uri(self) -> NameAddr:
        return parse_name_addr(self._from)

    @property
    def remote_uri(self) -> NameAddr:
        return parse_name_addr(self._to)

    @property
    def remote_target(self) -> Uri:
        return parse_uri(self._target)

    @remote_target.setter
    def remote_target(self, uri: Uri) -> None:
        self._target = str(uri)

    @property
    def local_via(self) -> Via:
        return parse_via(self._via)[0]

    @property
    def local_contact(self) -> NameAddr | None:
        return parse_name_addr(self._contact) if self._contact is not None else None

    @classmethod
    def uac(
        cls,
        invite: Request,
        response: Response,
        *,
        local_contact: NameAddr | None = None,
        new_branch: Callable[[], str] = default_branch,
    ) -> Dialog:
        """UAC dialog from the INVITE we sent and a 2xx or tagged 101-199 to it (§12.1.2)."""
        if not 101 <= response.status <= 299:
            raise DialogError("only 101-299 responses create dialogs")
        remote_tag = response.to.tag
        if remote_tag is None and response.status < 200:
            # A provisional response without To tag creates no early dialog (§12.1).
            raise DialogError("provisional response without To tag")
        local_tag = invite.from_.tag
        if not local_tag:
            raise DialogError("our INVITE has no From tag")
        return cls(
            call_id=invite.call_id,
            local_tag=local_tag,
            remote_tag=remote_tag or "",  # RFC 2543 UAS: a 2xx without tag, the tag is null
            local_uri=invite.from_,
            remote_uri=response.to,
            remote_target=_contact_uri(response),
            # Record-Route in reverse order; URIs kept with all their parameters (§12.1.2).
            route_set=tuple(reversed(response.record_route)),
            local_seq=invite.cseq.seq,
            remote_seq=None,
            secure=_is_secure(invite),
            local_via=_strip_branch(invite.top_via),
            local_contact=local_contact or _first(invite.contact),
            early=response.status < 200,
            invite_seq=invite.cseq.seq,
            new_branch=new_branch,
        )

    @classmethod
    def uas(
        cls,
        request: Request,
        response: Response,
        *,
        local_via: Via,
        initial_local_seq: int = 1,
        new_branch: Callable[[], str] = default_branch,
    ) -> Dialog:
        """UAS dialog when we send ``response`` (2xx or tagged 101-199) to ``request`` (§12.1.1).

        ``local_via`` is our sent-by for requests we will send in the dialog (BYE, re-INVITE).
        ``initial_local_seq`` is the CSeq our first request uses (§12.2.1.1: any value < 2**31).
        """
        if not 101 <= response.status <= 299:
            raise DialogError("only 101-299 responses create dialogs")
        local_tag = response.to.tag
        if not local_tag:
            raise DialogError("a dialog-creating response needs our To tag")
        if not 0 <= initial_local_seq - 1 < 2**31 - 1:
            raise DialogError("initial CSeq out of range")
        return cls(
            call_id=request.call_id,
            local_tag=local_tag,
            remote_tag=request.from_.tag or "",  # RFC 2543 UAC without From tag
            local_uri=response.to,
            remote_uri=request.from_,
            remote_target=_contact_uri(request),
            route_set=tuple(request.record_route),  # in order, as received (§12.1.1)
            local_seq=initial_local_seq - 1,  # "empty": the first request uses the initial value
            remote_seq=request.cseq.seq,
            secure=_is_secure(request),
            local_via=_strip_branch(local_via),
            local_contact=_first(response.contact),
            early=response.status < 200,
            new_branch=new_branch,
        )

    # ------------------------------------------------------------------------------------------
    # Messages received in the dialog

    def receive_request(self, request: Request) -> int | None:
        """Check and record an in-dialog request's CSeq (§12.2.2).

        Returns the status to reject it with (500 when out of order), or None when it may be
        processed. ACK and CANCEL reuse their INVITE's number and are not ordered requests.
        """
        if request.method in ("ACK", "CANCEL"):
            return None
        seq = request.cseq.seq
        if self.remote_seq is not None and seq < self.remote_seq:
            return 500
        self.remote_seq = seq
        return None

    def accept_target_refresh(self, request: Request) -> None:
        """We answered a target-refresh request (re-INVITE, UPDATE) with 2xx: adopt its Contact."""
        if request.method in TARGET_REFRESH and len(request.contact) == 1:
            self.remote_target = request.contact[0].uri

    def receive_response(self, response: Response) -> None:
        """Update state from a response to a request we sent in this dialog.

        A 2xx to our INVITE confirms an early dialog and recomputes the route set (§13.2.2.4); a 2xx
        to a target refresh, or any tagged response while early, replaces the remote target.
        """
        method = response.cseq.method
        if self.early and method == "INVITE" and 200 <= response.status <= 299:
            self.early = False
            self.route_set = tuple(reversed(response.record_route))
        refreshes = (200 <= response.status <= 299 and method in TARGET_REFRESH) or (
            self.early and 101 <= response.status <= 199
        )
        # A refresh with no or several Contacts keeps the old target: a response cannot be
        # rejected, and the target we have still works better than a guess.
        if refreshes and len(response.contact) == 1:
            self.remote_target = response.contact[0].uri

    # ------------------------------------------------------------------------------------------
    # Requests we send in the dialog

    def create_request(
        self,
        method: str,
        *,
        body: bytes = b"",
        content_type: str | None = None,
        headers: Iterable[tuple[str, str]] = (),
    ) -> Request:
        """An in-dialog request (§12.2.1.1): BYE, re-INVITE, INFO, UPDATE, ... or the ACK for a
        2xx to our last INVITE (which reuses that INVITE's CSeq number, §13.2.2.4)."""
        if method == "CANCEL":
            # CANCEL belongs to the INVITE's client transaction (§9.1), not to the dialog.
            raise DialogError("CANCEL is built from the INVITE, not the dialog")
        if method == "ACK":
            if self.invite_seq is None:
                raise DialogError("no INVITE sent in this dialog to acknowledge")
            seq = self.invite_seq
        else:
            if self.local_seq + 1 >= 2**31:
                raise DialogError("local CSeq exhausted")
            self.local_seq += 1
            seq = self.local_seq
            if method == "INVITE":
                self.invite_seq = seq
        uri, routes = self._request_uri_and_routes()
        branch = self.new_branch()
        if not branch.startswith(MAGIC_COOKIE) or len(branch) <= len(MAGIC_COOKIE):
            raise DialogError("branch generator must return a z9hG4bK branch")
        items = [("Via", f"{self._via};branch={branch}"), ("Max-Forwards", _MAX_FORWARDS)]
        keys = ["via", "max-forwards"]
        for route in routes:
            items.append(("Route", route))
            keys.append("route")
        items += [
            ("From", self._from),
            ("To", self._to),
            ("Call-ID", self.call_id),
            ("CSeq", f"{seq} {method}"),
        ]
        keys += ["from", "to", "call-id", "cseq"]
        if method in TARGET_REFRESH and self._contact is not None:
            items.append(("Contact", self._contact))
            keys.append("contact")
        hdrs = Headers._from_parsed(items, keys)
        for name, value in headers:
            hdrs.add(name, value)
        if content_type is not None:
            hdrs.set("Content-Type", content_type)
        return Request(method, uri, hdrs, body)

    def _request_uri_and_routes(self) -> tuple[Uri, list[str]]:
        """§12.2.1.1: loose routing keeps the remote target as Request-URI; a strict router first
        in the route set gets the Request-URI and the remote target goes last in Route."""
        if not self.route_set:
            return self.remote_target, []
        first = self.route_set[0].uri
        if isinstance(first, SipUri) and first.has_param("lr"):
            return self.remote_target, [str(r) for r in self.route_set]
        if isinstance(first, SipUri):
            # "removing any parameters that are not allowed in a Request-URI": URI headers.
            first = replace(first, headers=())
        routes = [str(r) for r in self.route_set[1:]]
        routes.append(f"<{self.remote_target}>")
        return first, routes


def _strip_branch(via: Via) -> Via:
    params = tuple(p for p in via.params if p[0].lower() not in ("branch", "received"))
    return Via(via.transport, via.host, via.port, params, via.protocol)


def _first(items: list[NameAddr]) -> NameAddr | None:
    return items[0] if items else None
