"""Per-token request rate limit of the admin API: an in-memory sliding window, per process.

Pure: ``now`` is an argument (the caller passes ``time.monotonic()``). Keys are SHA-256 hashes of
the presented bearer token, so no token is kept in memory in clear. Each key holds the times of
its requests in the last ``window`` seconds (at most ``limit`` of them); the number of keys is
capped, the idle ones going first, so random tokens cannot grow memory without bound.
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from itertools import islice

__all__ = ["SlidingWindowLimiter", "token_key"]


def token_key(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


class SlidingWindowLimiter:
    """At most ``limit`` requests per key in any ``window`` seconds; ``limit`` 0 = no limit."""

    def __init__(self, limit: int, window: float = 60.0, max_keys: int = 10_000) -> None:
        if limit < 0 or window <= 0 or max_keys < 1:
            raise ValueError("limit must be >= 0, window > 0 and max_keys >= 1")
        self.limit = limit
        self.window = window
        self.max_keys = max_keys
        self._hits: dict[str, deque[float]] = {}

    @property
    def keys(self) -> int:
        return len(self._hits)

    def hit(self, key: str, now: float) -> int | None:
        """Count one request; None if allowed, else the whole seconds to wait (Retry-After)."""
        if not self.limit:
            return None
        hits = self._hits.get(key)
        if hits is None:
            if len(self._hits) >= self.max_keys:
                self._evict(now)
            hits = self._hits[key] = deque()
        horizon = now - self.window
        while hits and hits[0] <= horizon:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(1, math.ceil(hits[0] - horizon))
        hits.append(now)
        return None

    def _evict(self, now: float) -> None:
        """Forget idle keys; if that frees too little, the oldest-created down to 90 %.

        One pass per eviction, and each frees at least a tenth of the table, so a stream of new
        keys costs amortised O(1) per request.
        """
        horizon = now - self.window
        idle = [k for k, hits in self._hits.items() if not hits or hits[-1] <= horizon]
        for k in idle:
            del self._hits[k]
        excess = len(self._hits) - (self.max_keys * 9) // 10
        if excess > 0:
            for k in list(islice(self._hits, excess)):
                del self._hits[k]
