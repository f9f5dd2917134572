"""Call status webhooks, the pure parts: payload shape, signature scheme, backoff, statuses."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from sipedge.runtime.call_status import InboundStatus, final_status, status_of_record
from sipedge.runtime.ports import CallRecordEvent, CallStatusEvent
from sipedge.runtime.webhook_payload import (
    backoff_delay,
    encode_body,
    payload_of,
    sign,
    signed_headers,
)

T0 = datetime(2026, 11, 22, 2, 0, 0, tzinfo=UTC)


def _event(**changes: object) -> CallStatusEvent:
    base = CallStatusEvent(
        run_id="run-1",
        status="completed",
        direction="inbound",
        created_at=T0,
        updated_at=T0 + timedelta(seconds=42, microseconds=500_000),
        agent_id="agent-1",
        trunk_id="trunk-1",
        number_id="number-1",
        from_number="+14155550999",
        to_number="+14155550100",
        sip_call_id="abc@carrier",
        hangup_by="carrier",
        hangup_reason="answered",
        sip_status=200,
        duration_s=40.12345,
        user_data={"crm_id": 7},
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_payload_has_exactly_the_issue_shape() -> None:
    assert payload_of(_event()) == {
        "id": "run-1",
        "agent_id": "agent-1",
        "status": "completed",
        "created_at": "2026-11-22T02:00:00Z",
        "updated_at": "2026-11-22T02:00:42.500000Z",
        "telephony_data": {
            "direction": "inbound",
            "from_number": "+14155550999",
            "to_number": "+14155550100",
            "trunk_id": "trunk-1",
            "number_id": "number-1",
            "provider": "sip-trunk",
            "sip_call_id": "abc@carrier",
            "hangup_by": "carrier",
            "hangup_reason": "answered",
            "sip_status": 200,
            "duration_s": 40.123,
        },
        "user_data": {"crm_id": 7},
    }


def test_intermediate_status_has_nulls_not_missing_keys() -> None:
    body = encode_body(
        payload_of(_event(status="ringing", hangup_by=None, hangup_reason=None, duration_s=None))
    )
    data = json.loads(body)
    assert data["telephony_data"]["hangup_by"] is None
    assert data["telephony_data"]["duration_s"] is None
    assert " " not in body.replace("+14155550", "")  # compact separators


def test_signature_matches_a_vector_computed_outside_python() -> None:
    # printf '%s' '1700000000.{"id":"run-1","status":"ringing"}' | openssl dgst -sha256 -hmac k3y
    body = b'{"id":"run-1","status":"ringing"}'
    expected = "sha256=613f47e2d9d6880e1d7608ca7091b633fbaa77c28cae533d7dd63be0eeeae3b4"
    assert sign("k3y", 1700000000, body) == expected
    headers = signed_headers(secret="k3y", timestamp=1700000000, body=body, event_id="ev-1")
    assert headers == {
        "Content-Type": "application/json",
        "X-Sipedge-Event-Id": "ev-1",
        "X-Sipedge-Timestamp": "1700000000",
        "X-Sipedge-Signature": expected,
    }


def test_signature_covers_timestamp_and_body() -> None:
    body = b'{"id":"run-1"}'
    assert sign("k", 1, body) != sign("k", 2, body)
    assert sign("k", 1, body) != sign("k", 1, body + b" ")
    assert sign("k", 1, body) != sign("k2", 1, body)


def test_backoff_doubles_up_to_the_cap_with_jitter_between_half_and_all() -> None:
    full = [backoff_delay(n, base=2.0, cap=60.0, jitter=1.0) for n in range(1, 8)]
    assert full == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    half = [backoff_delay(n, base=2.0, cap=60.0, jitter=0.0) for n in range(1, 4)]
    assert half == [1.0, 2.0, 4.0]
    assert backoff_delay(3, base=2.0, cap=60.0, jitter=0.5) == 6.0
    assert backoff_delay(10_000, base=2.0, cap=60.0, jitter=1.0) == 60.0  # no overflow
    with pytest.raises(ValueError):
        backoff_delay(0, base=1.0, cap=1.0, jitter=0.0)


@pytest.mark.parametrize(
    ("decided_by", "answered", "rang", "code", "status"),
    [
        ("answered", True, True, 200, "completed"),
        ("max_duration", True, False, 200, "completed"),
        ("canceled", False, True, 487, "canceled"),
        ("agent_declined", False, True, 486, "busy"),
        ("agent_declined", False, False, 603, "busy"),
        ("channels", False, False, 486, "busy"),  # refused: channel limit
        ("agent_timeout", False, True, 503, "no-answer"),
        ("agent_timeout", False, False, 503, "failed"),  # never rang: the agent is down
        ("agent_failure", False, True, 503, "failed"),
        ("codecs", False, False, 488, "failed"),
        ("agent_unreachable", False, False, 503, "failed"),
    ],
)
def test_final_status(decided_by: str, answered: bool, rang: bool, code: int, status: str) -> None:
    assert (
        final_status(decided_by=decided_by, answered=answered, rang=rang, sip_code=code) == status
    )


def _record(**changes: object) -> CallRecordEvent:
    fields: dict[str, object] = {
        "run_id": "run-1",
        "trunk_id": "trunk-1",
        "direction": "inbound",
        "started_at": T0,
        "ended_at": T0 + timedelta(seconds=30),
        "final_sip_code": 200,
        "decided_by": "answered",
        "agent_id": "agent-1",
        "carrier_call_id": "abc@carrier",
        "answered_at": T0 + timedelta(seconds=10),
        "hangup_side": "agent",
    }
    return CallRecordEvent(**{**fields, **changes})  # type: ignore[arg-type]


def test_final_event_from_a_record() -> None:
    event = status_of_record(_record())
    assert (event.status, event.hangup_by, event.hangup_reason) == (
        "completed",
        "agent",
        "answered",
    )
    assert (event.sip_status, event.duration_s, event.sip_call_id) == (200, 20.0, "abc@carrier")
    assert (event.created_at, event.updated_at) == (T0, T0 + timedelta(seconds=30))


class _Sink:
    def __init__(self, fail: bool = False) -> None:
        self.events: list[CallStatusEvent] = []
        self.fail = fail

    def status_changed(self, event: CallStatusEvent) -> None:
        if self.fail:
            raise RuntimeError("sink broken")
        self.events.append(event)


def test_each_status_once_and_nothing_after_the_final_one() -> None:
    sink = _Sink()
    status = InboundStatus(sink, _event(status="ringing"))
    status.ringing(100)  # not an 18x: ignored
    status.ringing(183)
    status.ringing(180)
    status.answered(200)
    status.answered(200)
    status.ended(_record())
    status.ended(_record(decided_by="shutdown"))
    status.ringing(180)
    assert [(e.status, e.sip_status) for e in sink.events] == [
        ("ringing", 183),
        ("in-progress", 200),
        ("completed", 200),
    ]


def test_ring_then_timeout_is_no_answer() -> None:
    sink = _Sink()
    status = InboundStatus(sink, _event(status="ringing"))
    status.ringing(180)
    status.ended(_record(answered_at=None, decided_by="agent_timeout", final_sip_code=503))
    assert [e.status for e in sink.events] == ["ringing", "no-answer"]


def test_a_raising_sink_never_reaches_the_call_path() -> None:
    status = InboundStatus(_Sink(fail=True), _event(status="ringing"))
    status.ringing(180)
    status.ended(_record())
