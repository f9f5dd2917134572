"""Transport-level SIP rules shared by the UDP and TCP endpoints (RFC 3261 §18, RFC 3581).

Pure functions over messages plus the OSError translation used by every socket call in stack/.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sipedge.sip.errors import SipError, TransportError
from sipedge.sip.headers import Via, split_comma
from sipedge.sip.message import Request, Response
from sipedge.sip.parser import error_response
from sipedge.sip.randomness import token_hex

__all__ = [
    "Address",
    "map_os_errors",
    "reply_destination",
    "response_destination",
    "stamp_received",
    "stateless_error_bytes",
]

Address = tuple[str, int]
DEFAULT_PORT = 5060


@contextlib.contextmanager
def map_os_errors(what: str) -> Iterator[None]:
    """Translate ``OSError`` from socket calls into ``TransportError`` (STYLE.md habit 7)."""
    try:
        yield
    except OSError as exc:
        raise TransportError(f"{what}: {exc.strerror or type(exc).__name__}") from exc


def stamp_received(request: Request, source: Address) -> Via:
    """RFC 3261 §18.2.1 + RFC 3581 §4: record where a request really came from in its top Via.

    ``received`` is added when the sent-by host differs from the source IP, and always when the
    client asked for ``rport`` (then ``rport`` gets the source port). Returns the new top Via.
    """
    via = request.top_via
    host, port = source
    if via.has_rport:
        stamped = via.with_received(host, port)
    elif via.host != host:
        stamped = via.with_received(host)
    else:
        return via
    # The first Via line may hold several via-parms; only its first one is replaced.
    others = split_comma(request.headers.get("Via") or "")[1:]
    request.replace_top_via(", ".join([str(stamped), *others]), stamped)
    return stamped


def response_destination(response: Response, default_port: int = DEFAULT_PORT) -> Address:
    """RFC 3261 §18.2.2 (unreliable/no-connection case) with RFC 3581 §4 rport.

    maddr wins, then ``received`` (with ``rport`` when present), then the sent-by host and port.
    """
    via = response.top_via
    maddr = via.param("maddr")
    port = via.port or default_port
    if maddr:
        return maddr, port
    if via.received:
        return via.received, via.rport or port
    return via.host, via.rport or port


def reply_destination(via: Via, source: Address) -> Address:
    """Where to send a response to a request that came from ``source`` (not yet stamped):
    the source IP (what ``received`` would say), the source port if rport was asked for."""
    return source[0], source[1] if via.has_rport else (via.port or DEFAULT_PORT)


def stateless_error_bytes(data: bytes, error: SipError) -> tuple[bytes, Response] | None:
    """The wire form of the stateless error answer to ``data`` (None when nothing is to be sent)."""
    response = error_response(data, error, to_tag=token_hex(5))
    if response is None:
        return None
    return bytes(response), response
