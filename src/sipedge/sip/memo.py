"""A bounded memo for parsers of immutable header values.

The same raw texts come back message after message (a call's From and To, ``1 INVITE``, the
agent's Contact), and the parsed values are never mutated, so one parse can serve them all.
The table is cleared when full (no LRU bookkeeping on the hot path) and keeps only short texts,
so hostile traffic costs at most ``max_entries`` x ``max_length`` characters. Errors are not
remembered: a malformed text raises on every call, as without the memo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["clear_memos", "memoized"]

T = TypeVar("T")

_TABLES: list[dict[str, Any]] = []  # every memo's table, for clear_memos


def clear_memos() -> None:
    """Empty every memo table. For measurements that count live objects (a leak check): the
    tables are bounded, but how full they are depends on when one looks (thousands of objects)."""
    for table in _TABLES:
        table.clear()


def memoized(
    parse: Callable[[str], T], *, max_entries: int = 4096, max_length: int = 256
) -> Callable[[str], T]:
    """``parse`` behind a memo keyed by the text (the wrapper has its name and docstring)."""
    table: dict[str, T] = {}
    get = table.get
    _TABLES.append(table)

    def cached(text: str) -> T:
        value = get(text)
        if value is None:
            value = parse(text)
            if len(text) <= max_length:
                if len(table) >= max_entries:
                    table.clear()
                table[text] = value
        return value

    cached.__name__ = parse.__name__.removesuffix("_uncached")
    cached.__doc__ = parse.__doc__
    return cached
