"""Run every benchmark module listed in BENCHMARKS (add yours to the tuple)."""

from __future__ import annotations

import importlib

BENCHMARKS = ("bench.bench_parser",)


def main() -> None:
    for name in BENCHMARKS:
        print(f"== {name}")
        importlib.import_module(name).main()


if __name__ == "__main__":
    main()
