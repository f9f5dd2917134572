from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from sipedge.config import Settings, load_settings

REPO_CONFIG = Path(__file__).resolve().parents[2] / "config" / "sipedge.toml"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("SIPEDGE_"):
            monkeypatch.delenv(key)


def test_documented_file_matches_the_defaults() -> None:
    documented = tomllib.loads(REPO_CONFIG.read_text())
    defaults = Settings().model_dump()
    assert documented == defaults


def test_file_values_are_read(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[sip]\nport = 5999\n[security]\nunknown_source = "reject"\n')
    settings = load_settings(path)
    assert settings.sip.port == 5999
    assert settings.security.unknown_source == "reject"
    assert settings.http.port == 8080


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[sip]\nport = 5999\n")
    monkeypatch.setenv("SIPEDGE_SIP__PORT", "5070")
    monkeypatch.setenv("SIPEDGE_SECURITY__ALLOW_PRIVATE_GATEWAYS", "true")
    settings = load_settings(path)
    assert settings.sip.port == 5070
    assert settings.security.allow_private_gateways is True


def test_config_file_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "other.toml"
    path.write_text('[database]\nurl = "postgresql://u@h/db"\n')
    monkeypatch.setenv("SIPEDGE_CONFIG", str(path))
    assert load_settings().database.url == "postgresql://u@h/db"


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_settings(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("SIPEDGE_SIP__PORT", "0"),
        ("SIPEDGE_SIP__PORT", "not-a-port"),
        ("SIPEDGE_SECURITY__UNKNOWN_SOURCE", "ignore"),
        ("SIPEDGE_DATABASE__URL", "mysql://x/y"),
    ],
)
def test_invalid_values_fail_at_start(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ValidationError):
        load_settings()


def test_unknown_keys_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[sip]\nprot = 5060\n")
    with pytest.raises(ValidationError):
        load_settings(path)


def test_advertised_address_defaults_to_listen_address() -> None:
    assert Settings().sip_advertised_address == "0.0.0.0"
    assert load_settings(sip={"advertised_address": "203.0.113.1"}).sip_advertised_address == (
        "203.0.113.1"
    )
