"""The webhook writer and sender on both databases, against an in-process HTTP receiver
(`httpx.MockTransport`) and a fake clock: order, retries, backoff, give-up, restarts, URL checks."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import httpx
import pytest
from sqlalchemy import select, text

from api.conftest import Api
from api.runtime_helpers import metric
from api.webhook_helpers import Clock, Receiver, status_event, webhook_agent
from sipedge.config import WebhooksSettings
from sipedge.runtime.webhook_outbox_writer import WebhookOutboxWriter
from sipedge.runtime.webhook_sender import WebhookSender
from sipedge.store.db import make_session_factory
from sipedge.store.webhook_models import WebhookOutbox
from sipedge.store.webhook_outbox import secret_for

SETTINGS = WebhooksSettings(backoff_base_seconds=2.0, backoff_max_seconds=10.0)
GAVE_UP = ("sipedge_webhook_deliveries_total", {"outcome": "gave_up"})


def _sender(
    api: Api,
    receiver: Receiver,
    clock: Clock,
    *,
    settings: WebhooksSettings = SETTINGS,
    allow_private: bool = True,
    resolve: object = None,
) -> WebhookSender:
    extra = {"resolve": resolve} if resolve is not None else {}
    return WebhookSender(
        make_session_factory(api.engine),
        settings,
        allow_private=allow_private,
        transport=receiver.transport(),
        clock=clock,
        jitter=lambda: 1.0,  # the full exponential step: a deterministic schedule
        **extra,  # type: ignore[arg-type]
    )


async def _write(api: Api, *events: tuple[str, str, str]) -> None:
    writer = WebhookOutboxWriter(make_session_factory(api.engine))
    for run_id, agent_id, status in events:
        writer.status_changed(status_event(run_id, agent_id, status))  # type: ignore[arg-type]
    await writer.stop()


async def _secret(api: Api, key: str = "user:alice") -> str:
    async with make_session_factory(api.engine)() as session:
        value = await secret_for(session, key)
        await session.commit()
    return value


async def _state(api: Api) -> list[tuple[object, ...]]:
    sql = "SELECT run_id, seq, state, attempts FROM webhook_outbox ORDER BY run_id, seq"
    async with api.engine.connect() as connection:
        return [tuple(r) for r in await connection.execute(text(sql))]


async def _orm_rows(api: Api) -> list[WebhookOutbox]:
    async with make_session_factory(api.engine)() as session:
        rows = await session.scalars(select(WebhookOutbox).order_by(WebhookOutbox.seq))
        return list(rows)


async def _drain(api: Api, sender: WebhookSender, clock: Clock, rounds: int = 50) -> None:
    for _ in range(rounds):
        if not await sender.run_once():
            clock.advance(11)
        if await _pending(api) == 0:
            return


async def _pending(api: Api) -> int:
    return int(await api.scalar("SELECT count(*) FROM webhook_outbox WHERE state = 'pending'"))


async def test_a_receiver_that_is_down_for_a_while_gets_everything_in_order(api: Api) -> None:
    agent = await webhook_agent(api)
    calls = ("in-progress", "completed")
    await _write(api, ("r1", agent, "ringing"), ("r2", agent, "ringing"))
    await _write(api, *((run, agent, status) for status in calls for run in ("r1", "r2")))
    receiver, clock = Receiver(status=503), Clock()
    sender = _sender(api, receiver, clock)
    for _ in range(3):
        await sender.run_once()
        clock.advance(11)
    assert receiver.delivered == [] and receiver.attempts == 6  # only the heads of both runs
    receiver.status = 200
    await _drain(api, sender, clock)
    secret = await _secret(api)
    for run in ("r1", "r2"):
        got = [d for d in receiver.delivered if d.payload["id"] == run]
        assert [d.payload["status"] for d in got] == ["ringing", "in-progress", "completed"]
        assert all(d.signed_with(secret) for d in got)
    ids = [d.headers["x-sipedge-event-id"] for d in receiver.delivered]
    assert len(set(ids)) == 6
    assert all(state == "delivered" for _r, _s, state, _a in await _state(api))


async def test_delivered_events_are_purged_after_the_retention(api: Api) -> None:
    agent = await webhook_agent(api)
    await _write(api, ("r1", agent, "ringing"), ("r2", agent, "ringing"))
    receiver, clock = Receiver(), Clock()
    sender = _sender(
        api, receiver, clock, settings=SETTINGS.model_copy(update={"retention_days": 1.0})
    )
    await _drain(api, sender, clock)
    assert len(receiver.delivered) == 2
    assert await sender.purge() == 0  # a day is not over yet
    await _write(api, ("r3", agent, "ringing"))  # still pending when the day is over
    clock.advance(86_400 + 60)
    assert await sender.purge() == 2
    assert [(run, state) for run, _s, state, _a in await _state(api)] == [("r3", "pending")]


async def test_backoff_schedule(api: Api) -> None:
    agent = await webhook_agent(api)
    await _write(api, ("r1", agent, "ringing"))
    receiver, clock = Receiver(status=500), Clock()
    sender = _sender(api, receiver, clock)
    waits = []
    for _ in range(5):
        before = clock.now
        assert await sender.run_once() == 1
        (row,) = await _orm_rows(api)
        waits.append(round((row.next_attempt_at - before).total_seconds(), 3))
        clock.now = row.next_attempt_at
    assert waits == [2.0, 4.0, 8.0, 10.0, 10.0]
    assert await api.scalar("SELECT last_error FROM webhook_outbox") == "HTTP 500"


async def test_gives_up_after_the_bound_and_the_next_event_goes_out(api: Api) -> None:
    agent = await webhook_agent(api)
    await _write(api, ("r1", agent, "ringing"), ("r1", agent, "completed"))
    receiver = Receiver(status=503)
    clock = Clock()
    settings = WebhooksSettings(
        backoff_base_seconds=5.0, backoff_max_seconds=5.0, give_up_after_seconds=12.0
    )
    sender = _sender(api, receiver, clock, settings=settings)
    gave_up = metric(GAVE_UP[0], **GAVE_UP[1])
    for _ in range(3):  # t=0, 5, 10: retries
        await sender.run_once()
        clock.advance(5)
    assert [s for _r, _q, s, _a in await _state(api)] == ["pending", "pending"]
    await sender.run_once()  # t=15 > 12: never more than the bound (the last try is at 12)
    rows = await _state(api)
    assert rows[0][2:] == ("failed", 4)
    assert "HTTP 503" in str(await api.scalar("SELECT last_error FROM webhook_outbox WHERE seq=1"))
    assert metric(GAVE_UP[0], **GAVE_UP[1]) == gave_up + 1
    receiver.status = 200
    await sender.run_once()
    assert [d.payload["status"] for d in receiver.delivered] == ["completed"]


async def test_a_restart_in_between_loses_nothing(api: Api) -> None:
    agent = await webhook_agent(api)
    receiver, clock = Receiver(status=503), Clock()
    sessions = make_session_factory(api.engine)
    first = _sender(api, receiver, clock)
    writer = WebhookOutboxWriter(sessions, on_written=first.wake, flush_interval=60)
    writer.start()
    first.start()
    for status in ("ringing", "in-progress"):
        writer.status_changed(status_event("r1", agent, status))
    await writer.stop()  # shutdown flushes what is queued into the outbox
    await asyncio.sleep(0.05)
    await first.stop()
    # A new process on the same database, the receiver back up.
    receiver.status = 200
    clock.advance(60)
    second = _sender(api, receiver, clock)
    writer = WebhookOutboxWriter(sessions, on_written=second.wake, flush_interval=0.01)
    writer.start()
    second.start()
    writer.status_changed(status_event("r1", agent, "completed"))
    try:
        for _ in range(200):
            if len(receiver.delivered) == 3:
                break
            await asyncio.sleep(0.02)
    finally:
        await writer.stop()
        await second.stop()
    assert [d.payload["status"] for d in receiver.delivered] == [
        "ringing",
        "in-progress",
        "completed",
    ]


@pytest.mark.parametrize(
    ("url", "addresses"),
    [
        ("http://hooks.example.com/x", ["93.184.216.34", "10.0.0.7"]),
        ("http://hooks.example.com/x", ["::ffff:127.0.0.1"]),
        ("http://127.0.0.1:9/x", []),
        ("ftp://hooks.example.com/x", []),
    ],
)
async def test_private_or_invalid_targets_are_given_up_at_delivery(
    api: Api, url: str, addresses: list[str]
) -> None:
    agent = await webhook_agent(api, url=url)
    await _write(api, ("r1", agent, "ringing"))

    async def resolve(host: str, port: int) -> list[str]:
        return addresses

    receiver = Receiver()
    sender = _sender(api, receiver, Clock(), allow_private=False, resolve=resolve)
    await sender.run_once()
    assert receiver.attempts == 0
    assert (await _state(api))[0][2] == "failed"
    error = str(await api.scalar("SELECT last_error FROM webhook_outbox"))
    assert "private" in error or "http or https" in error


async def test_a_public_target_is_sent_when_private_ones_are_refused(api: Api) -> None:
    agent = await webhook_agent(api, url="https://hooks.example.com/x")
    await _write(api, ("r1", agent, "ringing"))
    looked_up: list[tuple[str, int]] = []

    async def resolve(host: str, port: int) -> list[str]:
        looked_up.append((host, port))
        return ["93.184.216.34"]

    receiver = Receiver()
    await _sender(api, receiver, Clock(), allow_private=False, resolve=resolve).run_once()
    assert looked_up == [("hooks.example.com", 443)]
    assert len(receiver.delivered) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (302, None),  # redirects are never followed
        (404, None),
        (200, httpx.ReadTimeout("slow")),
        (200, httpx.ConnectError("refused")),
    ],
)
async def test_non_2xx_and_errors_are_retried(
    api: Api, status: int, error: Exception | None
) -> None:
    agent = await webhook_agent(api)
    await _write(api, ("r1", agent, "ringing"))
    receiver = Receiver(status=status, error=error)
    await _sender(api, receiver, Clock()).run_once()
    assert (await _state(api))[0][2:] == ("pending", 1)
    assert receiver.delivered == []


async def test_secrets_and_payloads_stay_out_of_info_logs(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    agent = await webhook_agent(api)
    await _write(api, ("r1", agent, "ringing"))
    receiver = Receiver(status=503)
    settings = WebhooksSettings(give_up_after_seconds=1.0)
    clock = Clock()
    sender = _sender(api, receiver, clock, settings=settings)
    with caplog.at_level(logging.INFO):
        await sender.run_once()
        clock.advance(2)
        await sender.run_once()  # given up: a WARNING
    secret = await _secret(api)
    assert "given up" in caplog.text
    assert secret not in caplog.text and "+14155550999" not in caplog.text


async def test_status_changed_only_queues(api: Api) -> None:
    agent = await webhook_agent(api)
    writer = WebhookOutboxWriter(make_session_factory(api.engine), max_queue=2)
    writer.status_changed(replace(status_event("r0", agent, "failed"), agent_id=None))
    assert writer.pending == 0  # no agent, no webhook
    writer.status_changed(status_event("r1", agent, "ringing"))
    assert writer.pending == 1
    assert await api.scalar("SELECT count(*) FROM webhook_outbox") == 0
    for status in ("in-progress", "completed"):
        writer.status_changed(status_event("r1", agent, status))
    assert (writer.pending, writer.lost) == (2, 1)  # the oldest was dropped
    await writer.stop()
    assert await api.scalar("SELECT count(*) FROM webhook_outbox") == 2


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (OSError("temporary failure in name resolution"), "pending"),
        (UnicodeError("idna"), "failed"),
    ],
)
async def test_resolver_failures(api: Api, error: Exception, state: str) -> None:
    agent = await webhook_agent(api, url="http://hooks.example.com/x")
    await _write(api, ("r1", agent, "ringing"))

    async def resolve(host: str, port: int) -> list[str]:
        raise error

    receiver = Receiver()
    await _sender(api, receiver, Clock(), allow_private=False, resolve=resolve).run_once()
    assert receiver.attempts == 0
    assert (await _state(api))[0][2:] == (state, 1)
