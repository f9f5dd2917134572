"""SPEC §3: who sees what — users, organisations and sub-accounts."""

from __future__ import annotations

from typing import Any

import httpx

from api.conftest import Api
from api.helpers import assert_message, make_trunk

NUMBER = "+14155550123"


async def _every_operation(
    client: httpx.AsyncClient, trunk: dict[str, Any]
) -> list[httpx.Response]:
    tid = trunk["id"]
    gid = trunk["gateways"][0]["id"]
    iid = trunk["ip_acls"][0]["id"]
    nid = trunk["numbers"][0]["id"]
    base = f"/trunk/trunks/{tid}"
    return [
        await client.get(base),
        await client.patch(base, json={"name": "stolen"}),
        await client.post(f"{base}/gateways", json={"host": "1.1.1.1"}),
        await client.delete(f"{base}/gateways/{gid}"),
        await client.post(f"{base}/ip-acls", json={"cidr": "9.9.9.9"}),
        await client.delete(f"{base}/ip-acls/{iid}"),
        await client.post(f"{base}/numbers", json={"e164": "+14155550124"}),
        await client.patch(f"{base}/numbers/{nid}", json={"agent_id": None}),
        await client.delete(f"{base}/numbers/{nid}"),
        await client.delete(base),
    ]


async def _full_trunk(client: httpx.AsyncClient) -> dict[str, Any]:
    return await make_trunk(
        client,
        gateways=[{"host": "sip.carrier.example"}],
        ip_acls=[{"cidr": "8.8.8.8"}],
        numbers=[{"e164": NUMBER}],
    )


async def _assert_invisible(client: httpx.AsyncClient, trunk: dict[str, Any]) -> None:
    for response in await _every_operation(client, trunk):
        message = assert_message(response, 404)
        assert "not found" in message
    assert (await client.get("/trunk/trunks")).json()["total"] == 0


async def _assert_visible(client: httpx.AsyncClient, trunk: dict[str, Any]) -> None:
    assert (await client.get(f"/trunk/trunks/{trunk['id']}")).status_code == 200
    page = (await client.get("/trunk/trunks")).json()
    assert trunk["id"] in [t["id"] for t in page["items"]]


async def test_users_do_not_see_each_other(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await _full_trunk(alice)
    await _assert_invisible(await api.client("bob"), trunk)
    # an organisation member with the same user id sees nothing of the personal trunk
    await _assert_invisible(await api.client("alice", org="org-1"), trunk)
    # the owner still has everything
    shown = (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()
    assert shown == trunk


async def test_organisation_trunks(api: Api) -> None:
    carol = await api.client("carol", org="org-1")
    trunk = await _full_trunk(carol)
    assert (trunk["organization_id"], trunk["sub_account_id"], trunk["user_id"]) == (
        "org-1",
        None,
        None,
    )
    # another member of the organisation sees it, and so does a sub-account of it
    await _assert_visible(await api.client("dave", org="org-1"), trunk)
    await _assert_visible(await api.client("erin", org="org-1", sub="sub-a"), trunk)
    # another organisation and a plain user do not
    await _assert_invisible(await api.client("carol", org="org-2"), trunk)
    await _assert_invisible(await api.client("carol"), trunk)


async def test_sub_account_trunks(api: Api) -> None:
    erin = await api.client("erin", org="org-1", sub="sub-a")
    trunk = await _full_trunk(erin)
    assert (trunk["organization_id"], trunk["sub_account_id"], trunk["user_id"]) == (
        "org-1",
        "sub-a",
        None,
    )
    await _assert_visible(await api.client("frank", org="org-1", sub="sub-a"), trunk)
    await _assert_invisible(await api.client("gina", org="org-1", sub="sub-b"), trunk)
    await _assert_invisible(await api.client("carol", org="org-1"), trunk)
    await _assert_invisible(await api.client("erin", org="org-2", sub="sub-a"), trunk)


async def test_agents_follow_the_same_rule(api: Api) -> None:
    sub = await api.client("erin", org="org-1", sub="sub-a")
    trunk = await make_trunk(sub)
    url = f"/trunk/trunks/{trunk['id']}"
    org_agent = await api.agent("carol", org="org-1")
    same_sub_agent = await api.agent("frank", org="org-1", sub="sub-a")
    for agent in (org_agent, same_sub_agent):
        response = await sub.patch(url, json={"default_inbound_agent_id": agent})
        assert response.status_code == 200, response.text
    for agent in (
        await api.agent("gina", org="org-1", sub="sub-b"),
        await api.agent("erin"),
        await api.agent("carol", org="org-2"),
    ):
        assert_message(await sub.patch(url, json={"default_inbound_agent_id": agent}), 400)


async def test_list_shows_only_own_trunks(api: Api, alice: httpx.AsyncClient) -> None:
    bob = await api.client("bob")
    mine = [(await make_trunk(alice, name=f"a{i}"))["id"] for i in range(3)]
    await make_trunk(bob, name="b")
    page = (await alice.get("/trunk/trunks")).json()
    assert page["total"] == 3 and [t["id"] for t in page["items"]] == mine
