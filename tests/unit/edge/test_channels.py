"""Channel accounting (SPEC §5 Inbound step 7, shared with outbound)."""

from __future__ import annotations

from sipedge.edge.channels import ChannelLimiter, channels_reject
from sipedge.edge.decisions import MetricReason, warning_header


def test_acquire_up_to_the_limit_then_refuse() -> None:
    limiter = ChannelLimiter()
    assert limiter.try_acquire("t1", 2, "c1")
    assert limiter.try_acquire("t1", 2, "c2")
    assert not limiter.try_acquire("t1", 2, "c3")
    assert limiter.active("t1") == 2
    assert limiter.try_acquire("t2", 1, "c3")  # another trunk has its own count
    assert limiter.active("t2") == 1


def test_acquire_is_idempotent_per_call() -> None:
    limiter = ChannelLimiter()
    assert limiter.try_acquire("t1", 1, "c1")
    assert limiter.try_acquire("t1", 1, "c1")  # the same call again: no second channel
    assert limiter.active("t1") == 1
    assert not limiter.try_acquire("t2", 5, "c1")  # a call id holds one trunk's channel only
    assert limiter.holder("c1") == "t1"


def test_release_is_idempotent() -> None:
    limiter = ChannelLimiter()
    limiter.try_acquire("t1", 2, "c1")
    limiter.try_acquire("t1", 2, "c2")
    assert limiter.release("c1") is True
    assert limiter.release("c1") is False  # twice: never frees c2's channel
    assert limiter.release("never-held") is False
    assert limiter.active("t1") == 1
    assert limiter.holder("c2") == "t1"
    assert limiter.release("c2") is True
    assert limiter.active("t1") == 0
    assert limiter.holder("c2") is None


def test_channel_free_again_after_release() -> None:
    limiter = ChannelLimiter()
    assert limiter.try_acquire("t1", 1, "c1")
    assert not limiter.try_acquire("t1", 1, "c2")
    limiter.release("c1")
    assert limiter.try_acquire("t1", 1, "c2")


def test_inbound_and_outbound_share_the_count() -> None:
    limiter = ChannelLimiter()
    assert limiter.try_acquire("t1", 1, "inbound-call")
    assert not limiter.try_acquire("t1", 1, "outbound-run")


def test_calls_on_lists_a_trunks_leases() -> None:
    limiter = ChannelLimiter()
    for call, trunk_id in (("a", "t1"), ("b", "t2"), ("c", "t1")):
        limiter.try_acquire(trunk_id, 5, call)
    assert sorted(limiter.calls_on("t1")) == ["a", "c"]
    assert limiter.calls_on("t3") == ()


def test_channels_reject_is_486_with_the_rule() -> None:
    reject = channels_reject("t1", number_id="n1", agent_id="a1")
    assert (reject.status, reject.metric_reason) == (486, MetricReason.CHANNELS)
    assert warning_header(reject) == '399 sipedge "channel limit reached"'
    assert (reject.trunk_id, reject.number_id, reject.agent_id) == ("t1", "n1", "a1")
