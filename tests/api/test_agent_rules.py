"""The pure pieces behind the agent API: the model table, webhook URLs, stored-config rules,
and the migration of agents made before the agent API."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from sipedge.api import agent_models
from sipedge.api.agent_validation import field_path
from sipedge.api.webhook_urls import WebhookUrlError, validate_webhook_url
from sipedge.store.agent_config import (
    AgentChanges,
    keep_stored_secret,
    masked_source,
    with_audio_format,
)
from sipedge.store.db import make_engine
from sipedge.store.migrate import upgrade


@pytest.mark.parametrize(
    ("model", "accepted"),
    [
        ("gpt-5", ("minimal", "low", "medium", "high")),
        ("gpt-5-mini-2025-08-07", ("minimal", "low", "medium", "high")),
        ("openai/GPT-5-nano", ("minimal", "low", "medium", "high")),
        ("gpt-5.1", ("none", "low", "medium", "high")),
        ("gpt-5-pro", ("high",)),
        ("o3-mini", ("low", "medium", "high")),
        ("o1-mini", ()),
        ("gpt-4o-mini", ()),
        ("gpt-4.1", ()),
        ("llama-3.3-70b", None),
        ("", None),
    ],
)
def test_reasoning_effort_table(model: str, accepted: tuple[str, ...] | None) -> None:
    assert agent_models.accepted_efforts(model) == accepted


@pytest.mark.parametrize(
    ("model", "default", "fixed"),
    [("gpt-5", 1.0, 1.0), ("azure/gpt-5-mini", 1.0, 1.0), ("gpt-4o", 0.1, None), (None, 0.1, None)],
)
def test_temperature_rules(model: str | None, default: float, fixed: float | None) -> None:
    assert agent_models.default_temperature(model) == default
    assert agent_models.fixed_temperature(model) == fixed
    assert agent_models.temperature_allowed(model, 1) is True
    assert agent_models.temperature_allowed(model, 0.5) is (fixed is None)


@pytest.mark.parametrize(
    ("url", "allow_private", "ok"),
    [
        ("https://hooks.example.com/x", False, True),
        ("http://hooks.example.com:8080", False, True),
        ("https://user:pw@hooks.example.com/", False, True),
        ("https://1.1.1.1/", False, True),
        ("http://127.0.0.1/", False, False),
        ("http://127.0.0.1/", True, True),
        ("http://[::1]:8000/", True, True),
        ("http://[::1]:8000/", False, False),
        ("http://[fe80::1%25eth0]/", True, False),
        ("http://100.64.0.1/", False, False),  # shared address space (CGNAT)
        ("http://224.0.0.1/", False, False),
        ("http://my-receiver/", True, True),
        ("http://0x7f000001/", True, False),
        ("http://017700000001/", True, False),
        ("https://hooks.example.com:0/", False, False),
        ("https://hooks.example.com:65536/", False, False),
        ("javascript:alert(1)", True, False),
        ("https:///path", True, False),
        ("", True, False),
    ],
)
def test_webhook_urls(url: str, allow_private: bool, ok: bool) -> None:
    if ok:
        assert validate_webhook_url(url, allow_private=allow_private) == url
    else:
        with pytest.raises(WebhookUrlError):
            validate_webhook_url(url, allow_private=allow_private)


def test_field_paths_show_only_our_names() -> None:
    assert field_path(("agent_config", "tasks", 0, "task_config", "voicemail")) == (
        "tasks[0].task_config.voicemail"
    )
    assert field_path(("agent_prompts", "task_2", "system_prompt")) == (
        "agent_prompts.task_2.system_prompt"
    )
    assert field_path(("agent_prompts", "<script>", "system_prompt")) == (
        "agent_prompts.*.system_prompt"
    )
    assert field_path(("agent_config",)) == "agent_config"
    assert field_path(()) == "body"


def test_secret_mask_round_trip() -> None:
    stored = {"source_type": "api", "source_auth_token": "t0k"}
    shown = masked_source(stored)
    assert shown == {"source_type": "api", "source_auth_token": "********"}
    assert keep_stored_secret(shown, stored) == stored
    assert keep_stored_secret(shown, None) == {"source_type": "api"}
    assert keep_stored_secret({"source_type": "csv", "source_auth_token": "new"}, stored) == {
        "source_type": "csv",
        "source_auth_token": "new",
    }
    assert masked_source({"source_type": "csv"}) == {"source_type": "csv"}
    assert masked_source(None) is None


def test_audio_format_rewrite_copies() -> None:
    tasks = [{"tools_config": None}, {}, {"tools_config": {"input": "odd"}}]
    result = with_audio_format(tasks, "sip-trunk")
    for task in result:
        assert task["tools_config"]["input"] == {"format": "ulaw"}
        assert task["tools_config"]["output"] == {"format": "ulaw"}
    assert tasks == [{"tools_config": None}, {}, {"tools_config": {"input": "odd"}}]
    assert with_audio_format(tasks, "default") == tasks


def test_changes_take_only_patchable_attributes() -> None:
    with pytest.raises(ValueError):
        AgentChanges({"tasks": []})
    assert AgentChanges({"agent_name": "x"}).values == {"agent_name": "x"}


def test_migration_fills_existing_agents(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0001")

    async def run() -> tuple[object, ...]:
        engine = make_engine(url)
        try:
            async with engine.begin() as connection:
                await connection.execute(
                    text(
                        "INSERT INTO agents (id, agent_name, created_at, updated_at, is_deleted,"
                        " user_id) VALUES ('a1', 'old', '2026-01-01', '2026-01-01', 0, 'u')"
                    )
                )
            await asyncio.to_thread(upgrade, url)
            async with engine.connect() as connection:
                row = await connection.execute(
                    text(
                        "SELECT agent_type, agent_welcome_message, agent_status, config_version,"
                        " call_summary_enabled, tasks, agent_prompts, webhook_url FROM agents"
                    )
                )
                return tuple(row.one())
        finally:
            await engine.dispose()

    assert asyncio.run(run()) == ("other", "", "seeding", 1, 0, "[]", "{}", None)
