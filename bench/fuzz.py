"""Long fuzz run of the parser, the stream framer and the inbound pipeline, for a fixed time.

    .venv/bin/python -m bench.fuzz --seconds 600 [--target parser|stream|pipeline|all]

Uses the same Hypothesis targets and strategies as the bounded CI tests
(tests/unit/fuzz_targets.py), in rounds of fresh random examples until the time is up, and prints
the number of inputs each target ran. A failure is shrunk by Hypothesis, written to
tests/unit/fuzz_corpus/ (raw SIP bytes under parser/, the SDP of a failing invite under sdp/) so
the corpus replay keeps it as a regression test, and the run exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "unit")]

import fuzz_targets as ft  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROUND = 500  # examples per Hypothesis run; rounds repeat until the deadline


def _save(kind: str, data: bytes) -> Path:
    path = ft.CORPUS / kind / f"crash-{hashlib.sha256(data).hexdigest()[:12]}.bin"
    path.write_bytes(data)
    return path


def _parser_round(counter: list[int]) -> Callable[[], None]:
    @settings(max_examples=ROUND, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(ft.sip_messages() | st.binary(max_size=4096))
    def run(data: bytes) -> None:
        counter[0] += 1
        try:
            ft.check_message(data)
        except BaseException:
            _save("parser", data)
            raise

    return run


def _stream_round(counter: list[int]) -> Callable[[], None]:
    @settings(max_examples=ROUND, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(ft.sip_messages(), st.lists(st.integers(1, 512), min_size=1, max_size=10))
    def run(data: bytes, cuts: list[int]) -> None:
        counter[0] += 1
        try:
            ft.check_stream(data, cuts)
        except BaseException:
            _save("parser", data)
            raise

    return run


def _pipeline_round(counter: list[int]) -> Callable[[], None]:
    @settings(max_examples=ROUND // 5, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(
        st.lists(ft.inbound_invites(), min_size=1, max_size=8),
        st.lists(st.booleans(), min_size=1, max_size=8),
    )
    def run(invites: list[Any], releases: list[bool]) -> None:
        counter[0] += len(invites)
        try:
            ft.check_pipeline(invites, releases)
        except BaseException:
            for invite in invites:
                if invite.sdp:
                    _save("sdp", invite.sdp)
            print("failing invites:", invites, "releases:", releases, file=sys.stderr)
            raise

    return run


TARGETS = {"parser": _parser_round, "stream": _stream_round, "pipeline": _pipeline_round}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="total time (default 60)")
    parser.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    args = parser.parse_args(argv)
    names = list(TARGETS) if args.target == "all" else [args.target]
    share = args.seconds / len(names)
    total = 0
    for name in names:
        counter = [0]
        deadline = time.monotonic() + share
        rounds = 0
        try:
            while time.monotonic() < deadline:
                TARGETS[name](counter)()
                rounds += 1
        except Exception as exc:  # noqa: BLE001 - any crash: report it, fail the run
            print(f"{name}: FAILED after {counter[0]} inputs: {exc!r}", file=sys.stderr)
            return 1
        total += counter[0]
        print(f"{name}: {counter[0]} inputs in {rounds} rounds, 0 failures")
    print(f"total: {total} inputs, 0 failures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
