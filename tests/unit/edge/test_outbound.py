"""Outbound dial plan (SPEC §5 Outbound): trunk choice, number format, failover."""

from __future__ import annotations

from typing import Any

import pytest
from edge_factories import US_NUMBER, agent, gateway, number, snap, trunk

from sipedge.edge.outbound import (
    AnswerChallenge,
    DialAttempt,
    DialOutcome,
    FinalClass,
    Finish,
    OutboundPlan,
    OutboundRefusal,
    Refused,
    Response,
    SendInvite,
    Timeout,
    TransportFailure,
    Wait,
    choose_trunk,
    classify_final,
    format_dialled,
)

GW = (gateway("g-backup", 1), gateway("g-main", 0))


def outbound_world(**trunk_fields: Any):  # type: ignore[no-untyped-def]
    trunk_fields.setdefault("gateways", GW)
    return snap(
        [trunk("t1", **trunk_fields), trunk("t2", organization_id="org-2", gateways=GW)],
        [number("n1", "t1", US_NUMBER, agent_id="a1"), number("n2", "t2", "14155550200")],
        [
            agent("a1"),
            agent("a-web", telephony_provider="web"),
            agent("a-other", organization_id="org-2"),
            agent("a-nonum"),
        ],
    )


@pytest.mark.parametrize(
    ("trunk_fields", "from_key", "agent_id", "expected"),
    [
        ({}, US_NUMBER, None, "n1"),
        ({}, "+1 (415) 555-0123", "a1", "n1"),
        ({}, None, "a1", "n1"),  # the agent's own number
        ({}, "14155550999", "a1", OutboundRefusal.NUMBER_NOT_FOUND),
        ({}, "not a number", None, OutboundRefusal.NUMBER_NOT_FOUND),
        ({}, None, "a-nonum", OutboundRefusal.NUMBER_NOT_FOUND),
        ({}, None, None, OutboundRefusal.NUMBER_NOT_FOUND),
        ({}, "14155550200", "a1", OutboundRefusal.NUMBER_NOT_FOUND),  # another account's number
        ({}, US_NUMBER, "a-other", OutboundRefusal.NUMBER_NOT_FOUND),
        ({}, US_NUMBER, "missing", OutboundRefusal.AGENT_NOT_FOUND),
        ({}, US_NUMBER, "a-web", OutboundRefusal.AGENT_NOT_SIP_TRUNK),
        ({"is_active": False}, US_NUMBER, "a1", OutboundRefusal.TRUNK_INACTIVE),
        ({"outbound_enabled": False}, US_NUMBER, "a1", OutboundRefusal.OUTBOUND_DISABLED),
        ({"inbound_enabled": False}, US_NUMBER, "a1", "n1"),
        ({"gateways": ()}, US_NUMBER, "a1", OutboundRefusal.NO_GATEWAY),
        ({"is_deleted": True}, US_NUMBER, "a1", OutboundRefusal.NUMBER_NOT_FOUND),
    ],
)
def test_choose_trunk(
    trunk_fields: dict[str, Any], from_key: str | None, agent_id: str | None, expected: object
) -> None:
    plan = choose_trunk(outbound_world(**trunk_fields), from_key, agent_id=agent_id)
    if isinstance(expected, OutboundRefusal):
        assert plan == Refused(expected)
        assert plan.message and "t1" not in plan.message
    else:
        assert isinstance(plan, OutboundPlan)
        assert (plan.trunk.id, plan.number.id) == ("t1", expected)
        assert [g.id for g in plan.gateways] == ["g-main", "g-backup"]


@pytest.mark.parametrize(
    ("digits", "plus", "expected"),
    [
        ("14155550123", True, "+14155550123"),
        ("14155550123", False, "14155550123"),
        ("+14155550123", False, "14155550123"),
        ("+14155550123", True, "+14155550123"),
    ],
)
def test_format_dialled(digits: str, plus: bool, expected: str) -> None:
    assert format_dialled(digits, plus) == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, FinalClass.ANSWERED),
        (202, FinalClass.ANSWERED),
        (401, FinalClass.CARRIER_FAILURE),
        (403, FinalClass.CARRIER_FAILURE),
        (407, FinalClass.CARRIER_FAILURE),
        (408, FinalClass.CARRIER_FAILURE),
        (500, FinalClass.CARRIER_FAILURE),
        (503, FinalClass.CARRIER_FAILURE),
        (599, FinalClass.CARRIER_FAILURE),
        (486, FinalClass.BUSY),
        (600, FinalClass.BUSY),
        (480, FinalClass.NO_ANSWER),
        (487, FinalClass.NO_ANSWER),
        (603, FinalClass.DECLINED),
        (404, FinalClass.FAILED),
        (484, FinalClass.FAILED),
        (488, FinalClass.FAILED),
        (604, FinalClass.FAILED),
    ],
)
def test_classify_final(status: int, expected: FinalClass) -> None:
    assert classify_final(status) is expected


