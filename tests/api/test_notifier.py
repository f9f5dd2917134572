"""The snapshot-changed signal: every committed write notifies, failed writes do not."""

from __future__ import annotations

import httpx

from api.conftest import Api
from api.helpers import CREDS, MISSING_ID, make_trunk
from sipedge.store.changes import Change, ChangeNotifier


async def test_every_write_notifies(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    tid = trunk["id"]
    base = f"/trunk/trunks/{tid}"
    await alice.patch(base, json={"inbound_enabled": False})
    gid = (await alice.post(f"{base}/gateways", json={"host": "1.1.1.1"})).json()["id"]
    await alice.delete(f"{base}/gateways/{gid}")
    iid = (await alice.post(f"{base}/ip-acls", json={"cidr": "8.8.8.8"})).json()["id"]
    await alice.delete(f"{base}/ip-acls/{iid}")
    nid = (await alice.post(f"{base}/numbers", json={"e164": "+14155550123"})).json()["id"]
    await alice.patch(f"{base}/numbers/{nid}", json={"agent_id": None})
    await alice.delete(f"{base}/numbers/{nid}")
    await alice.delete(base)
    assert api.changes == [
        Change("trunk.created", tid),
        Change("trunk.updated", tid),
        Change("gateway.created", tid),
        Change("gateway.deleted", tid),
        Change("carrier_ip.created", tid),
        Change("carrier_ip.deleted", tid),
        Change("number.created", tid),
        Change("number.updated", tid),
        Change("number.deleted", tid),
        Change("trunk.deleted", tid),
    ]


async def test_reads_and_failed_writes_do_not_notify(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, numbers=[{"e164": "+14155550123"}], **CREDS)
    other = await make_trunk(alice, gateways=[{"host": "1.1.1.1"}])
    api.changes.clear()
    base = f"/trunk/trunks/{trunk['id']}"
    failures = [
        await alice.get(base),
        await alice.get("/trunk/trunks"),
        await alice.patch(base, json={"channels": 0}),  # 422
        await alice.patch(base, json={"default_inbound_agent_id": MISSING_ID}),  # 400
        await alice.patch(f"/trunk/trunks/{MISSING_ID}", json={"name": "x"}),  # 404
        await alice.post(f"{base}/numbers", json={"e164": "+14155550123"}),  # 409
        await alice.post(f"{base}/gateways", json={"host": "nowhere.carrier.example"}),  # 422
        await alice.post(f"/trunk/trunks/{other['id']}/gateways", json={"host": "1.1.1.1"}),
        await alice.delete(f"{base}/ip-acls/{MISSING_ID}"),  # 404
    ]
    assert [r.status_code for r in failures] == [200, 200, 422, 400, 404, 409, 422, 409, 404]
    assert api.changes == []


def test_subscribe_and_unsubscribe() -> None:
    notifier = ChangeNotifier()
    seen: list[Change] = []
    unsubscribe = notifier.subscribe(seen.append)
    notifier.notify("trunk.updated", "t1")
    unsubscribe()
    unsubscribe()
    notifier.notify("trunk.updated", "t2")
    assert seen == [Change("trunk.updated", "t1")]
