"""Asyncio drivers of the SIP core: transports (UDP, TCP), transactions, loop selection."""

from sipedge.stack.loop import install_uvloop
from sipedge.stack.transport_tcp import TcpConnection, TcpTransport
from sipedge.stack.transport_udp import UdpTransport

__all__ = ["TcpConnection", "TcpTransport", "UdpTransport", "install_uvloop"]