@pytest.mark.parametrize("status", [100, 180, 199, 700, 0])
def test_classify_final_refuses_non_final(status: int) -> None:
    with pytest.raises(ValueError):
        classify_final(status)


G0, G1, G2 = gateway("g0", 0), gateway("g1", 1), gateway("g2", 2)
DONE_FAIL = Finish(FinalClass.CARRIER_FAILURE, None, None)

DIALS: list[tuple[str, bool, list[DialOutcome], list[object]]] = [
    ("answered at once", True, [Response(100), Response(180), Response(200)],
     [Wait(), Wait(), Finish(FinalClass.ANSWERED, 200, G0)]),
    ("503 then answered on the next gateway", False, [Response(503), Response(200)],
     [SendInvite(G1, 1), Finish(FinalClass.ANSWERED, 200, G1)]),
    ("timeout, transport error, 408", False, [Timeout(), TransportFailure(), Response(408)],
     [SendInvite(G1, 1), SendInvite(G2, 2), Finish(FinalClass.CARRIER_FAILURE, 408, None)]),
    ("403 moves on", False, [Response(403), Response(486)],
     [SendInvite(G1, 1), Finish(FinalClass.BUSY, 486, G1)]),
    ("busy is final, not a carrier failure", False, [Response(486)],
     [Finish(FinalClass.BUSY, 486, G0)]),
    ("404 is the callee's answer", False, [Response(404)], [Finish(FinalClass.FAILED, 404, G0)]),
    ("603 declined", False, [Response(603)], [Finish(FinalClass.DECLINED, 603, G0)]),
    ("401 answered once", True, [Response(401), Response(200)],
     [AnswerChallenge(G0, 401), Finish(FinalClass.ANSWERED, 200, G0)]),
    ("407 answered once", True, [Response(407), Response(180), Response(200)],
     [AnswerChallenge(G0, 407), Wait(), Finish(FinalClass.ANSWERED, 200, G0)]),
    ("second challenge is a carrier failure", True,
     [Response(401), Response(401), Response(407), Response(407), Response(401), Response(401)],
     [AnswerChallenge(G0, 401), SendInvite(G1, 1), AnswerChallenge(G1, 407), SendInvite(G2, 2),
      AnswerChallenge(G2, 401), Finish(FinalClass.CARRIER_FAILURE, 401, None)]),
    ("no credentials: challenge is a carrier failure", False,
     [Response(401), Response(407), Response(401)],
     [SendInvite(G1, 1), SendInvite(G2, 2), Finish(FinalClass.CARRIER_FAILURE, 401, None)]),
    ("inputs after the end are ignored", False, [Response(200), Response(200), Timeout()],
     [Finish(FinalClass.ANSWERED, 200, G0), Wait(), Wait()]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "creds", "outcomes", "actions"), DIALS, ids=[d[0] for d in DIALS])
def test_dial_attempt(
    name: str, creds: bool, outcomes: list[DialOutcome], actions: list[object]
) -> None:
    dial = DialAttempt((G0, G1, G2), has_credentials=creds)
    assert dial.start() == SendInvite(G0, 0)
    assert [dial.handle(o) for o in outcomes] == actions
    assert dial.done


def test_dial_attempt_tracks_whether_the_carrier_answered_at_all() -> None:
    silent = DialAttempt((G0,), has_credentials=False)
    silent.start()
    assert silent.handle(Timeout()) == DONE_FAIL
    assert silent.crossed is False
    heard = DialAttempt((G0,), has_credentials=False)
    heard.start()
    heard.handle(Response(503))
    assert heard.crossed is True


def test_dial_attempt_without_gateways_fails_at_start() -> None:
    dial = DialAttempt((), has_credentials=True)
    assert dial.start() == DONE_FAIL
    assert dial.start() == Wait()


def test_handle_before_start_is_ignored() -> None:
    dial = DialAttempt((G0,), has_credentials=False)
    assert dial.handle(Response(200)) == Wait()
    assert not dial.done
