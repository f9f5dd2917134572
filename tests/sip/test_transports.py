"""UDP and TCP endpoints on loopback with ephemeral ports (no fixed ports: tests run in parallel).

No sleeps: every wait is for an event (a queue item, EOF), bounded by ``asyncio.wait_for``.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sipedge.metrics import LIMIT_CHILDREN
from sipedge.sip.errors import SipError, TransportError
from sipedge.sip.limits import Limits
from sipedge.sip.message import Headers, Message, Request, Response
from sipedge.sip.parser import parse_message
from sipedge.stack.loop import install_uvloop
from sipedge.stack.routing import response_destination, stamp_received
from sipedge.stack.transport_tcp import TcpConnection, TcpTransport
from sipedge.stack.transport_udp import UdpTransport

WAIT = 5.0


def _policies() -> list[Any]:
    policies: list[Any] = [pytest.param(asyncio.DefaultEventLoopPolicy(), id="asyncio")]
    try:
        import uvloop
    except ImportError:
        return policies
    return [*policies, pytest.param(uvloop.EventLoopPolicy(), id="uvloop")]


@pytest.fixture(params=_policies(), scope="module")
def event_loop_policy(request: pytest.FixtureRequest) -> Any:
    """Every transport test runs on the default loop and on uvloop (production's loop).

    pytest-asyncio 1.x deprecates overriding this fixture in favour of a conftest hook
    (``pytest_asyncio_loop_factories``); tests/sip has no conftest of ours to put it in yet.
    """
    return request.param


pytestmark = pytest.mark.filterwarnings(
    'ignore:Overriding the "event_loop_policy" fixture is deprecated'
)


Received = tuple[Message, tuple[str, int], str, Any]


def request(n: int = 1, transport: str = "UDP", body: bytes = b"", rport: bool = True) -> bytes:
    rp = ";rport" if rport else ""
    return (
        f"OPTIONS sip:svc@127.0.0.1 SIP/2.0\r\n"
        f"Via: SIP/2.0/{transport} client.invalid:5099;branch=z9hG4bK{n}{rp}\r\n"
        f"Max-Forwards: 70\r\nTo: <sip:svc@127.0.0.1>\r\nFrom: <sip:c@client.invalid>;tag={n}\r\n"
        f"Call-ID: call-{n}\r\nCSeq: {n} OPTIONS\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def ok_for(req: Request) -> Response:
    h = Headers()
    for via in req.headers.get_raw_all("Via"):
        h.add("Via", via)
    for name in ("From", "To", "Call-ID", "CSeq"):
        h.add(name, req.headers.get(name) or "")
    return Response(200, "OK", h)


class Sink:
    """Collects on_message calls into a queue."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Received] = asyncio.Queue()

    def __call__(self, msg: Message, source: tuple[str, int], transport: str, conn: Any) -> None:
        self.queue.put_nowait((msg, source, transport, conn))

    async def get(self) -> Received:
        return await asyncio.wait_for(self.queue.get(), WAIT)


def has_ipv6() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.fixture
async def udp_pair() -> AsyncIterator[tuple[UdpTransport, Sink, UdpTransport, Sink]]:
    sa, sb = Sink(), Sink()
    a = await UdpTransport.create("127.0.0.1", 0, sa)
    b = await UdpTransport.create("127.0.0.1", 0, sb, max_size=2000)
    yield a, sa, b, sb
    await a.close()
    await b.close()


# ----------------------------------------------------------------------------------------- UDP


async def test_udp_round_trip_with_rport(
    udp_pair: tuple[UdpTransport, Sink, UdpTransport, Sink],
) -> None:
    a, sa, b, sb = udp_pair
    a.send(request(1), b.local_address)
    msg, source, name, conn = await sb.get()
    assert isinstance(msg, Request) and name == "UDP" and conn is b
    assert source == a.local_address
    via = stamp_received(msg, source)
    assert via.received == "127.0.0.1" and via.rport == a.local_address[1]
    response = ok_for(msg)
    assert response_destination(response) == a.local_address  # received + rport, not sent-by
    b.send_response(response)
    reply, rsource, _, _ = await sa.get()
    assert isinstance(reply, Response) and reply.status == 200
    assert rsource == b.local_address and reply.call_id == "call-1"


async def test_udp_bad_request_answered_statelessly_garbage_dropped(
    udp_pair: tuple[UdpTransport, Sink, UdpTransport, Sink],
) -> None:
    a, sa, b, sb = udp_pair
    a.send(b"\x00garbage\xff", b.local_address)
    a.send(request(2).replace(b"CSeq: 2 OPTIONS", b"CSeq: 2 INVITE"), b.local_address)
    reply, _, _, _ = await sa.get()
    assert isinstance(reply, Response) and reply.status == 400
    assert reply.to.tag is not None and reply.call_id == "call-2"
    assert reply.headers.get("Warning") == '399 sipedge "CSeq method mismatch"'
    assert b.dropped == 1 and sb.queue.empty()


async def test_udp_bad_request_without_rport_goes_to_via_port(
    udp_pair: tuple[UdpTransport, Sink, UdpTransport, Sink],
) -> None:
    """RFC 3261 §18.2.2: no rport -> the sent-by port (here: a's port, written into the Via)."""
    a, sa, b, _ = udp_pair
    port = a.local_address[1]
    bad = request(3, rport=False).replace(b"client.invalid:5099", f"127.0.0.1:{port}".encode())
    a.send(
        bad.replace(b"Call-ID: call-3\r\n", b"Call-ID: call-3\r\nMax-Forwards: 1\r\n"),
        b.local_address,
    )
    reply, _, _, _ = await sa.get()
    assert isinstance(reply, Response) and reply.status == 400


async def test_udp_oversize_request_answered_513_and_counted(
    udp_pair: tuple[UdpTransport, Sink, UdpTransport, Sink],
) -> None:
    a, sa, b, sb = udp_pair
    hits = LIMIT_CHILDREN["message_size"]._value.get()
    a.send(request(4, body=b"x" * 3000), b.local_address)
    a.send(request(5), b.local_address)
    msg, _, _, _ = await sb.get()
    assert msg.call_id == "call-5"
    reply, _, _, _ = await sa.get()
    assert isinstance(reply, Response) and (reply.status, reply.call_id) == (513, "call-4")
    assert LIMIT_CHILDREN["message_size"]._value.get() == hits + 1


async def test_udp_oversize_response_dropped(
    udp_pair: tuple[UdpTransport, Sink, UdpTransport, Sink],
) -> None:
    a, sa, b, sb = udp_pair
    big = b"SIP/2.0 200 OK\r\n" + request(6, body=b"x" * 3000).split(b"\r\n", 1)[1]
    a.send(big, b.local_address)
    a.send(request(7), b.local_address)
    msg, _, _, _ = await sb.get()
    assert msg.call_id == "call-7" and b.dropped == 1 and sa.queue.empty()


async def test_udp_limit_breach_answered_with_the_rfc_status() -> None:
    sa, sb = Sink(), Sink()
    a = await UdpTransport.create("127.0.0.1", 0, sa)
    b = await UdpTransport.create("127.0.0.1", 0, sb, limits=Limits(max_body_bytes=100))
    try:
        hits = LIMIT_CHILDREN["body_size"]._value.get()
        a.send(request(8, body=b"x" * 200), b.local_address)
        reply, _, _, _ = await sa.get()
        assert isinstance(reply, Response) and reply.status == 413
        assert LIMIT_CHILDREN["body_size"]._value.get() == hits + 1 and sb.queue.empty()
    finally:
        await a.close()
        await b.close()


async def test_udp_on_error_callback_replaces_default() -> None:
    errors: asyncio.Queue[tuple[SipError, bytes]] = asyncio.Queue()
    b = await UdpTransport.create(
        "127.0.0.1", 0, Sink(), lambda e, d, s, t, c: errors.put_nowait((e, d))
    )
    a = await UdpTransport.create("127.0.0.1", 0, Sink())
    try:
        a.send(b"junk", b.local_address)
        err, raw = await asyncio.wait_for(errors.get(), WAIT)
        assert err.status is None and raw == b"junk"
    finally:
        await a.close()
        await b.close()


@pytest.mark.skipif(not has_ipv6(), reason="no IPv6 loopback")
async def test_udp_ipv6() -> None:
    sb = Sink()
    b = await UdpTransport.create("::1", 0, sb)
    a = await UdpTransport.create("::1", 0, Sink())
    try:
        assert b.local_address[0] == "::1"
        a.send(request(6), b.local_address)
        msg, source, _, _ = await sb.get()
        assert msg.call_id == "call-6" and source == a.local_address
    finally:
        await a.close()
        await b.close()


async def test_udp_send_after_close_raises() -> None:
    a = await UdpTransport.create("127.0.0.1", 0, Sink())
    await a.close()
    with pytest.raises(TransportError):
        a.send(b"x", ("127.0.0.1", 9))


async def test_bind_failure_is_transport_error() -> None:
    with pytest.raises(TransportError):
        await UdpTransport.create("192.0.2.1", 0, Sink())  # TEST-NET address: not ours


# ----------------------------------------------------------------------------------------- TCP


@pytest.fixture
async def tcp_server() -> AsyncIterator[tuple[TcpTransport, Sink]]:
    sink = Sink()
    server = await TcpTransport.create("127.0.0.1", 0, sink)
    yield server, sink
    await server.close()


async def test_tcp_coalesced_and_split_messages(tcp_server: tuple[TcpTransport, Sink]) -> None:
    server, sink = tcp_server
    _reader, writer = await asyncio.open_connection(*server.local_address)
    writer.write(request(1, "TCP", b"abc") + request(2, "TCP"))
    third = request(3, "TCP", b"body")
    for i in range(0, len(third), 17):
        writer.write(third[i : i + 17])
        await writer.drain()
    ids = [(await sink.get())[0].call_id for _ in range(3)]
    assert ids == ["call-1", "call-2", "call-3"]
    writer.close()
    await writer.wait_closed()


async def test_tcp_connection_reuse_both_directions(tcp_server: tuple[TcpTransport, Sink]) -> None:
    server, ssink = tcp_server
    csink = Sink()
    client = await TcpTransport.create("127.0.0.1", 0, csink)
    try:
        client.send(request(1, "TCP"), server.local_address)
        msg, source, name, conn = await ssink.get()
        assert isinstance(msg, Request) and name == "TCP" and isinstance(conn, TcpConnection)
        server.send_response(ok_for(msg), conn)  # on the connection the request came on
        reply, _, _, cconn = await csink.get()
        assert isinstance(reply, Response) and reply.status == 200
        client.send(request(2, "TCP"), server.local_address)  # reuses the outbound connection
        assert (await ssink.get())[3] is conn
        server.send(request(3, "TCP"), source)  # server -> client reuses the inbound one
        assert (await csink.get())[3] is cconn
        assert client.connections == 1 and server.connections == 1
    finally:
        await client.close()


async def test_tcp_response_after_connection_closed_uses_via(
    tcp_server: tuple[TcpTransport, Sink],
) -> None:
    """§18.2.2: if the request's connection is gone, open one to the Via's received/rport."""
    server, ssink = tcp_server
    csink = Sink()
    client = await TcpTransport.create("127.0.0.1", 0, csink)
    try:
        port = client.local_address[1]
        data = request(1, "TCP", rport=False).replace(
            b"client.invalid:5099", f"127.0.0.1:{port}".encode()
        )
        _reader, writer = await asyncio.open_connection(*server.local_address)
        writer.write(data)
        msg, _, _, conn = await ssink.get()
        writer.close()
        await writer.wait_closed()
        await asyncio.wait_for(conn.done, WAIT)
        assert isinstance(msg, Request)
        server.send_response(ok_for(msg), conn)
        reply, _, _, _ = await csink.get()
        assert isinstance(reply, Response) and reply.call_id == "call-1"
    finally:
        await client.close()


async def _expect_eof(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), WAIT)


