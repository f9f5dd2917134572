"""The inbound pipeline (SPEC §5 Inbound steps 3-8), scenario by scenario."""

from __future__ import annotations

from typing import Any

import pytest
from edge_factories import (
    UK_NUMBER,
    US_NUMBER,
    agent,
    audio_formats,
    invite,
    number,
    offer,
    snap,
    trunk,
)

from sipedge.edge import inbound
from sipedge.edge.channels import ChannelLimiter
from sipedge.edge.decisions import Accept, Drop, MetricReason, Reject, warning_header
from sipedge.edge.inbound import (
    STEPS,
    InboundRoute,
    crossed_trunks,
    evaluate_invite,
    evaluate_options,
)
from sipedge.edge.snapshot import RoutingSnapshot

SHARED = "203.0.113.0/24"


def world(**t1_fields: Any) -> RoutingSnapshot:
    t1_fields.setdefault("default_inbound_agent_id", "a-default")
    t1_fields.setdefault("channels", 2)
    return snap(
        [
            trunk("t1", cidrs=(SHARED,), **t1_fields),
            trunk("t2", organization_id="org-2", cidrs=("198.51.100.0/24",), transport="tcp"),
            trunk("t3", cidrs=(SHARED,), is_active=False),
            trunk("t4", organization_id="org-3", cidrs=("192.0.2.0/24",), inbound_enabled=False),
            trunk("t5", organization_id="org-3", cidrs=("192.0.2.0/24",)),
            trunk("t6", cidrs=("2001:db8:1::/48",), codecs=("PCMA",)),
            trunk("t7", cidrs=(SHARED,), transport="tcp"),
            trunk("t8", organization_id="org-4", cidrs=("100.64.0.0/16",)),
        ],
        [
            number("n1", "t1", US_NUMBER, agent_id="a1"),
            number("n1b", "t1", "14155550124", agent_id=None),
            number("n2", "t2", "14155550200", agent_id="a2"),
            number("n3", "t3", "14155550300"),
            number("n4", "t4", "14155550400", agent_id="a3"),
            number("n5", "t5", "14155550500", agent_id="a3"),
            number("n6", "t6", UK_NUMBER),
            number("n7", "t7", "14155550700"),
            number("n8", "t1", "14155550800", agent_id="a-deleted"),
            number("n9", "t1", "14155550900", agent_id="a2"),
            number("n10", "t8", "14155551000", agent_id=None),
        ],
        [
            agent("a1"),
            agent("a-default"),
            agent("a2", organization_id="org-2"),
            agent("a3", organization_id="org-3"),
            agent("a-deleted", is_deleted=True),
        ],
    )


ACCEPTS = [
    ("e164", {}, ("t1", "n1", "a1")),
    ("national significant number", {"request_uri_user": "4155550123"}, ("t1", "n1", "a1")),
    ("00 prefix", {"request_uri_user": "0014155550123"}, ("t1", "n1", "a1")),
    ("visual separators", {"request_uri_user": "+1 (415) 555-0123"}, ("t1", "n1", "a1")),
    (
        "tel uri",
        {"request_uri_user": "+1-415-555-0123;phone-context=x", "request_uri_scheme": "tel"},
        ("t1", "n1", "a1"),
    ),
    ("To fallback", {"request_uri_user": None, "to_user": "+14155550123"}, ("t1", "n1", "a1")),
    ("trunk default agent", {"request_uri_user": "14155550124"}, ("t1", "n1b", "a-default")),
    (
        "inbound-disabled trunk's range still admitted by the other trunk",
        {"source_ip": "192.0.2.9", "request_uri_user": "14155550500"},
        ("t5", "n5", "a3"),
    ),
    (
        "tcp trunk over tcp",
        {"source_ip": "198.51.100.4", "transport": "tcp", "request_uri_user": "14155550200"},
        ("t2", "n2", "a2"),
    ),
    (
        "IPv6 carrier, national UK number with trunk prefix",
        {"source_ip": "2001:db8:1::5", "request_uri_user": "02079460958"},
        ("t6", "n6", "a1"),
    ),
    ("IPv4-mapped source", {"source_ip": "::ffff:203.0.113.7"}, ("t1", "n1", "a1")),
]


@pytest.mark.parametrize(("name", "fields", "expected"), ACCEPTS, ids=[a[0] for a in ACCEPTS])
def test_accepts(name: str, fields: dict[str, Any], expected: tuple[str, str, str]) -> None:
    limiter = ChannelLimiter()
    decision = evaluate_invite(invite(**fields), world(), limiter)
    assert isinstance(decision, Accept), decision
    route = decision.route
    assert (route.trunk.id, route.number.id, route.agent.id) == expected
    assert route.lease.trunk_id == expected[0] and limiter.active(expected[0]) == 1
    assert route.snapshot_version == 1


