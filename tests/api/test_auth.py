"""Bearer auth on every endpoint: 401 `{message}` with `WWW-Authenticate: Bearer`."""

from __future__ import annotations

import httpx
import pytest

from api.conftest import Api
from api.helpers import MISSING_ID, assert_message, make_trunk
from sipedge.store.db import make_session_factory
from sipedge.store.tokens import (
    any_tokens,
    authenticate,
    create_token,
    hash_token,
    revoke_token,
)

T = f"/trunk/trunks/{MISSING_ID}"
ENDPOINTS = [
    ("POST", "/trunk/trunks"),
    ("GET", "/trunk/trunks"),
    ("GET", T),
    ("PATCH", T),
    ("DELETE", T),
    ("POST", f"{T}/gateways"),
    ("DELETE", f"{T}/gateways/{MISSING_ID}"),
    ("POST", f"{T}/ip-acls"),
    ("DELETE", f"{T}/ip-acls/{MISSING_ID}"),
    ("POST", f"{T}/numbers"),
    ("PATCH", f"{T}/numbers/{MISSING_ID}"),
    ("DELETE", f"{T}/numbers/{MISSING_ID}"),
]


def _assert_401(response: httpx.Response) -> None:
    assert_message(response, 401)
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
async def test_every_endpoint_needs_a_token(api: Api, method: str, path: str) -> None:
    token = await api.token("alice")
    revoked = await api.token("alice")
    async with make_session_factory(api.engine)() as session:
        assert await revoke_token(session, revoked)
        await session.commit()
    # the body is invalid on purpose: auth is checked before validation
    for headers in (
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer sk_not-a-token"},
        {"Authorization": f"Basic {token}"},
        {"Authorization": token},
        {"Authorization": f"Bearer {revoked}"},
        {"Authorization": "Bearer " + "x" * 5000},
    ):
        client = api.raw_client(headers)
        _assert_401(await client.request(method, path, json={"bogus": True}))


async def test_a_valid_token_works_and_revoking_stops_it(api: Api) -> None:
    token = await api.token("alice")
    client = api.raw_client({"Authorization": f"Bearer {token}"})
    await make_trunk(client)
    lower = api.raw_client({"Authorization": f"bearer {token}"})
    assert (await lower.get("/trunk/trunks")).status_code == 200
    async with make_session_factory(api.engine)() as session:
        assert await revoke_token(session, token)
        assert not await revoke_token(session, token)
        await session.commit()
    _assert_401(await client.get("/trunk/trunks"))


async def test_tokens_are_stored_hashed(api: Api) -> None:
    async with make_session_factory(api.engine)() as session:
        token = await create_token(session, user_id="u", organization_id="o", sub_account_id="s")
        await session.commit()
        principal = await authenticate(session, token)
    assert token.startswith("sk_") and len(token) > 40
    assert principal is not None
    assert (principal.user_id, principal.organization_id, principal.sub_account_id) == (
        "u",
        "o",
        "s",
    )
    stored = await api.scalar("SELECT token_hash FROM api_tokens")
    assert stored == hash_token(token) and token not in stored
    assert await api.scalar("SELECT count(*) FROM api_tokens WHERE token_hash = :t", t=token) == 0


async def test_a_sub_account_needs_an_organisation(api: Api) -> None:
    async with make_session_factory(api.engine)() as session:
        with pytest.raises(ValueError):
            await create_token(session, user_id="u", sub_account_id="s")


async def test_any_tokens(api: Api) -> None:
    async with make_session_factory(api.engine)() as session:
        assert not await any_tokens(session)
        token = await create_token(session, user_id="u")
        assert await any_tokens(session)
        await revoke_token(session, token)
        assert not await any_tokens(session)