async def test_tcp_per_peer_cap_closes_excess() -> None:
    server = await TcpTransport.create("127.0.0.1", 0, Sink(), max_per_peer=1)
    try:
        r1, w1 = await asyncio.open_connection(*server.local_address)
        w1.write(b"\r\n\r\n")  # ping: proves the first connection is live (pong comes back)
        assert await asyncio.wait_for(r1.readexactly(2), WAIT) == b"\r\n"
        r2, w2 = await asyncio.open_connection(*server.local_address)
        assert await _expect_eof(r2) == b""
        assert server.rejected == 1 and server.connections == 1
        assert LIMIT_CHILDREN["tcp_connections_per_peer"]._value.get() >= 1
        w1.close()
        w2.close()
    finally:
        await server.close()


async def test_tcp_global_cap_closes_excess() -> None:
    server = await TcpTransport.create("127.0.0.1", 0, Sink(), max_connections=1)
    try:
        r1, w1 = await asyncio.open_connection(*server.local_address)
        w1.write(b"\r\n\r\n")
        assert await asyncio.wait_for(r1.readexactly(2), WAIT) == b"\r\n"
        r2, w2 = await asyncio.open_connection(*server.local_address)
        assert await _expect_eof(r2) == b""
        assert server.rejected == 1
        assert LIMIT_CHILDREN["tcp_connections"]._value.get() >= 1
        w1.close()
        w2.close()
    finally:
        await server.close()


