"""Running SIPp from the e2e tests: bounded, killed in a finally, statistics read from -stf."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

SIPP = shutil.which("sipp")


@dataclass
class SippResult:
    returncode: int
    stats: dict[str, str]
    output: str


def read_stat_csv(path: str) -> dict[str, str]:
    """The last row of a SIPp ``-stf`` CSV as {column: value} (columns are ';'-separated)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [line.rstrip("\n") for line in fh if line.strip()]
    if len(lines) < 2:
        return {}
    header = lines[0].split(";")
    last = lines[-1].split(";")
    return dict(zip(header, last, strict=False))


class SippRun:
    """A running sipp; its screen output goes to a file so a full pipe can never stall it."""

    def __init__(self, proc: asyncio.subprocess.Process, stf: str, log_path: str) -> None:
        self.proc = proc
        self.stf = stf
        self.log_path = log_path

    async def wait(self, timeout: float) -> SippResult:
        await asyncio.wait_for(self.proc.wait(), timeout)
        assert self.proc.returncode is not None
        return SippResult(self.proc.returncode, read_stat_csv(self.stf), self.output())

    def output(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as fh:
            return fh.read()[-4000:]


@contextlib.asynccontextmanager
async def sipp(args: Sequence[str], *, workdir: str) -> AsyncIterator[SippRun]:
    """Start ``sipp <args> -trace_stat -stf <csv>``; killed on exit whatever happened."""
    assert SIPP is not None
    stf = os.path.join(workdir, f"sipp-{next(_runs)}.csv")
    log_path = stf.replace(".csv", ".out")
    with open(log_path, "wb") as out:
        proc = await asyncio.create_subprocess_exec(
            SIPP,
            *args,
            "-nostdin",
            "-trace_stat",
            "-stf",
            stf,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            cwd=workdir,
        )
    try:
        yield SippRun(proc, stf, log_path)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


_runs = itertools.count()


async def wait_bound(port: int, kind: str, timeout: float = 5.0) -> None:
    """Wait until something listens on 127.0.0.1:``port`` (read from /proc/net, no probing
    traffic that the peer would count as an unexpected message)."""
    table = "/proc/net/tcp" if kind == "tcp" else "/proc/net/udp"
    needle = f"0100007F:{port:04X}"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        with open(table, encoding="ascii") as fh:
            for line in fh.readlines()[1:]:
                cols = line.split()
                if cols[1] == needle and (kind != "tcp" or cols[3] == "0A"):
                    return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"nothing bound to {kind} port {port}")
