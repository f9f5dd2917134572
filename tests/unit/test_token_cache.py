"""The verified-token cache: TTL, bound, revocation (store.token_cache)."""

from __future__ import annotations

import pytest

from sipedge.store.ownership import Principal
from sipedge.store.token_cache import TokenCache, invalidate_everywhere

ALICE = Principal("alice")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_verified_token_is_trusted_for_ttl_seconds_only() -> None:
    clock = Clock()
    cache = TokenCache(2.0, clock=clock)
    cache.put("h1", ALICE, cache.generation)
    assert cache.get("h1") == ALICE
    clock.now += 1.9
    assert cache.get("h1") == ALICE
    clock.now += 0.1
    assert cache.get("h1") is None and len(cache) == 0


def test_ttl_zero_disables_the_cache() -> None:
    cache = TokenCache(0)
    cache.put("h1", ALICE, cache.generation)
    assert cache.get("h1") is None and len(cache) == 0


def test_the_cache_is_bounded() -> None:
    clock = Clock()
    cache = TokenCache(60.0, max_entries=3, clock=clock)
    for n in range(10):
        cache.put(f"h{n}", Principal(f"u{n}"), cache.generation)
        clock.now += 0.01
    assert len(cache) == 3
    assert [cache.get(f"h{n}") is not None for n in range(10)] == [False] * 7 + [True] * 3


def test_expired_entries_are_pruned_on_insert() -> None:
    clock = Clock()
    cache = TokenCache(1.0, clock=clock)
    for n in range(5):
        cache.put(f"h{n}", ALICE, cache.generation)
    clock.now += 5
    cache.put("fresh", ALICE, cache.generation)
    assert len(cache) == 1


def test_revocation_reaches_every_cache_of_the_process() -> None:
    first, second = TokenCache(60.0), TokenCache(60.0)
    for cache in (first, second):
        cache.put("h1", ALICE, cache.generation)
        cache.put("h2", ALICE, cache.generation)
    invalidate_everywhere("h1")
    assert first.get("h1") is None and second.get("h1") is None
    assert first.get("h2") == ALICE and second.get("h2") == ALICE


def test_a_lookup_that_started_before_a_revocation_is_not_cached() -> None:
    cache = TokenCache(60.0)
    generation = cache.generation  # the lookup starts, reads the token as live...
    invalidate_everywhere("h1")  # ...the token is revoked meanwhile...
    cache.put("h1", ALICE, generation)  # ...and the lookup's answer arrives
    assert cache.get("h1") is None


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        TokenCache(-1)
    with pytest.raises(ValueError):
        TokenCache(1, max_entries=0)