async def test_tcp_idle_timeout_closes() -> None:
    server = await TcpTransport.create("127.0.0.1", 0, Sink(), idle_timeout=0.05)
    try:
        reader, writer = await asyncio.open_connection(*server.local_address)
        assert await _expect_eof(reader) == b""
        writer.close()
        assert server.connections == 0
        assert LIMIT_CHILDREN["tcp_idle"]._value.get() >= 1
    finally:
        await server.close()


@pytest.mark.parametrize(
    "data",
    [
        request(1, "TCP").replace(b"Content-Length: 0\r\n", b""),  # unframeable
        b"SIP/2.0 200 OK\r\n" + request(1, "TCP", b"x" * 2000).split(b"\r\n", 1)[1],
    ],
    ids=["no-content-length", "oversize-response"],
)
async def test_tcp_unframeable_or_oversize_closes(data: bytes) -> None:
    sink = Sink()
    server = await TcpTransport.create("127.0.0.1", 0, sink, max_size=1024)
    try:
        reader, writer = await asyncio.open_connection(*server.local_address)
        writer.write(data)
        assert await _expect_eof(reader) == b""
        assert sink.queue.empty()
        writer.close()
    finally:
        await server.close()


async def test_tcp_oversize_request_answered_513_then_closed() -> None:
    sink = Sink()
    server = await TcpTransport.create("127.0.0.1", 0, sink, max_size=1024)
    try:
        hits = LIMIT_CHILDREN["message_size"]._value.get()
        reader, writer = await asyncio.open_connection(*server.local_address)
        writer.write(request(1, "TCP", b"x" * 2000))
        answer = parse_message(await _expect_eof(reader))
        assert isinstance(answer, Response) and answer.status == 513
        assert sink.queue.empty()
        assert LIMIT_CHILDREN["message_size"]._value.get() == hits + 1
        writer.close()
    finally:
        await server.close()


