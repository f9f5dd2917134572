"""What a call status webhook carries, how it is signed, and when a failed one is retried.

Pure functions (no clock, no randomness, no I/O): the sender passes `now` and the jitter.

**Payload** (the execution payload of issue 6), compact JSON, UTF-8::

    {"id": run_id, "agent_id", "status", "created_at", "updated_at",
     "telephony_data": {"direction", "from_number", "to_number", "trunk_id", "number_id",
                        "provider": "sip-trunk", "sip_call_id", "hangup_by", "hangup_reason",
                        "sip_status", "duration_s"},
     "user_data"}

Times are ISO 8601 in UTC with a `Z`, like the API's.

**Signature.** Each request carries

- `X-Sipedge-Event-Id`: the outbox row id, the same on every retry (receivers de-duplicate on it);
- `X-Sipedge-Timestamp`: Unix seconds when this attempt was sent;
- `X-Sipedge-Signature`: `sha256=` + lowercase hex HMAC-SHA256, keyed with the account's secret
  (UTF-8), of the bytes `f"{timestamp}.".encode() + body`, where `body` is the raw request body.

A receiver recomputes the HMAC over the timestamp header, a dot and the raw body, compares in
constant time, and refuses timestamps far from its clock (replays).

**Backoff.** After the n-th failed attempt the next one waits `min(max, base * 2**(n-1))` seconds
scaled by `0.5 + 0.5 * jitter` (`jitter` uniform in [0, 1]): half to all of the exponential step.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from sipedge.runtime.ports import CallStatusEvent
from sipedge.store.webhook_events import PROVIDER, encode_body, status_payload

__all__ = [
    "EVENT_ID_HEADER",
    "PROVIDER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "backoff_delay",
    "encode_body",
    "payload_of",
    "sign",
    "signed_headers",
]

SIGNATURE_HEADER = "X-Sipedge-Signature"
TIMESTAMP_HEADER = "X-Sipedge-Timestamp"
EVENT_ID_HEADER = "X-Sipedge-Event-Id"


def payload_of(event: CallStatusEvent) -> dict[str, Any]:
    """The JSON object a webhook receives for `event` (`store.webhook_events.status_payload`)."""
    return status_payload(
        run_id=event.run_id,
        agent_id=event.agent_id,
        status=event.status,
        created_at=event.created_at,
        updated_at=event.updated_at,
        direction=event.direction,
        from_number=event.from_number,
        to_number=event.to_number,
        trunk_id=event.trunk_id,
        number_id=event.number_id,
        sip_call_id=event.sip_call_id,
        hangup_by=event.hangup_by,
        hangup_reason=event.hangup_reason,
        sip_status=event.sip_status,
        duration_s=event.duration_s,
        user_data=event.user_data,
    )


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """`sha256=<hex HMAC-SHA256(secret, f"{timestamp}." + body)>`."""
    message = f"{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signed_headers(*, secret: str, timestamp: int, body: bytes, event_id: str) -> dict[str, str]:
    """The headers of one delivery attempt."""
    return {
        "Content-Type": "application/json",
        EVENT_ID_HEADER: event_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }


def backoff_delay(failures: int, *, base: float, cap: float, jitter: float) -> float:
    """Seconds to wait after the `failures`-th failed attempt (1, 2, ...)."""
    if failures < 1:
        raise ValueError("failures counts from 1")
    step = min(cap, base * 2.0 ** min(failures - 1, 60))
    return step * (0.5 + 0.5 * min(max(jitter, 0.0), 1.0))
