"""Finished transactions that only wait out their last timer, kept as plain records.

Once an RFC 3261/6026 transaction has sent everything it will ever send on its own, what is left
is a wait: Timer L or M (the INVITE's Accepted state), J (a non-INVITE server's Completed state),
K, I or D — up to 64*T1, 32 s. In that wait it only absorbs retransmissions, answers them with
bytes it already sent (a non-INVITE final response, the ACK of a non-2xx) or passes an ACK or a
2xx retransmission to the TU. At hundreds of calls a second tens of thousands of transactions
wait at once; as objects (the FSM, its handle, its key, a request skeleton, a heap entry) they
cost memory and, worse, every one is scanned by the cyclic garbage collector, whose pauses then
grow to tens of milliseconds. A record here is a tuple of atomic values (which the collector
untracks) in a dict, expired by one loop handle.

A record: ``(expires_at, passes_up, resend, dest, transport name)``.
"""

from __future__ import annotations

import asyncio
import heapq
from typing import NamedTuple

from sipedge.sip.transaction import Address

__all__ = ["WaitRecord", "WaitRecords"]

# Records are swept in batches at most this often: every record has its own expiry, and a wake-up
# per record (thousands a second at load) cost more than the records themselves. A record may so
# outlive its timer by up to this much, which only lengthens the absorbing of retransmissions.
_GRANULE = 0.5


class WaitRecord(NamedTuple):
    expires_at: float
    passes_up: bool  # an ACK (INVITE server, Accepted) or a 2xx (INVITE client, Accepted) goes up
    resend: bytes | None  # sent again for every retransmission that matches; None: absorb
    dest: Address
    transport: str  # the transport's name (the layer resolves it)


class WaitRecords:
    """Server and client records by transaction key, and their expiry."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # Keys are stored as plain tuples: the collector untracks a tuple of strings, not a
        # NamedTuple; lookups with the NamedTuple keys still match (same hash, equal).
        self.server: dict[tuple[object, ...], tuple[float, bool, bytes | None, Address, str]] = {}
        self.client: dict[tuple[object, ...], tuple[float, bool, bytes | None, Address, str]] = {}
        self._heap: list[tuple[float, bool, tuple[object, ...]]] = []
        self._handle: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self.server) + len(self.client)

    def add(self, server: bool, key: tuple[object, ...], record: WaitRecord) -> None:
        plain = tuple(key)
        (self.server if server else self.client)[plain] = tuple(record)  # type: ignore[assignment]
        at = record.expires_at
        heapq.heappush(self._heap, (at, server, plain))
        if self._handle is None:
            self._schedule(at)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._heap.clear()
        self.server.clear()
        self.client.clear()

    def _schedule(self, at: float) -> None:
        self._handle = self._loop.call_at(max(at, self._loop.time() + _GRANULE), self._sweep)

    def _sweep(self) -> None:
        self._handle = None
        heap = self._heap
        now = self._loop.time()
        while heap and heap[0][0] <= now:
            at, server, key = heapq.heappop(heap)
            table = self.server if server else self.client
            found = table.get(key)
            if found is not None and found[0] == at:
                del table[key]
        if heap:
            self._schedule(heap[0][0])
