"""Machine instructions per inbound call: ``bench.call_path`` counted by valgrind's callgrind.

The call path's CPU time moves by ±15 % and more on a shared virtual machine (two runs of the
same code on one morning: 1,118 and 1,842 µs per call); an instruction count does not: it is
the same for the same code and inputs whatever else the machine runs. So this is the gauge to
decide whether a hot-path change helps, before the ramp confirms it in calls/s.

It runs ``bench.call_path`` twice under ``valgrind --tool=callgrind`` (``--few`` and ``--many``
calls, one round each, ``serve``'s collector thresholds) and reports the difference per call,
so start-up (imports, the edge's set-up, the warm-up) cancels out; then the C functions that
took the most of it (``callgrind_annotate``): how much is CPython's bytecode loop itself and how
much the object, dict and string work under it. About 4 minutes (valgrind runs the two
processes side by side, ~50x slower than native).

    .venv/bin/python -m bench.call_instructions
    .venv/bin/python -m bench.call_instructions --src /tmp/other-checkout/src   # compare a tree

Needs valgrind (Debian package ``valgrind``); exit code 2 without it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GC_THRESHOLDS = "2000,100,10"  # runtime.serve.GC_THRESHOLDS
_COST = re.compile(r"\s*([\d,]+) \([\s\d.]+%\)\s+(.*)")


def _callgrind(calls: int, src: Path, out: Path) -> subprocess.Popen[bytes]:
    # A fixed hash seed: string hashing decides dict probe sequences, one source of run-to-run
    # variation in the count.
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO}", "PYTHONHASHSEED": "0"}
    return subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "bench.call_path",
            "--calls",
            str(calls),
            "--rounds",
            "1",
            "--gc-threshold",
            GC_THRESHOLDS,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _costs(out: Path) -> tuple[int, dict[str, int]]:
    """Program total and self cost per C function (file:function, library path dropped)."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total, by_function = 0, {}
    for line in text.splitlines():
        match = _COST.match(line)
        if match is None:
            continue
        cost, where = int(match.group(1).replace(",", "")), match.group(2)
        if "PROGRAM TOTALS" in where:
            total = cost
            continue
        where = re.sub(r"\s*\[.*\]$", "", where)
        where = re.sub(r"^.*/Python-[\d.]+/", "", where)  # the interpreter's build directory
        by_function[where] = by_function.get(where, 0) + cost
    return total, by_function


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--few", type=int, default=100, help="calls in the first run")
    parser.add_argument("--many", type=int, default=400, help="calls in the second run")
    parser.add_argument("--top", type=int, default=20, help="C functions to list")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the sipedge tree to run")
    args = parser.parse_args(argv)
    if args.many <= args.few:
        parser.error("--many must be more than --few")
    missing = [tool for tool in ("valgrind", "callgrind_annotate") if shutil.which(tool) is None]
    if missing:
        print(f"missing {', '.join(missing)} (Debian package valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sipedge-callgrind-") as work:
        few_out, many_out = Path(work) / "few.out", Path(work) / "many.out"
        runs = [_callgrind(args.few, args.src, few_out), _callgrind(args.many, args.src, many_out)]
        if any(run.wait() != 0 for run in runs):
            print("bench.call_path failed under valgrind", file=sys.stderr)
            return 1
        few_total, few = _costs(few_out)
        many_total, many = _costs(many_out)
    calls = args.many - args.few
    per_call = (many_total - few_total) / calls
    print(f"{per_call:,.0f} instructions per call ({args.src}; {args.many} - {args.few} calls)")
    deltas = {name: (many.get(name, 0) - few.get(name, 0)) / calls for name in {*few, *many}}
    for name, cost in sorted(deltas.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {cost:10,.0f}  {100 * cost / per_call:5.1f} %  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
