"""PATCH /trunk/trunks/{id}: the seed's rules 1-5 and body table."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api.conftest import Api
from api.helpers import (
    CREDS,
    MISSING_ID,
    assert_conflict,
    assert_message,
    assert_validation,
    make_trunk,
)
from sipedge.store.conversion import finish_conversion, start_conversion
from sipedge.store.db import make_session_factory
from sipedge.store.ownership import Principal

NON_NULLABLE = (
    "name",
    "is_active",
    "inbound_enabled",
    "outbound_enabled",
    "channels",
    "transport",
    "outbound_leading_plus_enabled",
    "codecs",
)


async def _patch(client: httpx.AsyncClient, trunk_id: str, body: Any) -> httpx.Response:
    return await client.patch(f"/trunk/trunks/{trunk_id}", json=body)


async def test_only_sent_fields_change(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, description="keep me", channels=7, **CREDS)
    response = await _patch(alice, trunk["id"], {"name": "renamed", "outbound_enabled": False})
    assert response.status_code == 200
    after = response.json()
    assert after["name"] == "renamed" and after["outbound_enabled"] is False
    for key in (
        "description",
        "channels",
        "auth_username",
        "codecs",
        "created_at",
        "inbound_enabled",
    ):
        assert after[key] == trunk[key], key
    assert after["updated_at"] > trunk["updated_at"]
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json() == after


async def test_empty_body_changes_nothing(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    after = (await _patch(alice, trunk["id"], {})).json()
    assert {k: v for k, v in after.items() if k != "updated_at"} == {
        k: v for k, v in trunk.items() if k != "updated_at"
    }


async def test_every_field_can_be_set(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    agent = await api.agent("alice")
    body = {
        "name": "n" * 100,
        "description": "d" * 500,
        "preset": "vonage",
        "is_active": False,
        "inbound_enabled": False,
        "outbound_enabled": False,
        "channels": 1,
        "default_inbound_agent_id": agent,
        "transport": "tcp",
        "outbound_leading_plus_enabled": False,
        "codecs": "PCMA,PCMU",
        **CREDS,
    }
    after = (await _patch(alice, trunk["id"], body)).json()
    for key, value in body.items():
        if key != "auth_password":
            assert after[key] == value, key


@pytest.mark.parametrize("field", ["gateways", "ip_acls", "numbers", "id", "health", "user_id"])
async def test_unknown_fields_are_422(alice: httpx.AsyncClient, field: str) -> None:
    trunk = await make_trunk(alice)
    assert_validation(await _patch(alice, trunk["id"], {field: []}), ("body", field))


@pytest.mark.parametrize("field", NON_NULLABLE)
async def test_null_for_non_nullable_is_422(alice: httpx.AsyncClient, field: str) -> None:
    trunk = await make_trunk(alice)
    detail = assert_validation(await _patch(alice, trunk["id"], {field: None}), ("body", field))
    assert detail[0]["msg"] == f"fields cannot be null: {field}"
    assert detail[0]["type"] == "value_error"


async def test_nullable_fields_clear(api: Api, alice: httpx.AsyncClient) -> None:
    agent = await api.agent("alice")
    trunk = await make_trunk(
        alice, description="x", preset="plivo", default_inbound_agent_id=agent, **CREDS
    )
    after = (
        await _patch(
            alice,
            trunk["id"],
            {
                "description": None,
                "preset": None,
                "default_inbound_agent_id": None,
                "auth_username": None,
                "auth_password": None,
            },
        )
    ).json()
    assert after["description"] is None and after["preset"] is None
    assert after["default_inbound_agent_id"] is None and after["auth_username"] is None
    assert (
        await api.scalar("SELECT auth_password FROM trunks WHERE id = :id", id=trunk["id"]) is None
    )


@pytest.mark.parametrize(
    "body",
    [
        {"auth_username": "u"},
        {"auth_password": "p"},
        {"auth_username": None},
        {"auth_password": None},
        {"auth_username": "u", "auth_password": None},
        {"auth_username": None, "auth_password": "p"},
    ],
)
async def test_credentials_both_or_neither(alice: httpx.AsyncClient, body: dict[str, Any]) -> None:
    trunk = await make_trunk(alice, **CREDS)
    assert_validation(await _patch(alice, trunk["id"], body))
    assert (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()[
        "auth_username"
    ] == "carrier-user"


async def test_credentials_both_or_neither_on_create(alice: httpx.AsyncClient) -> None:
    assert_validation(await alice.post("/trunk/trunks", json={"name": "x", "auth_username": "u"}))
    response = await alice.post(
        "/trunk/trunks", json={"name": "x", "auth_username": None, "auth_password": None}
    )
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", ""),
        ("name", "n" * 101),
        ("name", 5),
        ("description", "d" * 501),
        ("preset", "acme"),
        ("preset", "PLIVO"),
        ("is_active", "true"),
        ("is_active", 1),
        ("inbound_enabled", "no"),
        ("channels", 0),
        ("channels", 1001),
        ("channels", "10"),
        ("channels", 10.5),
        ("channels", True),
        ("default_inbound_agent_id", 12),
        ("auth_username", ""),
        ("transport", "tls"),
        ("transport", "UDP"),
        ("outbound_leading_plus_enabled", "yes"),
        ("codecs", ""),
        ("codecs", "G729"),
        ("codecs", "PCMU,PCMU"),
        ("codecs", "PCMU,,PCMA"),
        ("codecs", "PCMU,PCMA,G722"),
        ("codecs", ["PCMU"]),
    ],
)
async def test_bounds_and_types(alice: httpx.AsyncClient, field: str, value: Any) -> None:
    trunk = await make_trunk(alice)
    body = {field: value}
    if field == "auth_username":
        body["auth_password"] = "p"
    assert_validation(await _patch(alice, trunk["id"], body))
    assert_validation(await alice.post("/trunk/trunks", json={"name": "x", **body}))


@pytest.mark.parametrize(
    ("sent", "stored"), [("PCMA", "PCMA"), ("PCMA,PCMU", "PCMA,PCMU"), ("pcmu, pcma", "PCMU,PCMA")]
)
async def test_codecs_keep_order(alice: httpx.AsyncClient, sent: str, stored: str) -> None:
    trunk = await make_trunk(alice)
    assert (await _patch(alice, trunk["id"], {"codecs": sent})).json()["codecs"] == stored


async def test_default_agent_must_be_the_callers(api: Api, alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice)
    bobs_agent = await api.agent("bob")
    org_agent = await api.agent("carol", org="org-1")
    for agent_id in (bobs_agent, org_agent, MISSING_ID, "not-a-uuid"):
        response = await _patch(alice, trunk["id"], {"default_inbound_agent_id": agent_id})
        message = assert_message(response, 400)
        assert "default_inbound_agent_id" in message
        response = await alice.post(
            "/trunk/trunks", json={"name": "x", "default_inbound_agent_id": agent_id}
        )
        assert_message(response, 400)
    deleted = await api.agent("alice")
    await api.execute("UPDATE agents SET is_deleted = true WHERE id = :id", id=deleted)
    assert_message(await _patch(alice, trunk["id"], {"default_inbound_agent_id": deleted}), 400)
    own = await api.agent("alice")
    response = await _patch(alice, trunk["id"], {"default_inbound_agent_id": own.upper()})
    assert response.status_code == 200
    assert response.json()["default_inbound_agent_id"] == own


async def test_patch_404_names_the_id(alice: httpx.AsyncClient) -> None:
    message = assert_message(await _patch(alice, MISSING_ID, {"name": "x"}), 404)
    assert MISSING_ID in message


async def test_clearing_credentials_with_a_shared_gateway_is_409(alice: httpx.AsyncClient) -> None:
    first = await make_trunk(alice, gateways=[{"host": "sip.carrier.example"}], **CREDS)
    second = await make_trunk(alice, gateways=[{"host": "sip.carrier.example"}], **CREDS)
    clear = {"auth_username": None, "auth_password": None}
    for trunk in (first, second):
        assert_conflict(await _patch(alice, trunk["id"], clear), "gateway_conflict")
        still = (await alice.get(f"/trunk/trunks/{trunk['id']}")).json()
        assert still["auth_username"] == CREDS["auth_username"]
    # changing the credentials (not clearing) is fine
    response = await _patch(alice, first["id"], {"auth_username": "u2", "auth_password": "p2"})
    assert response.status_code == 200
    # once the share is gone, clearing works
    gateway_id = second["gateways"][0]["id"]
    await alice.delete(f"/trunk/trunks/{second['id']}/gateways/{gateway_id}")
    assert (await _patch(alice, first["id"], clear)).status_code == 200


async def test_clearing_credentials_without_share_is_fine(alice: httpx.AsyncClient) -> None:
    trunk = await make_trunk(alice, gateways=[{"host": "sip.carrier.example"}], **CREDS)
    await make_trunk(alice, gateways=[{"host": "sip2.carrier.example"}], **CREDS)
    clear = {"auth_username": None, "auth_password": None}
    assert (await _patch(alice, trunk["id"], clear)).status_code == 200


async def _converting_trunk(api: Api) -> str:
    async with make_session_factory(api.engine)() as session:
        view = await start_conversion(
            session, owner=Principal("alice"), legacy_trunk_id="byot-42", name="legacy"
        )
        await session.commit()
    return view.trunk.id


async def test_convert_in_progress_blocks_is_active_changes(
    api: Api, alice: httpx.AsyncClient
) -> None:
    trunk_id = await _converting_trunk(api)
    shown = (await alice.get(f"/trunk/trunks/{trunk_id}")).json()
    assert shown["converted_from_byot_trunk_id"] == "byot-42" and shown["is_active"] is True
    assert_conflict(await _patch(alice, trunk_id, {"is_active": False}), "convert_in_progress")
    assert (await alice.get(f"/trunk/trunks/{trunk_id}")).json()["is_active"] is True
    # not a change of is_active, or other fields: allowed
    assert (await _patch(alice, trunk_id, {"is_active": True, "name": "n"})).status_code == 200
    async with make_session_factory(api.engine)() as session:
        await finish_conversion(session, trunk_id=trunk_id)
        await session.commit()
    response = await _patch(alice, trunk_id, {"is_active": False})
    assert response.status_code == 200 and response.json()["is_active"] is False


async def test_a_legacy_trunk_converts_once(api: Api) -> None:
    from sipedge.store.errors import ConflictError, NotFoundError

    await _converting_trunk(api)
    async with make_session_factory(api.engine)() as session:
        with pytest.raises(ConflictError):
            await start_conversion(
                session, owner=Principal("alice"), legacy_trunk_id="byot-42", name="again"
            )
        with pytest.raises(NotFoundError):
            await finish_conversion(session, trunk_id=MISSING_ID)


async def test_cli_conversion_hooks(api: Api) -> None:
    """`sipedge trunk convert-legacy` calls these through sipedge.store.repositories."""
    from sipedge.store import repositories

    org = await api.client("carol", org="org-1")
    async with make_session_factory(api.engine)() as session:
        trunk = await repositories.start_conversion(
            session, user_id="carol", organization_id="org-1", legacy_trunk_id="byot-7", name="old"
        )
        await session.commit()
    shown = (await org.get(f"/trunk/trunks/{trunk.id}")).json()
    assert shown["converted_from_byot_trunk_id"] == "byot-7"
    assert (shown["organization_id"], shown["user_id"]) == ("org-1", None)
    assert_conflict(await _patch(org, trunk.id, {"is_active": False}), "convert_in_progress")
    async with make_session_factory(api.engine)() as session:
        await repositories.finish_conversion(session, trunk_id=trunk.id)
        await session.commit()
    assert (await _patch(org, trunk.id, {"is_active": False})).status_code == 200


async def test_the_password_is_never_logged(
    api: Api, alice: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    secret = "never-log-this-Pa55"
    caplog.set_level(logging.DEBUG)
    trunk = await make_trunk(alice, auth_username="u", auth_password=secret)
    await _patch(alice, trunk["id"], {"auth_username": "u", "auth_password": secret + "!"})
    await _patch(alice, trunk["id"], {"auth_username": "u", "auth_password": ""})
    await alice.post(
        "/trunk/trunks", json={"name": "", "auth_username": "u", "auth_password": secret}
    )
    assert secret not in caplog.text


async def test_sql_echo_hides_parameters(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from sipedge.store.db import make_engine
    from sipedge.store.trunks import create_trunk

    secret = "echo-never-this-Pa55"
    caplog.set_level(logging.DEBUG)
    engine = make_engine(api.url, echo=True)
    try:
        async with make_session_factory(engine)() as session:
            await create_trunk(
                session,
                owner=Principal("alice"),
                fields={"name": "x", "auth_username": "u", "auth_password": secret},
            )
            await session.rollback()
    finally:
        await engine.dispose()
    assert "INSERT INTO trunks" in caplog.text
    assert secret not in caplog.text