REJECTS = [
    ("unknown source, reject mode", {"source_ip": "8.8.8.8"}, "reject", 403, "unknown source", MetricReason.UNKNOWN_SOURCE),
    ("unparseable source", {"source_ip": "nonsense"}, "reject", 403, "unknown source", MetricReason.UNKNOWN_SOURCE),
    ("inactive trunk's number", {"request_uri_user": "14155550300"}, "drop", 404, "number not found", MetricReason.NO_NUMBER),
    ("inbound-disabled trunk's number", {"source_ip": "192.0.2.9", "request_uri_user": "14155550400"}, "drop", 404, "number not found", MetricReason.NO_NUMBER),
    ("wrong transport", {"source_ip": "198.51.100.4", "request_uri_user": "14155550200"}, "drop", 403, "transport tcp required", MetricReason.TRANSPORT),
    ("wrong transport, other candidate fits", {"request_uri_user": "14155550700"}, "drop", 403, "transport tcp required", MetricReason.TRANSPORT),
    ("udp trunk over tcp", {"source_ip": "100.64.1.1", "transport": "tcp"}, "drop", 403, "transport udp required", MetricReason.TRANSPORT),
    ("unknown number", {"request_uri_user": "14155559999"}, "drop", 404, "number not found", MetricReason.NO_NUMBER),
    ("no number at all", {"request_uri_user": "alice", "to_user": "bob"}, "drop", 404, "number not found", MetricReason.NO_NUMBER),
    ("number of a trunk not admitting the source", {"source_ip": "198.51.100.4", "transport": "tcp"}, "drop", 404, "number not found", MetricReason.NO_NUMBER),
    ("deleted agent", {"request_uri_user": "14155550800"}, "drop", 480, "no agent for number", MetricReason.NO_AGENT),
    ("another account's agent", {"request_uri_user": "14155550900"}, "drop", 480, "no agent for number", MetricReason.NO_AGENT),
    ("no agent, no trunk default", {"source_ip": "100.64.1.1", "request_uri_user": "14155551000"}, "drop", 480, "no agent for number", MetricReason.NO_AGENT),
    ("G729-only offer", {"sdp": offer("18", "101")}, "drop", 488, "no common codec", MetricReason.CODECS),
    ("malformed SDP", {"sdp": b"garbage"}, "drop", 488, "malformed sdp", MetricReason.MALFORMED_SDP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "fields", "policy", "status", "reason", "metric"), REJECTS, ids=[r[0] for r in REJECTS]
)
def test_rejects(
    name: str, fields: dict[str, Any], policy: Any, status: int, reason: str, metric: MetricReason
) -> None:
    limiter = ChannelLimiter()
    decision = evaluate_invite(invite(**fields), world(), limiter, unknown_source=policy)
    assert isinstance(decision, Reject), decision
    assert (decision.status, decision.reason, decision.metric_reason) == (status, reason, metric)
    header = warning_header(decision)
    assert header == f'399 sipedge "{reason}"'
    for secret in ("203.0.113", "198.51.100", "2001:db8", "org-", "t1", "n1", "a1", "a2"):
        assert secret not in header
    assert limiter.active("t1") == 0 and limiter.holder("call-1") is None  # no channel leaked


def test_unknown_source_is_dropped_by_default() -> None:
    decision = evaluate_invite(invite(source_ip="8.8.8.8"), world(), ChannelLimiter())
    assert decision == Drop(MetricReason.UNKNOWN_SOURCE)
    assert crossed_trunks(decision) == ()


def test_rejections_after_step_3_name_the_trunks_for_the_call_record() -> None:
    s = world()
    wrong = evaluate_invite(invite(request_uri_user="14155550700"), s, ChannelLimiter())
    assert isinstance(wrong, Reject) and wrong.trunk_id == "t7" and wrong.number_id == "n7"
    missing = evaluate_invite(invite(request_uri_user="14155559999"), s, ChannelLimiter())
    assert isinstance(missing, Reject)
    assert missing.trunk_ids == ("t1", "t7") and missing.trunk_id is None
    assert crossed_trunks(missing) == ("t1", "t7")
    no_agent = evaluate_invite(invite(request_uri_user="14155550800"), s, ChannelLimiter())
    assert isinstance(no_agent, Reject)
    assert (no_agent.trunk_id, no_agent.number_id, no_agent.agent_id) == ("t1", "n8", None)
    assert crossed_trunks(no_agent) == ("t1",)