async def test_tcp_header_limit_answered_400_and_connection_kept() -> None:
    sink = Sink()
    server = await TcpTransport.create("127.0.0.1", 0, sink, limits=Limits(max_headers=16))
    try:
        hits = LIMIT_CHILDREN["header_count"]._value.get()
        reader, writer = await asyncio.open_connection(*server.local_address)
        many = request(2, "TCP").replace(b"Max-Forwards", b"X-A: 1\r\n" * 20 + b"Max-Forwards")
        writer.write(many + request(3, "TCP"))
        msg, _, _, _ = await sink.get()
        assert msg.call_id == "call-3"
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
        assert answer.startswith(b"SIP/2.0 400 ")
        assert LIMIT_CHILDREN["header_count"]._value.get() == hits + 1
        writer.close()
    finally:
        await server.close()


async def test_tcp_bad_request_answered_on_same_connection(
    tcp_server: tuple[TcpTransport, Sink],
) -> None:
    server, sink = tcp_server
    reader, writer = await asyncio.open_connection(*server.local_address)
    writer.write(request(1, "TCP").replace(b"SIP/2.0\r\n", b"SIP/3.0\r\n", 1))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
    reply = parse_message(head)
    assert isinstance(reply, Response) and reply.status == 505
    assert sink.queue.empty()
    writer.close()


