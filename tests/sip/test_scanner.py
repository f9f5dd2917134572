"""Scanner invisibility (issue 8 item 3): sipvicious, pointed only at loopback, finds nothing on
the edge from a source outside every carrier range when ``security.unknown_source = "drop"``.

Each negative run has a positive twin with the same tool and arguments that must find the edge
(``reject`` mode, or the trunk's own 127.0.0.1 source), so the assertions can fail. Results are
read from the tools' output, never their exit code (30 means both "found nothing" and
"unreachable"). Per /work/shared/TESTING.md: never ``-A`` or ``-R``, always ``-x``.

sipvicious 0.3.8's ``sipvicious_svwar`` parses ``-b`` but never passes it on to its scanner
(the socket binds to every address and loopback traffic leaves from 127.0.0.1, a carrier). The
svwar runs therefore go through ``svwar.main()`` — the console script's own entry point, same
argument parsing and output — with only the missing binding address supplied.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest
from harness import HOST, free_port
from inbound_env import running_edge

SVMAP = shutil.which("sipvicious_svmap", path=str(Path(sys.executable).parent)) or shutil.which(
    "sipvicious_svmap"
)
try:
    import sipvicious.svwar  # noqa: F401

    HAVE_SVWAR = True
except ImportError:
    HAVE_SVWAR = False

OUTSIDER = "127.0.0.2"  # in 127.0.0.0/8 (reaches lo), in no carrier range
SCAN_TIMEOUT = 15.0
# Unknown numbers -> 404 (svwar's "bad user"); +14155550101 has no agent -> 480: found.
EXTENSIONS = ["-m", "INVITE", "-e", "14155550098-14155550102", "--maximumtime", "3"]

# svwar.main() with the binding address its console script forgets to pass (see above).
_SVWAR_BOUND = (
    "import functools, sys\n"
    "from sipvicious import svwar\n"
    "svwar.TakeASip = functools.partial(svwar.TakeASip, bindingip=sys.argv[1])\n"
    "sys.argv = ['sipvicious_svwar', *sys.argv[2:]]\n"
    "svwar.main()\n"
)

pytestmark = pytest.mark.skipif(
    SVMAP is None or not HAVE_SVWAR,
    reason="sipvicious not installed (pip install sipvicious==0.3.8)",
)


async def _run(argv: list[str], home: Path) -> str:
    """Run a scanner bounded by SCAN_TIMEOUT; its combined output. HOME is the test's tmp dir
    (sipvicious keeps sessions under ~/.sipvicious)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "HOME": str(home)},
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), SCAN_TIMEOUT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return out.decode(errors="replace")


async def svmap(port: int, source: str, home: Path) -> str:
    assert SVMAP is not None
    argv = [SVMAP, HOST, "-p", str(port), "-b", source, "-x", source, "-P", str(free_port())]
    return await _run(argv, home)


async def svwar(port: int, source: str, home: Path, *extra: str) -> str:
    target = f"udp://{HOST}:{port}"
    args = [target, "-b", source, "-x", source, "-P", str(free_port()), *extra]
    return await _run([sys.executable, "-c", _SVWAR_BOUND, source, *args], home)


def found_devices(output: str) -> list[str]:
    """The ``ip:port`` rows of svmap's result table."""
    return [
        line.split("|")[1].strip()
        for line in output.splitlines()
        if line.startswith("|") and line.split("|")[1].strip().startswith(HOST)
    ]


async def test_svmap_finds_nothing_in_drop_mode_and_finds_reject_mode(tmp_path: Path) -> None:
    async with running_edge(str(tmp_path), unknown_source="drop") as env:
        hidden = await svmap(env.port, OUTSIDER, tmp_path)
        # The same scan from the trunk's carrier address does find it (the scanner works).
        from_carrier = await svmap(env.port, HOST, tmp_path)
        port = env.port
    assert "found nothing" in hidden, hidden
    assert found_devices(hidden) == [], hidden
    assert found_devices(from_carrier) == [f"{HOST}:{port}"], from_carrier

    async with running_edge(str(tmp_path), unknown_source="reject") as env:
        visible = await svmap(env.port, OUTSIDER, tmp_path)
        port = env.port
    assert found_devices(visible) == [f"{HOST}:{port}"], visible
    assert "found nothing" not in visible


async def test_svwar_enumerates_nothing_in_drop_mode(tmp_path: Path) -> None:
    async with running_edge(str(tmp_path), unknown_source="drop") as env:
        hidden = await svwar(env.port, OUTSIDER, tmp_path, *EXTENSIONS)
        from_carrier = await svwar(env.port, HOST, tmp_path, *EXTENSIONS)
    # Not even the initial probe is answered: no device, no extension.
    assert "found nothing" in hidden, hidden
    assert "Ok SIP device found" not in hidden
    assert "extension '" not in hidden
    # From the carrier the same enumeration tells numbers apart (404 vs 480): it found one.
    assert "extension '14155550101'" in from_carrier, from_carrier

    async with running_edge(str(tmp_path), unknown_source="reject") as env:
        refused = await svwar(env.port, OUTSIDER, tmp_path, *EXTENSIONS)
    # reject answers 403 to everything (svwar reads it as a password challenge): it sees a
    # server, though still no number.
    assert "SIP server replied" in refused, refused
    assert "extension '" not in refused, refused