def test_sdp_is_filtered_to_the_trunk_codecs_in_trunk_order() -> None:
    s = world(codecs=("PCMA", "PCMU"))
    decision = evaluate_invite(invite(sdp=offer("9", "0", "8", "101")), s, ChannelLimiter())
    assert isinstance(decision, Accept) and decision.route.sdp is not None
    assert audio_formats(decision.route.sdp) == ["8", "0", "101"]
    assert decision.route.late_offer is False


def test_late_offer_accepted_and_flagged() -> None:
    decision = evaluate_invite(invite(sdp=None), world(), ChannelLimiter())
    assert isinstance(decision, Accept)
    assert decision.route.sdp is None and decision.route.late_offer is True


def test_channel_limit_gives_486_and_frees_after_release() -> None:
    s, limiter = world(channels=1), ChannelLimiter()
    first = evaluate_invite(invite(call_id="c1"), s, limiter)
    assert isinstance(first, Accept)
    busy = evaluate_invite(invite(call_id="c2"), s, limiter)
    assert isinstance(busy, Reject) and busy.status == 486
    assert warning_header(busy) == '399 sipedge "channel limit reached"'
    assert limiter.active("t1") == 1
    limiter.release(first.route.lease.call_id)
    assert isinstance(evaluate_invite(invite(call_id="c2"), s, limiter), Accept)


def test_codec_rejection_after_the_channel_was_taken_releases_it() -> None:
    s, limiter = world(channels=1), ChannelLimiter()
    for attempt in range(3):  # would exhaust channels=1 if a single lease leaked
        decision = evaluate_invite(invite(call_id=f"c{attempt}", sdp=offer("18")), s, limiter)
        assert isinstance(decision, Reject) and decision.status == 488
        assert limiter.active("t1") == 0
    assert isinstance(evaluate_invite(invite(call_id="ok"), s, limiter), Accept)


def test_a_failing_step_releases_the_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(call: Any) -> None:
        raise RuntimeError("bug in a step")

    monkeypatch.setattr(inbound, "STEPS", (*STEPS[:5], ("codecs", boom)))
    limiter = ChannelLimiter()
    with pytest.raises(RuntimeError):
        evaluate_invite(invite(), world(), limiter)
    assert limiter.active("t1") == 0


def test_re_evaluating_a_live_call_never_frees_its_channel() -> None:
    s, limiter = world(), ChannelLimiter()
    assert isinstance(evaluate_invite(invite(call_id="c1"), s, limiter), Accept)
    again = evaluate_invite(invite(call_id="c1", sdp=offer("18")), s, limiter)
    assert isinstance(again, Reject)
    assert limiter.holder("c1") == "t1" and limiter.active("t1") == 1


def test_steps_follow_spec_order() -> None:
    names = [name for name, _ in STEPS]
    assert names == ["carrier_acl", "transport", "number", "agent", "channels", "codecs"]


def test_a_new_snapshot_disabling_the_trunk_refuses_the_next_call() -> None:
    limiter = ChannelLimiter()
    assert isinstance(evaluate_invite(invite(call_id="c1"), world(), limiter), Accept)
    after_patch = world(is_active=False)
    decision = evaluate_invite(invite(call_id="c2"), after_patch, limiter)
    # Only t7 (tcp) still admits the address: every trunk there wants tcp.
    assert isinstance(decision, Reject) and decision.reason == "transport tcp required"
    assert decision.trunk_ids == ("t7",)
    alone = snap([trunk("t1", is_active=False)], [number()], [agent()])
    assert evaluate_invite(invite(call_id="c3"), alone, limiter) == Drop(
        MetricReason.UNKNOWN_SOURCE
    )


@pytest.mark.parametrize(
    ("source_ip", "policy", "expected"),
    [
        ("203.0.113.7", "drop", Accept(("t1", "t7"))),
        ("2001:db8:1::9", "reject", Accept(("t6",))),
        ("192.0.2.1", "drop", Accept(("t5",))),
        ("8.8.8.8", "drop", Drop(MetricReason.UNKNOWN_SOURCE)),
        ("8.8.8.8", "reject", Reject(403, "unknown source", MetricReason.UNKNOWN_SOURCE)),
    ],
)
def test_options(source_ip: str, policy: Any, expected: object) -> None:
    assert evaluate_options(source_ip, world(), unknown_source=policy) == expected


def test_route_is_frozen() -> None:
    decision = evaluate_invite(invite(), world(), ChannelLimiter())
    assert isinstance(decision, Accept) and isinstance(decision.route, InboundRoute)
    with pytest.raises(AttributeError):
        decision.route.sdp = b""  # type: ignore[misc]
