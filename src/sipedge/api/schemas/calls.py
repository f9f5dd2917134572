"""The call record shape of `GET /trunk/trunks/{trunk_id}/calls`."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from sipedge.api.schemas.common import ResponseModel


class CallRecordOut(ResponseModel):
    """One call across the trunk: who, when, its final SIP code and the rule that decided it."""

    run_id: str | None
    trunk_id: str
    number_id: str | None
    agent_id: str | None
    direction: str
    from_number: str | None = Field(serialization_alias="from")
    to_number: str | None = Field(serialization_alias="to")
    carrier_call_id: str | None
    agent_call_id: str | None
    started_at: datetime
    answered_at: datetime | None
    ended_at: datetime | None
    final_sip_code: int | None
    decided_by: str | None = Field(
        description='the rule that decided the call: a refusal reason ("channels", "codecs", '
        '...) or how it ended ("answered", "agent_failure", "canceled", ...)'
    )
    hangup_side: str | None
    duration_seconds: float | None


class CallRecordPage(ResponseModel):
    items: list[CallRecordOut]
    total: int
    limit: int
    offset: int
