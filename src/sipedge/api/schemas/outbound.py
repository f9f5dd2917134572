"""`POST /call` in, the outbound call's state out (SPEC §5 Outbound)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from sipedge.api.schemas.common import RequestModel, ResponseModel


class CallIn(RequestModel):
    agent_id: str = Field(min_length=1, max_length=64, description="the caller's sip-trunk agent")
    recipient_phone_number: str = Field(
        min_length=1, max_length=64, description="the number to call, E.164"
    )
    from_phone_number: str | None = Field(
        default=None,
        max_length=64,
        description="a number of the trunk to call from; default: the agent's number",
    )
    user_data: dict[str, Any] | None = Field(
        default=None, description="free-form data kept with the call"
    )


class CallQueued(ResponseModel):
    run_id: str
    status: str
    scheduled_at: datetime | None = None


class OutboundCallOut(ResponseModel):
    """The call's status (queued, scheduled, ringing, in-progress, completed, busy, no-answer,
    failed, canceled) and its record."""

    run_id: str = Field(validation_alias="id")
    status: str
    scheduled_at: datetime | None
    agent_id: str
    trunk_id: str
    number_id: str
    from_number: str = Field(serialization_alias="from")
    to_number: str = Field(serialization_alias="to")
    user_data: dict[str, Any] | None
    created_at: datetime
    started_at: datetime | None
    answered_at: datetime | None
    ended_at: datetime | None
    final_sip_code: int | None
    reason: str | None = Field(
        description="what decided the call's end: answered, busy, no_answer, declined, "
        "carrier_failure, channel limit reached, canceled, ..."
    )
    carrier_call_id: str | None
    agent_call_id: str | None
