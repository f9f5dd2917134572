"""Trunk activity: `last_*_at` at most once a minute per row, health persisted off the path."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import httpx
import pytest

from api.conftest import Api
from api.helpers import MISSING_ID, make_trunk
from api.runtime_helpers import T0, FlakySessions, metric, statements
from sipedge.edge.health import Health
from sipedge.runtime.activity import ActivityTracker, health_outcome
from sipedge.store.db import make_session_factory

FAILURES = "sipedge_activity_write_failures_total"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def _tracker(api: Api, clock: Clock | None = None, **options: object) -> ActivityTracker:
    return ActivityTracker(
        make_session_factory(api.engine),
        now=clock or Clock(),
        **options,  # type: ignore[arg-type]
    )


async def _trunk(client: httpx.AsyncClient, tid: str) -> dict[str, object]:
    response = await client.get(f"/trunk/trunks/{tid}")
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def _stamp(value: object) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))


async def test_last_inbound_at_is_written_at_most_once_a_minute_per_row(
    api: Api, alice: httpx.AsyncClient
) -> None:
    trunk = await make_trunk(alice, numbers=[{"e164": "+14155550123"}])
    tid, nid = trunk["id"], trunk["numbers"][0]["id"]
    clock = Clock()
    tracker = _tracker(api, clock)

    async def crossing(at: datetime) -> int:
        tracker.call_crossed(trunk_id=tid, number_id=nid, direction="inbound", at=at)
        with statements(api.engine) as seen:
            assert await tracker.flush() is True
        return sum(1 for sql, _ in seen.seen if sql.startswith("UPDATE") and "last_inbound" in sql)

    assert await crossing(T0) == 2  # trunk and number, one UPDATE each
    body = await _trunk(alice, tid)
    assert _stamp(body["last_inbound_at"]) == T0 and body["last_outbound_at"] is None
    numbers = body["numbers"]
    assert isinstance(numbers, list) and _stamp(numbers[0]["last_inbound_at"]) == T0

    clock.advance(30)
    assert await crossing(T0 + timedelta(seconds=30)) == 0  # within the minute: no write
    assert _stamp((await _trunk(alice, tid))["last_inbound_at"]) == T0

    clock.advance(31)
    later = T0 + timedelta(seconds=61)
    assert await crossing(later) == 2
    body = await _trunk(alice, tid)
    assert _stamp(body["last_inbound_at"]) == later
    numbers = body["numbers"]
    assert isinstance(numbers, list) and _stamp(numbers[0]["last_inbound_at"]) == later


async def test_rows_and_columns_are_throttled_separately(
    api: Api, alice: httpx.AsyncClient
) -> None:
    one = await make_trunk(alice, numbers=[{"e164": "+14155550123"}, {"e164": "+14155550124"}])
    tid = one["id"]
    first, second = (n["id"] for n in one["numbers"])
    tracker = _tracker(api)
    tracker.call_crossed(trunk_id=tid, number_id=first, direction="inbound", at=T0)
    tracker.call_crossed(trunk_id=tid, number_id=second, direction="inbound", at=T0)
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="outbound", at=T0)
    await tracker.flush()
    body = await _trunk(alice, tid)
    assert _stamp(body["last_inbound_at"]) == T0 and _stamp(body["last_outbound_at"]) == T0
    numbers = body["numbers"]
    assert isinstance(numbers, list)
    assert [_stamp(n["last_inbound_at"]) for n in numbers] == [T0, T0]
    assert [n["last_outbound_at"] for n in numbers] == [None, None]


async def test_first_crossing_makes_the_trunk_ready(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    tid = trunk["id"]
    tracker = _tracker(api)
    assert trunk["health"] == "waiting_for_carrier"
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="inbound", at=T0)
    await tracker.flush()
    assert (await _trunk(alice, tid))["health"] == "ready"
    assert await api.scalar("SELECT health_state FROM trunks WHERE id = :id", id=tid) == "ready"
    # Not active: the API reports disabled whatever the calls did.
    await alice.patch(f"/trunk/trunks/{tid}", json={"is_active": False})
    assert (await _trunk(alice, tid))["health"] == "disabled"


async def test_a_carrier_failing_before_any_crossing_keeps_waiting(
    api: Api, alice: httpx.AsyncClient
) -> None:
    tid = (await make_trunk(alice))["id"]
    tracker = _tracker(api)
    for _ in range(3):
        tracker.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    await tracker.flush()
    assert (await _trunk(alice, tid))["health"] == "waiting_for_carrier"


async def test_three_carrier_failures_degrade_and_an_answer_restores(
    api: Api, alice: httpx.AsyncClient
) -> None:
    tid = (await make_trunk(alice))["id"]
    tracker = _tracker(api)
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="outbound", at=T0)
    tracker.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    tracker.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    await tracker.flush()
    assert (await _trunk(alice, tid))["health"] == "ready"
    tracker.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    await tracker.flush()
    assert (await _trunk(alice, tid))["health"] == "degraded"
    tracker.call_outcome(trunk_id=tid, outcome="busy", at=T0)  # the callee's answer
    await tracker.flush()
    assert (await _trunk(alice, tid))["health"] == "degraded"
    tracker.call_outcome(trunk_id=tid, outcome="answered", at=T0)
    await tracker.flush()
    assert (await _trunk(alice, tid))["health"] == "ready"


async def test_two_nodes_outcomes_add_up_and_neither_overwrites_the_other(
    api: Api, alice: httpx.AsyncClient
) -> None:
    # Health is applied to the stored state in the writing transaction: node A's two carrier
    # failures and node B's one make three; B's answer later restores it although A, whose
    # last view was "ready" then, never saw it degrade.
    tid = (await make_trunk(alice))["id"]
    a, b = _tracker(api), _tracker(api)
    a.call_crossed(trunk_id=tid, number_id=None, direction="outbound", at=T0)
    a.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    a.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    await a.flush()
    assert (await _trunk(alice, tid))["health"] == "ready"
    b.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    await b.flush()
    assert (await _trunk(alice, tid))["health"] == "degraded"
    a.call_outcome(trunk_id=tid, outcome="answered", at=T0)
    await a.flush()
    assert (await _trunk(alice, tid))["health"] == "ready"
    b.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)  # a new streak: 1
    await b.flush()
    assert (await _trunk(alice, tid))["health"] == "ready"
    assert await api.scalar(f"SELECT health_failures FROM trunks WHERE id = '{tid}'") == 1


async def test_two_nodes_flushing_at_once_lose_no_outcome(
    api: Api, alice: httpx.AsyncClient
) -> None:
    if not api.is_postgres:
        pytest.skip("several nodes share PostgreSQL; a SQLite deployment is one process")
    tid = (await make_trunk(alice))["id"]
    nodes = [_tracker(api) for _ in range(3)]
    nodes[0].call_crossed(trunk_id=tid, number_id=None, direction="outbound", at=T0)
    await nodes[0].flush()
    for node in nodes:
        node.call_outcome(trunk_id=tid, outcome="carrier_failure", at=T0)
    assert all(await asyncio.gather(*(node.flush() for node in nodes)))
    assert (await _trunk(alice, tid))["health"] == "degraded"


async def test_health_is_seeded_from_the_stored_state(api: Api, alice: httpx.AsyncClient) -> None:
    tid = (await make_trunk(alice))["id"]
    await api.execute("UPDATE trunks SET health_state = 'degraded' WHERE id = :id", id=tid)
    tracker = _tracker(api)
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="inbound", at=T0)
    tracker.call_outcome(trunk_id=tid, outcome="no_answer", at=T0)
    await tracker.flush()
    state = tracker.health(tid)
    assert state is not None and state.health is Health.DEGRADED
    assert (await _trunk(alice, tid))["health"] == "degraded"


async def test_health_is_written_only_when_it_changes(api: Api, alice: httpx.AsyncClient) -> None:
    tid = (await make_trunk(alice))["id"]
    clock = Clock()
    tracker = _tracker(api, clock)
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="inbound", at=T0)
    await tracker.flush()
    clock.advance(5)
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="inbound", at=T0)
    with statements(api.engine) as seen:
        await tracker.flush()
    assert seen.count("UPDATE") == 0


async def test_an_unknown_trunk_does_not_block_the_others(
    api: Api, alice: httpx.AsyncClient
) -> None:
    tid = (await make_trunk(alice))["id"]
    tracker = _tracker(api)
    tracker.call_crossed(trunk_id=MISSING_ID, number_id=MISSING_ID, direction="inbound", at=T0)
    tracker.call_outcome(trunk_id=MISSING_ID, outcome="answered", at=T0)
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="inbound", at=T0)
    assert await tracker.flush() is True
    assert tracker.health(MISSING_ID) is None
    assert (await _trunk(alice, tid))["health"] == "ready"


async def test_a_failed_write_is_counted_and_retried(api: Api, alice: httpx.AsyncClient) -> None:
    tid = (await make_trunk(alice))["id"]
    sessions = FlakySessions(make_session_factory(api.engine))
    sessions.down = True
    tracker = ActivityTracker(sessions, now=Clock())  # type: ignore[arg-type]
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="inbound", at=T0)
    before = metric(FAILURES)
    assert await tracker.flush() is False
    assert await tracker.flush() is False
    assert metric(FAILURES) == before + 2
    sessions.down = False
    assert await tracker.flush() is True
    body = await _trunk(alice, tid)
    assert _stamp(body["last_inbound_at"]) == T0 and body["health"] == "ready"


async def test_background_task_writes_and_stop_flushes(api: Api, alice: httpx.AsyncClient) -> None:
    one = (await make_trunk(alice))["id"]
    two = (await make_trunk(alice, name="two"))["id"]
    tracker = _tracker(api, flush_interval=0.01)
    tracker.start()
    tracker.call_crossed(trunk_id=one, number_id=None, direction="outbound", at=T0)

    async def written() -> None:
        while (await _trunk(alice, one))["last_outbound_at"] is None:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(written(), timeout=5)
    slow = _tracker(api, flush_interval=60)
    slow.start()
    slow.call_crossed(trunk_id=two, number_id=None, direction="inbound", at=T0)
    await slow.stop()
    await tracker.stop()
    assert _stamp((await _trunk(alice, two))["last_inbound_at"]) == T0


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("answered", "answered"),
        ("carrier_failure", "carrier_failure"),
        ("callee_refused", "callee_refused"),
        ("busy", "callee_refused"),
        ("no_answer", "callee_refused"),
    ],
)
def test_outcome_names(given: str, expected: str) -> None:
    assert health_outcome(given).value == expected


async def test_a_naive_stamp_is_taken_as_utc(api: Api, alice: httpx.AsyncClient) -> None:
    tid = (await make_trunk(alice))["id"]
    tracker = _tracker(api)
    naive = T0.replace(tzinfo=None)
    tracker.call_crossed(trunk_id=tid, number_id=None, direction="inbound", at=naive)
    assert await tracker.flush() is True
    assert _stamp((await _trunk(alice, tid))["last_inbound_at"]) == T0
