"""The call record writer: batched INSERTs, flush on stop, bounded queue, failed flushes."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest
from sqlalchemy import event

from api.conftest import Api
from api.helpers import make_trunk
from api.runtime_helpers import FailingSessions, FlakySessions, call_event, metric, statements
from sipedge.runtime.call_record_writer import CHUNK, CallRecordWriter
from sipedge.store.db import make_session_factory

LOST = "sipedge_call_records_lost_total"
COUNT = "SELECT count(*) FROM call_records"


async def _trunk_id(api: Api) -> str:
    client = await api.client("alice")
    trunk = await make_trunk(client)
    return str(trunk["id"])


async def _eventually(predicate: object, timeout: float = 5.0) -> None:
    async def wait() -> None:
        while not await predicate():  # type: ignore[operator]
            await asyncio.sleep(0.01)

    await asyncio.wait_for(wait(), timeout)


@pytest.mark.parametrize("count", [1, 200, 450])
async def test_records_are_written_in_batches(api: Api, count: int) -> None:
    trunk_id = await _trunk_id(api)
    writer = CallRecordWriter(make_session_factory(api.engine), batch_size=200)
    for n in range(count):
        writer.record(call_event(trunk_id, n))
    commits = 0

    def commit(_conn: object) -> None:
        nonlocal commits
        commits += 1

    event.listen(api.engine.sync_engine, "commit", commit)
    try:
        with statements(api.engine) as seen:
            await writer.stop()
    finally:
        event.remove(api.engine.sync_engine, "commit", commit)
    # One transaction per batch of up to 200, in INSERTs of CHUNK rows: the loop is never held
    # for a whole batch's parameters at once.
    assert commits == math.ceil(count / 200)
    assert seen.count("INSERT INTO CALL_RECORDS") == math.ceil(count / CHUNK)
    assert await api.scalar(COUNT) == count
    assert writer.written == count and writer.pending == 0


async def test_background_task_writes_a_partial_batch_after_the_interval(api: Api) -> None:
    trunk_id = await _trunk_id(api)
    writer = CallRecordWriter(make_session_factory(api.engine), flush_interval=0.02)
    writer.start()
    try:
        for n in range(5):
            writer.record(call_event(trunk_id, n))
        await _eventually(lambda: _rows(api, 5))
    finally:
        await writer.stop()


async def test_a_full_batch_is_written_without_waiting_for_the_interval(api: Api) -> None:
    trunk_id = await _trunk_id(api)
    writer = CallRecordWriter(make_session_factory(api.engine), batch_size=10, flush_interval=60)
    writer.start()
    try:
        for n in range(10):
            writer.record(call_event(trunk_id, n))
        await _eventually(lambda: _rows(api, 10))
    finally:
        await writer.stop()


async def test_stop_flushes_everything_queued(api: Api) -> None:
    trunk_id = await _trunk_id(api)
    writer = CallRecordWriter(make_session_factory(api.engine), flush_interval=60)
    writer.start()
    for n in range(7):
        writer.record(call_event(trunk_id, n))
    assert await api.scalar(COUNT) == 0
    await writer.stop()
    assert await api.scalar(COUNT) == 7


async def test_a_full_queue_drops_the_oldest_and_counts(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    trunk_id = await _trunk_id(api)
    writer = CallRecordWriter(make_session_factory(api.engine), max_queue=3)
    before = metric(LOST, reason="queue_full")
    with caplog.at_level(logging.WARNING, logger="sipedge.runtime.call_record_writer"):
        for n in range(5):
            writer.record(call_event(trunk_id, n))
    assert writer.lost == 2 and writer.pending == 3
    assert metric(LOST, reason="queue_full") == before + 2
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1  # rate-limited
    await writer.stop()
    client = await api.client("alice")
    items = (await client.get(f"/trunk/trunks/{trunk_id}/calls")).json()["items"]
    assert [i["run_id"] for i in items] == ["run-4", "run-3", "run-2"]


async def test_a_failed_attempt_is_retried(api: Api) -> None:
    trunk_id = await _trunk_id(api)
    sessions = FlakySessions(make_session_factory(api.engine), failures=2)
    writer = CallRecordWriter(sessions, max_attempts=3, retry_delay=0.0)  # type: ignore[arg-type]
    writer.record(call_event(trunk_id))
    await writer.stop()
    assert sessions.calls == 3 and writer.lost == 0
    assert await api.scalar(COUNT) == 1


async def test_a_batch_failing_every_attempt_is_counted_as_lost(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    trunk_id = await _trunk_id(api)
    sessions = FailingSessions()
    writer = CallRecordWriter(sessions, max_attempts=2, retry_delay=0.0)  # type: ignore[arg-type]
    before = metric(LOST, reason="write_failed")
    for n in range(3):
        writer.record(call_event(trunk_id, n))
    with caplog.at_level(logging.ERROR, logger="sipedge.runtime.call_record_writer"):
        await writer.stop()
    assert sessions.calls == 2 and writer.lost == 3 and writer.pending == 0
    assert metric(LOST, reason="write_failed") == before + 3
    assert any("gave up writing 3 call records" in r.getMessage() for r in caplog.records)


async def test_the_background_writer_survives_a_failing_flush(api: Api) -> None:
    trunk_id = await _trunk_id(api)
    sessions = FlakySessions(make_session_factory(api.engine))
    sessions.down = True
    writer = CallRecordWriter(
        sessions,  # type: ignore[arg-type]
        flush_interval=0.01,
        max_attempts=1,
    )
    writer.start()
    try:
        writer.record(call_event(trunk_id, 0))

        async def lost() -> bool:
            return writer.lost == 1

        await _eventually(lost)
        sessions.down = False
        writer.record(call_event(trunk_id, 1))
        await _eventually(lambda: _rows(api, 1))
    finally:
        await writer.stop()


async def test_text_longer_than_its_column_is_clipped_not_lost(api: Api) -> None:
    trunk_id = await _trunk_id(api)
    writer = CallRecordWriter(make_session_factory(api.engine))
    writer.record(call_event(trunk_id, carrier_call_id="c" * 400, from_number="1" * 100))
    await writer.stop()
    assert writer.lost == 0
    assert await api.scalar("SELECT length(carrier_call_id) FROM call_records") == 255
    assert await api.scalar("SELECT length(from_number) FROM call_records") == 64


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError):
        CallRecordWriter(FailingSessions(), batch_size=0)  # type: ignore[arg-type]


async def _rows(api: Api, count: int) -> bool:
    return bool(await api.scalar(COUNT) == count)
