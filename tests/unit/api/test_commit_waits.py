"""`Services.commit`: the API waits for the SIP side only for changes to routing data."""

from __future__ import annotations

from typing import Any, cast

import pytest

from sipedge.api.deps import Services
from sipedge.config import Settings
from sipedge.store.changes import ChangeNotifier


class _Session:
    commits = 0

    async def commit(self) -> None:
        self.commits += 1


@pytest.mark.parametrize(
    ("kind", "waits"),
    [
        ("trunk.updated", True),
        ("agent.created", True),
        ("call.queued", False),
        ("call.hangup", False),
    ],
)
async def test_commit_awaits_applied_only_for_routing_changes(kind: str, waits: bool) -> None:
    applied: list[int] = []

    async def apply() -> None:
        applied.append(1)

    seen: list[str] = []
    notifier = ChangeNotifier()
    notifier.subscribe(lambda change: seen.append(change.kind))
    services = Services(
        settings=Settings(),
        engine=cast(Any, None),
        sessions=cast(Any, None),
        resolver=cast(Any, None),
        notifier=notifier,
        active_calls=lambda _trunk: 0,
        applied=apply,
    )
    session = _Session()
    await services.commit(cast(Any, session), kind=kind, trunk_id="t1")
    assert session.commits == 1 and seen == [kind]  # committed and signalled either way
    assert applied == ([1] if waits else [])
