"""The routing snapshot loader: built from API-created data, debounced, failure-tolerant."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from api.conftest import Api
from api.helpers import CREDS, make_trunk
from api.runtime_helpers import FailingSessions, FlakySessions, GatedSessions, metric
from sipedge.edge.agents import resolve_agent
from sipedge.edge.carrier_acl import candidate_trunks
from sipedge.edge.numbers import match_number
from sipedge.edge.snapshot import RoutingSnapshot
from sipedge.runtime.snapshot_loader import SnapshotLoader, removed_trunks
from sipedge.store.db import make_session_factory

FAILURES = "sipedge_snapshot_reload_failures_total"


def _loader(api: Api, **options: float) -> SnapshotLoader:
    return SnapshotLoader(make_session_factory(api.engine), **options)  # type: ignore[arg-type]


async def test_starts_empty_and_loads_every_live_row(api: Api, alice: httpx.AsyncClient) -> None:
    agent = await api.agent("alice")
    numbered = await api.agent("alice")
    trunk = await make_trunk(
        alice,
        transport="tcp",
        codecs="PCMA,PCMU",
        channels=3,
        outbound_leading_plus_enabled=False,
        default_inbound_agent_id=agent,
        gateways=[{"host": "sip2.carrier.example", "priority": 5}, {"host": "8.8.8.8"}],
        ip_acls=[{"cidr": "203.0.113.0/24"}, {"cidr": "2001:db8::/48"}],
        numbers=[
            {"e164": "+442079460958"},
            {"e164": "+14155550123", "agent_id": numbered},
        ],
        **CREDS,
    )
    loader = _loader(api)
    assert loader.current.version == 0 and dict(loader.current.trunks) == {}
    assert await loader.load() is True
    snapshot = loader.current
    assert snapshot.version == loader.version == 1
    view = snapshot.trunks[trunk["id"]]
    assert view.transport == "tcp" and view.codecs == ("PCMA", "PCMU")
    assert view.channels == 3 and view.outbound_leading_plus is False
    assert view.has_credentials is True and view.default_inbound_agent_id == agent
    assert view.user_id == "alice" and view.organization_id is None
    assert view.health == "waiting_for_carrier"
    assert [g.host for g in view.gateways] == ["8.8.8.8", "sip2.carrier.example"]
    assert view.gateways[1].resolved_ips == ("9.9.9.9",) and view.gateways[1].port == 5060
    assert set(view.cidrs) == {"203.0.113.0/24", "2001:db8::/48"}
    assert [t.id for t in candidate_trunks(snapshot, "203.0.113.7")] == [trunk["id"]]
    assert [t.id for t in candidate_trunks(snapshot, "2001:db8::1")] == [trunk["id"]]
    assert candidate_trunks(snapshot, "198.51.100.1") == ()
    london = match_number(snapshot, "442079460958", {trunk["id"]})
    assert london is not None and match_number(snapshot, "02079460958", {trunk["id"]}) == london
    us = snapshot.numbers_by_key["14155550123"]
    assert us.agent_id == numbered and us.e164 == "+14155550123"
    # A number without its own agent is answered by the trunk's default agent.
    default = resolve_agent(snapshot, view, london)
    assert default is not None and default.id == agent
    answering = resolve_agent(snapshot, view, us)
    assert answering is not None and answering.id == numbered
    assert set(snapshot.agents) == {agent, numbered}


async def test_patch_withdraws_ranges_in_the_next_snapshot(
    api: Api, alice: httpx.AsyncClient
) -> None:
    first = await make_trunk(alice, ip_acls=[{"cidr": "203.0.113.0/24"}])
    second = await make_trunk(alice, name="same range", ip_acls=[{"cidr": "203.0.113.0/24"}])
    loader = _loader(api, debounce=0.0)
    await loader.load()
    loader.subscribe(api.notifier)
    try:
        response = await alice.patch(f"/trunk/trunks/{first['id']}", json={"is_active": False})
        assert response.status_code == 200
        await loader.settle()
        # Another inbound trunk listing the same addresses still admits them.
        assert [t.id for t in candidate_trunks(loader.current, "203.0.113.9")] == [second["id"]]
        assert loader.current.trunks[first["id"]].is_active is False
        await alice.patch(f"/trunk/trunks/{second['id']}", json={"inbound_enabled": False})
        await loader.settle()
        assert candidate_trunks(loader.current, "203.0.113.9") == ()
        assert loader.current.version == 3
    finally:
        await loader.stop()


async def test_deleted_rows_disappear_and_swap_callbacks_see_it(
    api: Api, alice: httpx.AsyncClient
) -> None:
    agent = await api.agent("alice")
    trunk = await make_trunk(alice, numbers=[{"e164": "+14155550123"}, {"e164": "+14155550124"}])
    doomed = await make_trunk(alice, name="doomed", ip_acls=[{"cidr": "198.51.100.0/24"}])
    loader = _loader(api, debounce=0.0)
    swaps: list[tuple[RoutingSnapshot, RoutingSnapshot]] = []
    remove = loader.on_swap(lambda old, new: swaps.append((old, new)))
    await loader.load()
    assert set(loader.current.numbers_by_key) == {"14155550123", "14155550124"}
    assert agent in loader.current.agents
    loader.subscribe(api.notifier)
    try:
        number_id = trunk["numbers"][0]["id"]
        await alice.delete(f"/trunk/trunks/{trunk['id']}/numbers/{number_id}")
        await loader.settle()
        assert set(loader.current.numbers_by_key) == {"14155550124"}
        await alice.delete(f"/trunk/trunks/{doomed['id']}")
        await loader.settle()
        assert doomed["id"] not in loader.current.trunks
        assert candidate_trunks(loader.current, "198.51.100.1") == ()
        old, new = swaps[-1]
        assert removed_trunks(old, new) == {doomed["id"]}
        assert new is loader.current
        agents_client = await api.client("alice")
        assert (await agents_client.delete(f"/v2/agent/{agent}")).status_code == 200
        loader.request_reload()
        await loader.settle()
        assert agent not in loader.current.agents
        remove()
        versions = len(swaps)
        await loader.load()
        assert len(swaps) == versions
    finally:
        await loader.stop()


async def test_a_failing_swap_callback_does_not_stop_the_swap(api: Api) -> None:
    loader = _loader(api)
    seen: list[int] = []

    def broken(_old: RoutingSnapshot, _new: RoutingSnapshot) -> None:
        raise RuntimeError("bug in a subscriber")

    loader.on_swap(broken)
    loader.on_swap(lambda _old, new: seen.append(new.version))
    assert await loader.load() is True
    assert loader.current.version == 1 and seen == [1]


async def test_agents_turn_processed_once_the_snapshot_holds_them(
    api: Api, alice: httpx.AsyncClient
) -> None:
    agent = await api.agent("alice")
    status = "SELECT agent_status FROM agents WHERE id = :id"
    assert await api.scalar(status, id=agent) == "seeding"
    loader = _loader(api)
    await loader.load()
    assert await api.scalar(status, id=agent) == "processed"
    body = (await alice.get(f"/v2/agent/{agent}")).json()
    assert body["agent_status"] == "processed"


async def test_many_changes_coalesce_into_few_reloads(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    sessions = GatedSessions(make_session_factory(api.engine))
    loader = SnapshotLoader(sessions, debounce=0.01)  # type: ignore[arg-type]
    loader.subscribe(api.notifier)
    try:
        for _ in range(50):
            api.notifier.notify("trunk.updated", trunk["id"])
        await asyncio.wait_for(sessions.entered.wait(), timeout=5)  # the load is in flight
        # Changes arriving while a load is in flight give one more load, not one each.
        for _ in range(20):
            api.notifier.notify("trunk.updated", trunk["id"])
        sessions.gate.set()
        await loader.settle()
        assert loader.loads == 2 and loader.current.version == 2
        for _ in range(50):
            api.notifier.notify("trunk.updated", trunk["id"])
        await loader.settle()
        assert loader.loads == 3
    finally:
        await loader.stop()


async def test_a_change_during_a_load_is_not_lost(api: Api, alice: httpx.AsyncClient) -> None:
    loader = _loader(api, debounce=0.0)
    await loader.load()
    loader.subscribe(api.notifier)
    try:
        first = await make_trunk(alice, name="one")
        second = await make_trunk(alice, name="two")  # notified while the first reload may run
        await loader.settle()
        assert {first["id"], second["id"]} <= set(loader.current.trunks)
    finally:
        await loader.stop()


async def test_failed_reload_keeps_the_old_snapshot_and_counts(
    api: Api, alice: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    trunk = await make_trunk(alice, ip_acls=[{"cidr": "203.0.113.0/24"}])
    sessions = FlakySessions(make_session_factory(api.engine))
    loader = SnapshotLoader(sessions)  # type: ignore[arg-type]
    await loader.load()
    good = loader.current
    sessions.down = True
    before = metric(FAILURES)
    with caplog.at_level(logging.WARNING, logger="sipedge.runtime.snapshot_loader"):
        assert await loader.load() is False
        assert await loader.load() is False
    assert loader.current is good and loader.version == 1
    assert trunk["id"] in loader.current.trunks
    assert metric(FAILURES) == before + 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "keeping version 1" in warnings[0].getMessage()
    sessions.down = False
    assert await loader.load() is True and loader.version == 2


async def test_first_load_failing_keeps_the_empty_snapshot(api: Api) -> None:
    loader = SnapshotLoader(FailingSessions())  # type: ignore[arg-type]
    before = metric(FAILURES)
    assert await loader.load() is False
    assert loader.current.version == 0 and dict(loader.current.trunks) == {}
    assert metric(FAILURES) == before + 1


async def test_a_failed_debounced_reload_is_retried(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    sessions = FlakySessions(make_session_factory(api.engine), failures=2)
    loader = SnapshotLoader(sessions, debounce=0.0, retry_after=0.01)  # type: ignore[arg-type]
    before = metric(FAILURES)
    loader.request_reload()
    await asyncio.wait_for(loader.settle(), timeout=5)
    assert loader.loads == 3 and loader.version == 1
    assert trunk["id"] in loader.current.trunks
    assert metric(FAILURES) == before + 2
    await loader.stop()


async def test_stop_unsubscribes(api: Api, alice: httpx.AsyncClient) -> None:
    loader = _loader(api, debounce=0.0)
    loader.subscribe(api.notifier)
    await loader.stop()
    await make_trunk(alice)
    await asyncio.sleep(0.01)
    assert loader.loads == 0


async def test_a_change_notified_from_another_thread_reloads(
    api: Api, alice: httpx.AsyncClient
) -> None:
    trunk = await make_trunk(alice)
    loader = _loader(api, debounce=0.0)
    loader.subscribe(api.notifier)
    try:
        await asyncio.to_thread(api.notifier.notify, "trunk.updated", trunk["id"])
        await asyncio.sleep(0)  # the hand-over to the loop runs
        await loader.settle()
        assert loader.loads == 1 and trunk["id"] in loader.current.trunks
    finally:
        await loader.stop()


async def test_call_signals_do_not_reload_the_snapshot(api: Api, alice: httpx.AsyncClient) -> None:
    # A queued outbound call or a hangup request wakes the dialer only: the snapshot holds no
    # calls, and reloading it per POST /call made the API wait on every call (bench.outbound_ramp).
    trunk = await make_trunk(alice)
    loader = _loader(api, debounce=0.0)
    await loader.load()
    loader.subscribe(api.notifier)
    try:
        for _ in range(20):
            api.notifier.notify("call.queued", trunk["id"])
            api.notifier.notify("call.hangup", trunk["id"])
        await asyncio.sleep(0.05)
        await loader.settle()
        assert loader.loads == 1
        api.notifier.notify("trunk.updated", trunk["id"])
        await loader.settle()
        assert loader.loads == 2
    finally:
        await loader.stop()


async def test_an_agent_webhook_change_reaches_the_snapshot(
    api: Api, alice: httpx.AsyncClient
) -> None:
    # Inbound calls queue statuses only for agents the snapshot says have a webhook_url.
    agent = await api.agent("alice")
    loader = _loader(api, debounce=0.0)
    await loader.load()
    loader.subscribe(api.notifier)
    try:
        assert loader.current.agents[agent].has_webhook is False
        body = {"agent_config": {"webhook_url": "https://hooks.example.org/calls"}}
        response = await alice.patch(f"/v2/agent/{agent}", json=body)
        assert response.status_code == 200, response.text
        await loader.settle()
        assert loader.current.agents[agent].has_webhook is True
        body = {"agent_config": {"webhook_url": None}}
        assert (await alice.patch(f"/v2/agent/{agent}", json=body)).status_code == 200
        await loader.settle()
        assert loader.current.agents[agent].has_webhook is False
    finally:
        await loader.stop()
