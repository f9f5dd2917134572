"""Every input a fuzzer ever broke something with, replayed (tests/unit/fuzz_corpus/).

- ``parser/*``: raw SIP bytes for the parser and the stream framer.
- ``sdp/*``: an SDP body, offered on a valid carrier INVITE to the pipeline (from a carrier IP
  to a live number, so it reaches the codec step), with every release pattern.

Add a file for every new crash, named for what it broke.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_targets import CORPUS, check_message, check_pipeline, check_stream

from sipedge.edge.inbound import InboundInvite


def corpus(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).iterdir() if p.is_file())


def test_the_corpus_is_not_empty() -> None:
    assert len(corpus("parser")) >= 3 and len(corpus("sdp")) >= 2


@pytest.mark.parametrize("path", corpus("parser"), ids=lambda p: p.name)
def test_parser_corpus(path: Path) -> None:
    data = path.read_bytes()
    check_message(data)
    check_stream(data, [1, 7, 64])


@pytest.mark.parametrize("path", corpus("sdp"), ids=lambda p: p.name)
def test_sdp_corpus(path: Path) -> None:
    sdp = path.read_bytes()
    invites = [
        InboundInvite("203.0.113.7", "udp", f"c{n}", "+14155550123", sdp=sdp) for n in range(3)
    ] + [InboundInvite("198.51.100.9", "tcp", "c9", "+442079460958", sdp=sdp)]
    for releases in ([False], [True], [True, False]):
        check_pipeline(invites, releases)
