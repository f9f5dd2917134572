"""The API's per-token sliding window, driven by a fake clock."""

from __future__ import annotations

import pytest

from sipedge.api.rate_limit import SlidingWindowLimiter, token_key


def test_allows_the_limit_then_refuses_with_retry_after() -> None:
    limiter = SlidingWindowLimiter(3, window=60.0)
    assert [limiter.hit("k", t) for t in (0.0, 10.0, 20.0)] == [None, None, None]
    assert limiter.hit("k", 30.0) == 30  # the hit at 0.0 leaves the window at 60.0
    assert limiter.hit("k", 59.5) == 1
    assert limiter.hit("k", 60.0) is None  # the first hit slid out
    assert limiter.hit("k", 60.5) == 10


def test_the_window_slides_rather_than_resets() -> None:
    limiter = SlidingWindowLimiter(2, window=60.0)
    assert limiter.hit("k", 59.0) is None
    assert limiter.hit("k", 59.9) is None
    assert limiter.hit("k", 61.0) is not None  # a fixed window would have reset at 60


def test_refused_requests_do_not_count() -> None:
    limiter = SlidingWindowLimiter(1, window=10.0)
    assert limiter.hit("k", 0.0) is None
    for t in range(1, 10):
        assert limiter.hit("k", float(t)) is not None
    assert limiter.hit("k", 10.0) is None


def test_keys_are_independent() -> None:
    limiter = SlidingWindowLimiter(1)
    assert limiter.hit("a", 0.0) is None
    assert limiter.hit("a", 0.0) is not None
    assert limiter.hit("b", 0.0) is None


def test_zero_means_no_limit() -> None:
    limiter = SlidingWindowLimiter(0)
    assert all(limiter.hit("k", 0.0) is None for _ in range(10_000))


def test_memory_is_bounded_under_random_tokens() -> None:
    limiter = SlidingWindowLimiter(5, window=60.0, max_keys=100)
    busy = token_key("busy")
    for i in range(10_000):
        limiter.hit(token_key(f"random-{i}"), i / 1000)
        assert limiter.keys <= 100
    limiter.hit(busy, 20.0)
    assert limiter.keys <= 100


def test_idle_keys_go_first() -> None:
    limiter = SlidingWindowLimiter(5, window=10.0, max_keys=3)
    limiter.hit("old", 0.0)
    limiter.hit("a", 15.0)
    limiter.hit("b", 15.0)
    limiter.hit("c", 16.0)  # full: "old" is idle and goes, a and b stay
    assert limiter.keys == 3
    assert limiter.hit("a", 16.0) is None and limiter._hits["a"] is not None
    assert "old" not in limiter._hits


def test_token_key_is_a_hash() -> None:
    key = token_key("sk_secret")
    assert "sk_secret" not in key and len(key) == 64


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        SlidingWindowLimiter(-1)
    with pytest.raises(ValueError):
        SlidingWindowLimiter(1, window=0)
