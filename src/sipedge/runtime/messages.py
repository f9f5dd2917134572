"""Building the agent leg's requests (pure: values in, ``Request`` out).

The agent INVITE is a new dialog (SPEC §5 step 9): its own Call-ID, tags and CSeq; From/To carry
the caller's and the dialled numbers; the ``X-Sipedge-*`` headers name the call's run, agent,
trunk and number; the body is the offer filtered to the trunk's codecs. Nothing of the carrier's
request is copied verbatim except what is parsed and normalised here.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from sipedge.edge.inbound import InboundRoute
from sipedge.edge.numbers import dialled_digits
from sipedge.sip.dialog import default_branch
from sipedge.sip.headers import NameAddr
from sipedge.sip.message import Headers, Request
from sipedge.sip.uri import SipUri, TelUri

__all__ = [
    "ANONYMOUS",
    "RUN_ID_HEADER",
    "build_agent_invite",
    "build_cancel",
    "caller_number",
    "via_value",
]

ANONYMOUS = "anonymous"
RUN_ID_HEADER = "X-Sipedge-Run-Id"
AGENT_ID_HEADER = "X-Sipedge-Agent-Id"
TRUNK_ID_HEADER = "X-Sipedge-Trunk-Id"
NUMBER_ID_HEADER = "X-Sipedge-Number-Id"
MAX_FORWARDS = 70


def caller_number(from_: NameAddr) -> str:
    """The caller's number from the carrier's From: ``+<digits>``, else "anonymous"."""
    uri = from_.uri
    if isinstance(uri, TelUri):
        digits = dialled_digits(uri.number, "tel")
    elif isinstance(uri, SipUri):
        digits = dialled_digits(uri.user, uri.scheme)
    else:
        digits = None
    return f"+{digits}" if digits else ANONYMOUS


def via_value(transport: str, host: str, port: int, branch: str | None = None) -> str:
    """Our Via (advertised address, RFC 3581 ``rport``)."""
    shown = f"[{host}]" if ":" in host else host
    return f"SIP/2.0/{transport} {shown}:{port};branch={branch or default_branch()};rport"


@functools.lru_cache(maxsize=1024)
def _with_user(target: SipUri, number: str) -> SipUri:
    # One URI per dialled number (the agent target is fixed): not a dataclasses.replace per call.
    return replace(target, user=number)


def build_agent_invite(
    *,
    route: InboundRoute,
    run_id: str,
    target: SipUri,
    via: str,
    contact: str,
    call_id: str,
    from_tag: str,
    caller: str,
    local_host: str,
    max_forwards: int,
) -> Request:
    """The INVITE towards ``agents.endpoint`` for an accepted inbound call."""
    number = route.number.e164 if route.number.e164.startswith("+") else f"+{route.number.e164}"
    request_uri = target if target.user is not None else _with_user(target, number)
    headers = Headers()
    headers.add("Via", via)
    headers.add("Max-Forwards", str(max(0, min(MAX_FORWARDS, max_forwards))))
    headers.add("From", f"<sip:{caller}@{local_host}>;tag={from_tag}")
    headers.add("To", f"<sip:{number}@{target.hostport}>")
    headers.add("Call-ID", call_id)
    headers.add("CSeq", "1 INVITE")
    headers.add("Contact", contact)
    headers.add("Allow", "INVITE, ACK, BYE, CANCEL, OPTIONS, INFO")
    headers.add(RUN_ID_HEADER, run_id)
    headers.add(AGENT_ID_HEADER, route.agent.id)
    headers.add(TRUNK_ID_HEADER, route.trunk.id)
    headers.add(NUMBER_ID_HEADER, route.number.id)
    body = route.sdp or b""
    if body:
        headers.add("Content-Type", "application/sdp")
    return Request("INVITE", request_uri, headers, body)


def build_cancel(invite: Request) -> Request:
    """The CANCEL for ``invite`` (RFC 3261 §9.1): same Request-URI, Call-ID, From, To, CSeq
    number and top Via (so it matches the INVITE's server transaction), Route copied."""
    headers = Headers()
    headers.add("Via", invite.headers.get_all("Via")[0])
    for route in invite.headers.get_all("Route"):
        headers.add("Route", route)
    headers.add("Max-Forwards", str(MAX_FORWARDS))
    for name in ("From", "To", "Call-ID"):
        value = invite.headers.get(name)
        if value is not None:
            headers.add(name, value)
    headers.add("CSeq", f"{invite.cseq.seq} CANCEL")
    return Request("CANCEL", invite.uri, headers)
