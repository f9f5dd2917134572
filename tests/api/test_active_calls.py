"""`active_calls` on the trunk API is the live figure of the edge's channel limiter."""

from __future__ import annotations

import httpx

from api.conftest import Api
from api.helpers import make_trunk
from sipedge.api.app import create_app
from sipedge.config import Settings
from sipedge.edge.channels import ChannelLimiter
from sipedge.runtime.active_calls import active_calls_from


async def test_trunk_shows_the_calls_holding_its_channels(api: Api) -> None:
    limiter = ChannelLimiter()
    app = create_app(
        Settings(database={"url": api.url}),  # type: ignore[arg-type]
        resolver=api.resolver,
        engine=api.engine,
        active_calls=active_calls_from(limiter),
    )
    token = await api.token("alice")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://sipedge.test",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        trunk = await make_trunk(client, channels=5)
        other = await make_trunk(client, name="idle")
        tid = trunk["id"]
        assert trunk["active_calls"] == 0
        assert limiter.try_acquire(tid, 5, "call-1") and limiter.try_acquire(tid, 5, "call-2")
        assert (await client.get(f"/trunk/trunks/{tid}")).json()["active_calls"] == 2
        listed = {
            t["id"]: t["active_calls"] for t in (await client.get("/trunk/trunks")).json()["items"]
        }
        assert listed == {tid: 2, other["id"]: 0}
        limiter.release("call-1")
        assert (await client.get(f"/trunk/trunks/{tid}")).json()["active_calls"] == 1
        limiter.release("call-2")
        assert (await client.get(f"/trunk/trunks/{tid}")).json()["active_calls"] == 0
