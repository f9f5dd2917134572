"""A bounded, short-lived in-memory cache of verified bearer tokens: token hash -> principal.

Why: every API request authenticates, and the token lookup was one SQL statement (about a fifth
of a `GET /call/{run_id}`'s CPU on SQLite, where each statement is several hops to aiosqlite's
thread). Only *verified* tokens are cached (an unknown token always costs the lookup, so random
tokens cannot fill the cache, and a new token works at once). Keys are SHA-256 hashes, never the
token itself.

Revocation: `tokens.revoke_token` invalidates the hash in every cache of its process before it
returns, so a token revoked in-process fails on its very next request. A revocation made by
another process (`sipedge token revoke` against the same database) is seen when the entry
expires: at most `ttl` seconds later (`http.token_cache_seconds`, 0 disables the cache).
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Callable

from sipedge.store.ownership import Principal

__all__ = ["TokenCache", "invalidate_everywhere"]

# Every live cache of the process, so a revocation reaches them all without a registry to wire.
_CACHES: weakref.WeakSet[TokenCache] = weakref.WeakSet()


class TokenCache:
    """At most `max_entries` verified tokens, each trusted for `ttl` seconds after its lookup.

    `clock` is monotonic seconds (tests inject one). `ttl` 0 = disabled (`get` always misses).
    """

    def __init__(
        self,
        ttl: float,
        *,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl < 0 or max_entries < 1:
            raise ValueError("ttl must be >= 0 and max_entries >= 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        # hash -> (principal, expiry); insertion order = expiry order (all share one ttl)
        self._entries: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        # Bumped by every invalidation: a lookup that started before a revocation must not put
        # its (then stale) answer into the cache after it (see `generation` / `put`).
        self._generation = 0
        _CACHES.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, token_hash: str) -> Principal | None:
        entry = self._entries.get(token_hash)
        if entry is None:
            return None
        principal, expiry = entry
        if self._clock() >= expiry:
            del self._entries[token_hash]
            return None
        return principal

    @property
    def generation(self) -> int:
        """Read before the database lookup, handed back to `put`."""
        return self._generation

    def put(self, token_hash: str, principal: Principal, generation: int) -> None:
        """Cache a token verified by a lookup that started at `generation` (ignored when a
        revocation happened since)."""
        if not self.ttl or generation != self._generation:
            return
        now = self._clock()
        self._entries.pop(token_hash, None)
        self._entries[token_hash] = (principal, now + self.ttl)
        self._prune(now)

    def invalidate(self, token_hash: str) -> None:
        self._generation += 1
        self._entries.pop(token_hash, None)

    def clear(self) -> None:
        self._generation += 1
        self._entries.clear()

    def _prune(self, now: float) -> None:
        """Drop expired entries from the old end, then the oldest beyond the bound (O(1) amortised:
        each entry is dropped once)."""
        entries = self._entries
        while entries:
            oldest = next(iter(entries))
            if entries[oldest][1] > now and len(entries) <= self.max_entries:
                return
            del entries[oldest]


def invalidate_everywhere(token_hash: str) -> None:
    """Forget `token_hash` in every cache of this process (called on revocation)."""
    for cache in list(_CACHES):
        cache.invalidate(token_hash)
