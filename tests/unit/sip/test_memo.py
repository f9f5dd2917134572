"""The parsers' bounded memo: one parse per text, cleared when full, long texts not kept,
errors not remembered, and every table emptied by clear_memos (for leak checks)."""

from __future__ import annotations

import pytest

from sipedge.sip.memo import clear_memos, memoized


def counting() -> tuple[list[str], object]:
    calls: list[str] = []

    def parse_uncached(text: str) -> tuple[str, ...]:
        calls.append(text)
        if text == "bad":
            raise ValueError(text)
        return tuple(text)

    return calls, parse_uncached


def test_one_parse_per_text_and_a_shared_value() -> None:
    calls, parse = counting()
    cached = memoized(parse, max_entries=4)  # type: ignore[arg-type]
    assert cached("ab") is cached("ab")
    assert calls == ["ab"]
    assert cached.__name__ == "parse"


def test_full_table_is_cleared_and_long_texts_are_not_kept() -> None:
    calls, parse = counting()
    cached = memoized(parse, max_entries=2, max_length=3)  # type: ignore[arg-type]
    for text in ("a", "b", "c", "a"):
        cached(text)
    assert calls == ["a", "b", "c", "a"]  # "c" cleared the table of a and b
    cached("long")
    cached("long")
    assert calls[-2:] == ["long", "long"]


def test_errors_are_not_remembered() -> None:
    calls, parse = counting()
    cached = memoized(parse)  # type: ignore[arg-type]
    for _ in range(2):
        with pytest.raises(ValueError):
            cached("bad")
    assert calls == ["bad", "bad"]


def test_clear_memos_empties_every_table() -> None:
    calls, parse = counting()
    cached = memoized(parse)  # type: ignore[arg-type]
    cached("x")
    clear_memos()
    cached("x")
    assert calls == ["x", "x"]
