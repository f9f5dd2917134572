"""The `sipedge` command end to end on a real SQLite file: migrations, tokens, conversion."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from sipedge.cli import main
from sipedge.store import tokens
from sipedge.store.db import make_engine, make_session_factory

TOKEN = re.compile(r"^sk_[A-Za-z0-9_-]{20,}$")


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("SIPEDGE_DATABASE__URL", url)
    assert main(["db", "upgrade"]) == 0
    return url


def _authenticates(url: str, token: str) -> bool:
    async def run() -> bool:
        engine = make_engine(url)
        try:
            async with make_session_factory(engine)() as session:
                return await tokens.authenticate(session, token) is not None
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_token_create_prints_a_working_token_once(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["token", "create", "--user", "alice", "--org", "acme"]) == 0
    token = capsys.readouterr().out.strip()
    assert TOKEN.match(token)
    assert _authenticates(database, token)
    assert token.encode() not in Path(database.removeprefix("sqlite:///")).read_bytes()


def test_token_revoke(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["token", "create", "--user", "bob"])
    token = capsys.readouterr().out.strip()
    assert main(["token", "revoke", token]) == 0
    assert not _authenticates(database, token)
    assert main(["token", "revoke", token]) == 1
    assert "no such active token" in capsys.readouterr().err


def test_convert_legacy_then_finish(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    args = ["trunk", "convert-legacy", "--legacy-id", "byot-7", "--name", "Old", "--user", "u1"]
    assert main(args) == 0
    trunk_id = capsys.readouterr().out.strip()
    assert re.fullmatch(r"[0-9a-f-]{36}", trunk_id)
    # The same legacy trunk cannot be converted twice: a clear message, no traceback.
    assert main(args) == 1
    assert "already converted" in capsys.readouterr().err
    assert main(["trunk", "finish-conversion", trunk_id]) == 0


def test_bad_configuration_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIPEDGE_SIP__PORT", "99999")
    assert main(["db", "upgrade"]) == 2


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "serve" in capsys.readouterr().out
