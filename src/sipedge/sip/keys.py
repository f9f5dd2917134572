"""Transaction matching keys, RFC 3261 §17.1.3 (client) and §17.2.3 (server).

Keys are small NamedTuples: hashable, cheap to build, readable in a debugger. The stack keeps one
dict per side keyed by them.

Server side (§17.2.3):
- RFC 3261 branch (``z9hG4bK`` cookie): top-Via branch + sent-by + method, where an ACK maps to the
  INVITE it acknowledges. CANCEL has a key of its own (it is its own transaction);
  ``cancel_target_key`` finds the INVITE it cancels (same branch and sent-by, method INVITE, §9.2).
- RFC 2543 fallback (no cookie): Request-URI, From tag, Call-ID, CSeq number, top Via and method.
  The To tag is part of the key for non-INVITE methods only: for INVITE and its ACK the ACK carries
  the To tag of *our* response while the INVITE had none, so it cannot be in the key. Two INVITEs
  equal in every other field would need the same CSeq number in one call — a retransmission.

Client side (§17.1.3): the top-Via branch of the response + the CSeq method (so the response to a
CANCEL, which shares the INVITE's branch, finds the CANCEL transaction).
"""

from __future__ import annotations

from typing import NamedTuple, TypeAlias

from sipedge.sip.message import Message, Request

__all__ = [
    "MAGIC_COOKIE",
    "ClientKey",
    "LegacyServerKey",
    "ServerKey",
    "TransactionKey",
    "cancel_target_key",
    "client_key",
    "server_key",
]

MAGIC_COOKIE = "z9hG4bK"  # RFC 3261 §8.1.1.7: a branch starting with it is globally unique


class ServerKey(NamedTuple):
    branch: str
    host: str  # sent-by host, lower-cased (host names are case-insensitive)
    port: int | None
    method: str


class LegacyServerKey(NamedTuple):
    request_uri: str
    from_tag: str | None
    to_tag: str | None  # None for INVITE/ACK, see the module docstring
    call_id: str
    cseq: int
    via: tuple[str, str, int | None, str | None]  # transport, host, port, branch of the top Via
    method: str


class ClientKey(NamedTuple):
    branch: str
    method: str


TransactionKey: TypeAlias = ServerKey | LegacyServerKey | ClientKey


def server_key(request: Request) -> ServerKey | LegacyServerKey | None:
    """The key of the server transaction ``request`` belongs to; None if it has no top Via."""
    return _server_key(request, "INVITE" if request.method == "ACK" else request.method)


def cancel_target_key(cancel: Request) -> ServerKey | LegacyServerKey | None:
    """The key of the INVITE server transaction a CANCEL cancels (RFC 3261 §9.2)."""
    return _server_key(cancel, "INVITE")


def _server_key(request: Request, method: str) -> ServerKey | LegacyServerKey | None:
    if "Via" not in request.headers:
        return None
    via = request.top_via  # only the top one: parsing every Via would be wasted work
    branch = via.branch
    host = via.host.lower()
    if branch is not None and branch.startswith(MAGIC_COOKIE):
        # §17.2.3: branch + sent-by + method.
        return ServerKey(branch, host, via.port, method)
    # §17.2.3, RFC 2543 compatibility.
    to_tag = None if method == "INVITE" else request.to.tag
    return LegacyServerKey(
        request_uri=str(request.uri),
        from_tag=request.from_.tag,
        to_tag=to_tag,
        call_id=request.call_id,
        cseq=request.cseq.seq,
        via=(via.transport.upper(), host, via.port, branch),
        method=method,
    )


def client_key(msg: Message) -> ClientKey | None:
    """§17.1.3: top-Via branch + CSeq method. For a request the CSeq method is its own method,
    so the key computed when sending equals the key of its responses. None without a branch."""
    if "Via" not in msg.headers:
        return None
    branch = msg.top_via.branch
    if branch is None:
        return None
    return ClientKey(branch, msg.cseq.method)
