"""Cluster-wide channel counts in Redis (SPEC §7).

Layout: one sorted set per trunk, ``<prefix><trunk_id>``; each member is the call id holding one
of the trunk's channels, its score the lease's expiry in milliseconds of the Redis server's clock.
A member whose score is at or before the server's "now" is expired: it no longer holds a channel
and the next write to the set deletes it. Nodes refresh the leases of their live calls, so the
channels of a node that crashes (and never releases) free themselves within one lease.

Every "now" is ``redis.call('TIME')`` inside a Lua script, never a node's clock: nodes whose
clocks disagree by seconds would otherwise expire each other's leases early or keep them late.
Redis 7 replicates a script by its effects (the ZADDs with their computed scores), so replicas
agree with the primary whatever their own clocks say.

Each write also keeps the key's TTL at a few lease times (never shortening it), longer than any
live member's expiry: the set of a trunk that is deleted, and so never written again, vanishes
with its last lease. The scripts that take several keys (``refresh``, ``active_many``) need them
in one hash slot on Redis Cluster: give such a deployment a hash-tagged prefix
(``"sipedge:{channels}:"``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from redis.asyncio import Redis

__all__ = ["RedisChannels"]

# Key TTL in lease times: above 1 so that the key always outlives its members' leases.
KEY_TTL_LEASES = 3

# The server's "now" in milliseconds: a lease expiry (about 1.8e12) stays exact in a Lua number.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# Extends, never shortens: nodes configured with different leases must not cut each other's keys.
_KEEP_KEY = """
local function keep_key(key, ttl)
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIRE', key, ttl)
  end
end
"""

# KEYS[1] the trunk's set; ARGV: call id, limit, lease ms, key TTL ms. Returns 1 or 0.
_ACQUIRE = (
    _NOW
    + _KEEP_KEY
    + """
local key, call_id = KEYS[1], ARGV[1]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if not redis.call('ZSCORE', key, call_id)
    and redis.call('ZCARD', key) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', key, now + tonumber(ARGV[3]), call_id)
keep_key(key, tonumber(ARGV[4]))
return 1
"""
)

# KEYS: trunk sets; ARGV: lease ms, key TTL ms, then per key its number of call ids and the ids.
# Returns how many leases were extended.
_REFRESH = (
    _NOW
    + _KEEP_KEY
    + """
local expiry, ttl = now + tonumber(ARGV[1]), tonumber(ARGV[2])
local at, refreshed = 3, 0
for _, key in ipairs(KEYS) do
  local last = at + tonumber(ARGV[at])
  -- Expired members go first: a lease that ran out stays out, swept or not.
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local kept = 0
  for i = at + 1, last do
    if redis.call('ZSCORE', key, ARGV[i]) then
      redis.call('ZADD', key, 'XX', expiry, ARGV[i])
      kept = kept + 1
    end
  end
  if kept > 0 then
    keep_key(key, ttl)
  end
  refreshed = refreshed + kept
  at = last + 1
end
return refreshed
"""
)

# KEYS: trunk sets. Returns each set's count of unexpired members, in KEYS order; writes nothing.
_ACTIVE = (
    _NOW
    + """
local counts = {}
for i, key in ipairs(KEYS) do
  counts[i] = redis.call('ZCOUNT', key, string.format('(%.0f', now), '+inf')
end
return counts
"""
)


def _glob_escape(text: str) -> str:
    """``text`` matched literally in a SCAN pattern."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


class RedisChannels:
    """Channel leases of every node, in Redis; one round trip per method call.

    Errors are not caught: ``redis.exceptions.RedisError`` (connection, timeout, script errors)
    and ``OSError`` reach the caller, which decides what a call does while Redis is away (the
    runtime falls back to this node's own counts and counts the failure).
    """

    __slots__ = (
        "_acquire",
        "_active",
        "_client",
        "_key_ttl_ms",
        "_lease_ms",
        "_prefix",
        "_refresh",
    )

    def __init__(
        self,
        client: Redis,
        *,
        prefix: str = "sipedge:channels:",
        lease_seconds: float = 60.0,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, not {lease_seconds!r}")
        self._client = client
        self._prefix = prefix
        self._lease_ms = max(1, round(lease_seconds * 1000))
        self._key_ttl_ms = KEY_TTL_LEASES * self._lease_ms
        # Registering sends nothing; a call is one EVALSHA (plus a SCRIPT LOAD if Redis lost it).
        self._acquire = client.register_script(_ACQUIRE)
        self._refresh = client.register_script(_REFRESH)
        self._active = client.register_script(_ACTIVE)

    def key(self, trunk_id: str) -> str:
        """The Redis key of ``trunk_id``'s sorted set."""
        return self._prefix + trunk_id

    async def acquire(self, trunk_id: str, limit: int, call_id: str) -> bool:
        """Take one of ``trunk_id``'s channels for ``call_id`` unless ``limit`` are in use.

        Idempotent: a call id that already holds a lease on this trunk gets True and its lease
        extended, not a second channel.
        """
        taken = await self._acquire(
            keys=[self.key(trunk_id)],
            args=[call_id, limit, self._lease_ms, self._key_ttl_ms],
        )
        return bool(taken)

    async def release(self, trunk_id: str, call_id: str) -> None:
        """Free ``call_id``'s channel on ``trunk_id``; nothing happens when it holds none."""
        await self._client.zrem(self.key(trunk_id), call_id)

    async def refresh(self, held: Mapping[str, Collection[str]]) -> int:
        """Extend the leases this node holds (trunk id -> call ids) by one lease time.

        Only leases still in Redis are extended: one that expired (this node was cut off for
        longer than a lease) or was released is not taken again, since another node may have its
        channel by now. Returns how many leases were extended.
        """
        keys: list[str] = []
        args: list[str | int] = [self._lease_ms, self._key_ttl_ms]
        for trunk_id, call_ids in held.items():
            unique = list(dict.fromkeys(call_ids))  # a duplicate would count twice
            if unique:
                keys.append(self.key(trunk_id))
                args.append(len(unique))
                args.extend(unique)
        if not keys:
            return 0
        return int(await self._refresh(keys=keys, args=args))

    async def trunk_ids(self) -> list[str]:
        """The trunks that have a set (a lease in the last few lease times): for a process
        that holds no calls and no routing snapshot (the ``api`` role) to know what to count."""
        prefix = self._prefix
        found: list[str] = []
        async for key in self._client.scan_iter(match=_glob_escape(prefix) + "*", count=1000):
            name = key.decode() if isinstance(key, bytes) else str(key)
            found.append(name[len(prefix) :])
        return found

    async def active(self, trunk_id: str) -> int:
        """Channels in use on ``trunk_id`` across the cluster (unexpired leases)."""
        return (await self.active_many((trunk_id,)))[trunk_id]

    async def active_many(self, trunk_ids: Collection[str]) -> dict[str, int]:
        """``active`` of several trunks, read in one round trip."""
        unique = list(dict.fromkeys(trunk_ids))
        if not unique:
            return {}
        counts = await self._active(keys=[self.key(t) for t in unique])
        return {t: int(n) for t, n in zip(unique, counts, strict=True)}
