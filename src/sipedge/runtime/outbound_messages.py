"""Building the carrier leg of an outbound call (pure: values in, ``Request`` out).

The INVITE to a gateway (SPEC §5 Outbound): Request-URI and To user are the recipient's digits
with or without the leading ``+`` (``edge.outbound.format_dialled``), From user the calling number
by the same rule; the body is an offer with the trunk's codecs in order plus telephone-event.
The offer's media address is ours with a placeholder port: no media is anchored yet, so once the
agent answers, a re-INVITE gives the carrier the agent's media (``agent_sdp_for_carrier``).
"""

from __future__ import annotations

import re

from sipedge.edge.outbound import format_dialled
from sipedge.runtime.messages import MAX_FORWARDS
from sipedge.sip.message import Headers, Request
from sipedge.sip.sdp import build_offer
from sipedge.sip.uri import SipUri, parse_uri

__all__ = [
    "DIRECTION_HEADER",
    "PLACEHOLDER_MEDIA_PORT",
    "build_carrier_invite",
    "carrier_offer",
    "carrier_request_uri",
    "rewrite_origin",
]

DIRECTION_HEADER = "X-Sipedge-Direction"
PLACEHOLDER_MEDIA_PORT = 9  # RFC 3264 offers need a port; the agent's arrives by re-INVITE
_ORIGIN = re.compile(rb"^o=[^\r\n]*", re.MULTILINE)


def carrier_request_uri(recipient: str, host: str, port: int, transport: str, plus: bool) -> SipUri:
    """``sip:<+digits|digits>@host:port[;transport=tcp]``."""
    user = format_dialled(recipient, plus)
    shown = f"[{host}]" if ":" in host else host
    suffix = ";transport=tcp" if transport == "tcp" else ""
    uri = parse_uri(f"sip:{user}@{shown}:{port}{suffix}")
    assert isinstance(uri, SipUri)
    return uri


def carrier_offer(local_host: str, codecs: tuple[str, ...], session_id: int) -> bytes:
    return bytes(build_offer(local_host, local_host, PLACEHOLDER_MEDIA_PORT, codecs, session_id, 1))


def build_carrier_invite(
    *,
    request_uri: SipUri,
    from_number: str,
    plus: bool,
    local_host: str,
    via: str,
    contact: str,
    call_id: str,
    from_tag: str,
    cseq: int,
    body: bytes,
    authorization: tuple[str, str] | None = None,
) -> Request:
    """The INVITE to a gateway; ``authorization`` is (header name, value) answering a challenge."""
    headers = Headers()
    headers.add("Via", via)
    headers.add("Max-Forwards", str(MAX_FORWARDS))
    caller = format_dialled(from_number, plus)
    headers.add("From", f"<sip:{caller}@{local_host}>;tag={from_tag}")
    to = SipUri(scheme=request_uri.scheme, user=request_uri.user, host=request_uri.host)
    headers.add("To", f"<{to}>")
    headers.add("Call-ID", call_id)
    headers.add("CSeq", f"{cseq} INVITE")
    headers.add("Contact", contact)
    headers.add("Allow", "INVITE, ACK, BYE, CANCEL, OPTIONS, INFO")
    if authorization is not None:
        headers.add(*authorization)
    headers.add("Content-Type", "application/sdp")
    return Request("INVITE", request_uri, headers, body)


def rewrite_origin(sdp: bytes, local_host: str, session_id: int, version: int) -> bytes:
    """``sdp`` (the agent's answer) as our next offer in the carrier's session: RFC 3264 §8 keeps
    the ``o=`` username and session id of the session and bumps its version."""
    kind = "IP6" if ":" in local_host else "IP4"
    origin = f"o=sipedge {session_id} {version} IN {kind} {local_host}".encode("ascii")
    return _ORIGIN.sub(origin, sdp, count=1)
