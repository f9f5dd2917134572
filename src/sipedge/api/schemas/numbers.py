"""Trunk number schemas: `{e164, agent_id?}` in, assign `{agent_id}`, the seed's shape out."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field, field_validator

from sipedge.api.phone_numbers import normalise_e164
from sipedge.api.schemas.common import RequestModel, ResponseModel, reject_null
from sipedge.store.numbers import NumberSpec


class NumberIn(RequestModel):
    e164: str = Field(min_length=1, max_length=64, description="E.164, e.g. +14155550123")
    agent_id: str | None = Field(
        default=None, description="the caller's agent; null: the trunk's default agent answers"
    )

    @field_validator("e164", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return reject_null(value, "e164")

    @field_validator("e164")
    @classmethod
    def _normalise(cls, value: str) -> str:
        e164, _digits = normalise_e164(value)
        return e164

    def spec(self) -> NumberSpec:
        return NumberSpec(e164=self.e164, destination_key=self.e164[1:], agent_id=self.agent_id)


class NumberAssign(RequestModel):
    agent_id: str | None = Field(description="the caller's agent, or null for the trunk default")


class NumberOut(ResponseModel):
    id: str
    trunk_id: str
    e164: str
    destination_key: str
    agent_id: str | None
    last_inbound_at: datetime | None
    last_outbound_at: datetime | None
    created_at: datetime
    updated_at: datetime
    is_deleted: bool
    deleted_at: datetime | None
