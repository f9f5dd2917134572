"""Rendering decisions as carrier-facing responses, and the topology-hiding filter.

Pure functions (no sockets, no clock): tests call them with parsed messages. Everything the
carrier sees is built here from *its own* request (Via/From/To/Call-ID/CSeq copied per RFC 3261
§8.2.6) plus, from the agent leg, only what the spec lets through: the status, a sanitised reason
phrase, the SDP body (already filtered to the trunk's codecs) and a short allow-list of body
headers. The agent's Via, Contact, Record-Route, Server/User-Agent, ``X-Sipedge-*`` headers and
addresses never cross.
"""

from __future__ import annotations

from collections.abc import Iterable

from sipedge.edge.decisions import Reject, warning_header
from sipedge.sip.message import Message, Request, Response, canonical_name
from sipedge.sip.transaction import build_response

__all__ = [
    "ALLOW",
    "RELAYABLE_HEADERS",
    "RELAYED_AGENT_FAILURES",
    "agent_failure_answer",
    "contact_value",
    "edge_warning",
    "reason_phrase",
    "relay_response",
    "relayable_headers",
    "render_reject",
    "respond",
    "safe_reason",
]

ALLOW = "INVITE, ACK, BYE, CANCEL, OPTIONS, INFO"

# Body-describing headers that may cross between the legs (INFO/DTMF packages, SDP type).
RELAYABLE_HEADERS = frozenset({"content-type", "content-disposition", "info-package"})

# Agent answers that are the callee's own word and reach the carrier unchanged; every other agent
# failure (and silence) is the edge's problem: 503 "agent unavailable".
RELAYED_AGENT_FAILURES = frozenset({486, 600, 603})

AGENT_UNAVAILABLE = "agent unavailable"
_AGENT_FAILURE_RULES = {486: "agent busy", 600: "agent busy", 603: "agent declined"}

_PHRASES = {
    100: "Trying",
    180: "Ringing",
    181: "Call Is Being Forwarded",
    182: "Queued",
    183: "Session Progress",
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    480: "Temporarily Unavailable",
    481: "Call/Transaction Does Not Exist",
    482: "Loop Detected",
    483: "Too Many Hops",
    486: "Busy Here",
    487: "Request Terminated",
    488: "Not Acceptable Here",
    491: "Request Pending",
    500: "Server Internal Error",
    503: "Service Unavailable",
    600: "Busy Everywhere",
    603: "Decline",
}
_MAX_REASON = 64


def reason_phrase(status: int) -> str:
    """The RFC 3261 §21 phrase for ``status`` (a class default for codes not listed)."""
    phrase = _PHRASES.get(status)
    if phrase is not None:
        return phrase
    return {1: "Progress", 2: "OK", 3: "Redirect", 4: "Client Error", 5: "Server Error"}.get(
        status // 100, "Global Failure"
    )


def safe_reason(text: str, status: int) -> str:
    """A peer's reason phrase made safe to repeat: printable ASCII, bounded, never empty."""
    cleaned = "".join(ch for ch in text if " " <= ch <= "~").strip()[:_MAX_REASON].strip()
    return cleaned or reason_phrase(status)


def edge_warning(rule: str) -> str:
    """``399 sipedge "<rule>"`` for a rule phrase chosen by the edge (same form as
    ``edge.decisions.warning_header``)."""
    safe = "".join(ch for ch in rule if " " <= ch <= "~" and ch not in '"\\')
    return f'399 sipedge "{safe}"'


def respond(
    request: Request,
    status: int,
    *,
    to_tag: str | None = None,
    warning: str | None = None,
    reason: str | None = None,
) -> Response:
    """A response to ``request`` (RFC 3261 §8.2.6) with an optional ``Warning`` value."""
    response = build_response(request, status, reason or reason_phrase(status), to_tag=to_tag)
    if warning is not None:
        response.headers.add("Warning", warning)
    if status == 405:
        response.headers.add("Allow", ALLOW)
    return response


def render_reject(request: Request, reject: Reject, *, to_tag: str | None) -> Response:
    """The response for a pipeline ``Reject``: its status and ``Warning: 399 sipedge "<rule>"``."""
    return respond(request, reject.status, to_tag=to_tag, warning=warning_header(reject))


def agent_failure_answer(agent_status: int | None) -> tuple[int, str]:
    """What the carrier gets when the agent leg fails: ``(status, warning rule)``.

    486/600/603 are the callee's answer and are relayed as-is; any other error response, a
    timeout (``None``) or a transport error becomes 503 "agent unavailable".
    """
    if agent_status in RELAYED_AGENT_FAILURES:
        return agent_status, _AGENT_FAILURE_RULES[agent_status]
    return 503, AGENT_UNAVAILABLE


def relayable_headers(msg: Message) -> list[tuple[str, str]]:
    """The headers of ``msg`` allowed onto the other leg (topology hiding: an allow-list, so a
    header we do not know about never crosses)."""
    return [
        (name, value) for name, value in msg.headers if canonical_name(name) in RELAYABLE_HEADERS
    ]


def relay_response(
    request: Request,
    peer_response: Response,
    *,
    to_tag: str | None,
    contact: str | None,
    body: bytes | None,
    extra: Iterable[tuple[str, str]] = (),
) -> Response:
    """The response to ``request`` (ours to answer) mirroring ``peer_response`` from the other
    leg: status, sanitised reason, ``body`` (the caller passes the filtered SDP, or None) and
    nothing else of the peer's message."""
    status = peer_response.status
    response = build_response(
        request, status, safe_reason(peer_response.reason, status), to_tag=to_tag
    )
    if contact is not None:
        response.headers.add("Contact", contact)
    for name, value in extra:
        response.headers.add(name, value)
    if body:
        content_type = peer_response.headers.get("Content-Type") or "application/sdp"
        response.headers.set("Content-Type", content_type)
        response.body = body
    return response


def contact_value(host: str, port: int, transport: str, user: str = "sipedge") -> str:
    """Our Contact: ``<sip:sipedge@host:port;transport=tcp>`` (no parameter for UDP)."""
    shown = f"[{host}]" if ":" in host else host
    suffix = ";transport=tcp" if transport.upper() == "TCP" else ""
    return f"<sip:{user}@{shown}:{port}{suffix}>"
