"""The pooled random tokens: right shape, never repeated, across buffer refills."""

import uuid

from sipedge.sip import randomness


def test_tokens_have_the_asked_length_and_never_repeat_across_refills() -> None:
    seen = {randomness.token_hex(6) for _ in range(3000)}  # 18 KB: several 4 KiB refills
    assert len(seen) == 3000
    assert all(len(t) == 12 and int(t, 16) >= 0 for t in seen)
    assert len(randomness.token_hex(5000)) == 10000  # larger than one chunk


def test_uuid4_is_a_version_4_rfc_uuid() -> None:
    ids = [randomness.uuid4() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in ids)
