"""`sipedge webhook secret`: prints the account's signing secret, the same one every time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sipedge.cli import main

SECRET = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("SIPEDGE_DATABASE__URL", url)
    assert main(["db", "upgrade"]) == 0
    return url


def _secret(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(["webhook", "secret", *args]) == 0
    return capsys.readouterr().out.strip()


def test_secret_is_created_once_per_account(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = _secret(capsys, "--user", "alice")
    assert SECRET.match(alice)
    assert _secret(capsys, "--user", "alice") == alice
    # Inside an organisation the account is the organisation, whoever asks.
    acme = _secret(capsys, "--user", "alice", "--org", "acme")
    assert acme != alice
    assert _secret(capsys, "--user", "bob", "--org", "acme") == acme
    assert _secret(capsys, "--user", "bob") not in {alice, acme}


def test_user_is_required(database: str) -> None:
    with pytest.raises(SystemExit):
        main(["webhook", "secret"])
