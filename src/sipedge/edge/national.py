"""National forms of a stored number, computed when a snapshot is built (never per INVITE).

This is the edge's only use of ``phonenumbers``: one small pure function, called off the hot path by
``build_snapshot``. A carrier that delivers a national-format number (``02079460958`` or
``2079460958`` for ``+44 20 7946 0958``) is matched by these keys.
"""

from __future__ import annotations

import phonenumbers

__all__ = ["national_forms"]


def national_forms(destination_key: str) -> tuple[str, ...]:
    """The national significant number and, if the country has one, the same number with its
    national (trunk) prefix: ``"442079460958"`` → ``("2079460958", "02079460958")``.

    Forms equal to ``destination_key`` itself are left out (the exact index already holds them).
    A key that is not a valid international number gives ``()``.
    """
    if not destination_key.isascii() or not destination_key.isdigit():
        return ()
    try:
        parsed = phonenumbers.parse("+" + destination_key, None)
    except phonenumbers.NumberParseException:
        return ()
    nsn = phonenumbers.national_significant_number(parsed)
    if not nsn or parsed.country_code is None:
        return ()
    region = phonenumbers.region_code_for_number(parsed)
    metadata = phonenumbers.PhoneMetadata.metadata_for_region_or_calling_code(
        parsed.country_code, region or phonenumbers.UNKNOWN_REGION
    )
    prefix = metadata.national_prefix if metadata is not None else None
    forms = [nsn]
    if prefix and prefix.isdigit():
        forms.append(prefix + nsn)
    return tuple(dict.fromkeys(f for f in forms if f != destination_key))
