"""Micro-benchmarks. Run all: ``python -m bench``; one: ``python -m bench.bench_parser``."""
