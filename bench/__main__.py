"""Run every benchmark module listed in BENCHMARKS (add yours to the tuple).

Each module pins itself: the parser bench to core 0, the inbound and outbound ramps their processes
(the system under test on core 0, SIPp/tcpdump/py-spy on core 1, themselves on core 1).
"""

from __future__ import annotations

import importlib
import os
import sys

BENCHMARKS = ("bench.bench_parser", "bench.api_path", "bench.inbound_ramp", "bench.outbound_ramp")
PINS_ITSELF = ("bench.inbound_ramp", "bench.outbound_ramp")  # main(argv) -> exit code


def main() -> int:
    failed = 0
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        module = importlib.import_module(name)
        if name in PINS_ITSELF:
            failed |= bool(module.main([]))  # pins its own processes
            continue
        cores = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {0})  # the in-process micro-benchmarks run on core 0
        try:
            module.main()
        finally:
            os.sched_setaffinity(0, cores)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
