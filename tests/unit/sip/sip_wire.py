"""Raw-byte SIP fixtures for the parser tests.

Fixture files are written as in RFC 4475 §2: LF line ends stand for CRLF, ``<hex>..</hex>`` stands
for the octets it spells, ``<repeat count=N>..</repeat>`` for N copies of its text.
"""

from __future__ import annotations

import re
from pathlib import Path

TORTURE_DIR = Path(__file__).parent / "torture"
_HEX = re.compile(rb"<hex>([0-9A-Fa-f]*)</hex>")
_REPEAT = re.compile(rb"<repeat count=(\d+)>(.*?)</repeat>")


def load_wire(text: bytes) -> bytes:
    data = text.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    data = _REPEAT.sub(lambda m: m.group(2) * int(m.group(1)), data)
    return _HEX.sub(lambda m: bytes.fromhex(m.group(1).decode()), data)


def torture(name: str) -> bytes:
    return load_wire((TORTURE_DIR / f"{name}.sip").read_bytes())