async def test_tcp_close_closes_everything() -> None:
    server = await TcpTransport.create("127.0.0.1", 0, Sink())
    reader, writer = await asyncio.open_connection(*server.local_address)
    writer.write(b"\r\n\r\n")
    await asyncio.wait_for(reader.readexactly(2), WAIT)
    await server.close()
    assert await _expect_eof(reader) == b""
    assert server.connections == 0
    with pytest.raises(TransportError):
        server.send(b"x", ("127.0.0.1", 9))
    writer.close()


async def test_tcp_connect_failure_reported() -> None:
    failures: asyncio.Queue[tuple[tuple[str, int], TransportError]] = asyncio.Queue()
    with socket.socket() as s:  # a port nobody listens on: bind, then close
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()
    client = await TcpTransport.create(
        "127.0.0.1", 0, Sink(), on_connect_error=lambda d, e: failures.put_nowait((d, e))
    )
    try:
        client.send(request(1, "TCP"), dead)
        dest, err = await asyncio.wait_for(failures.get(), WAIT)
        assert dest == dead and isinstance(err, TransportError)
        assert client.connections == 0
    finally:
        await client.close()


@pytest.mark.skipif(not has_ipv6(), reason="no IPv6 loopback")
async def test_tcp_ipv6() -> None:
    sink = Sink()
    server = await TcpTransport.create("::1", 0, sink)
    client = await TcpTransport.create("::1", 0, Sink())
    try:
        client.send(request(7, "TCP"), server.local_address)
        msg, source, _, _ = await sink.get()
        assert msg.call_id == "call-7" and source[0] == "::1"
    finally:
        await client.close()
        await server.close()


def test_install_uvloop_is_safe() -> None:
    import asyncio as aio

    policy = aio.get_event_loop_policy()
    try:
        assert install_uvloop() in (True, False)
    finally:
        aio.set_event_loop_policy(policy)


async def test_udp_admit_hook_drops_before_parsing() -> None:
    sa, sb = Sink(), Sink()
    seen: list[str] = []

    def admit(ip: str) -> bool:
        seen.append(ip)
        return len(seen) != 1  # refuse the first datagram only

    a = await UdpTransport.create("127.0.0.1", 0, sa)
    b = await UdpTransport.create("127.0.0.1", 0, sb, admit=admit)
    try:
        a.send(b"garbage that would be answered if parsed", b.local_address)
        a.send(request(2), b.local_address)
        msg, _, _, _ = await sb.get()
        assert msg.call_id == "call-2" and seen == ["127.0.0.1", "127.0.0.1"]
        assert sa.queue.empty()
    finally:
        await a.close()
        await b.close()


async def test_tcp_admit_hook_drops_messages_and_keeps_the_connection() -> None:
    sink = Sink()
    verdicts = iter([False, True])
    server = await TcpTransport.create("127.0.0.1", 0, sink, admit=lambda ip: next(verdicts))
    try:
        _reader, writer = await asyncio.open_connection(*server.local_address)
        writer.write(request(1, "TCP") + request(2, "TCP"))
        msg, _, _, _ = await sink.get()
        assert msg.call_id == "call-2" and sink.queue.empty()
        writer.close()
    finally:
        await server.close()


async def test_udp_receive_buffer_is_set_on_the_socket() -> None:
    a = await UdpTransport.create("127.0.0.1", 0, Sink(), receive_buffer=1_048_576)
    try:
        sock = a._transport.get_extra_info("socket")  # type: ignore[union-attr]
        # Linux doubles the value for bookkeeping (socket(7)); the default is ~208 KiB.
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 1_048_576
    finally:
        await a.close()
