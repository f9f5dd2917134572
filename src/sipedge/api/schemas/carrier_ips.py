"""Carrier IP schemas: `{cidr}` in (normalised to network/prefix), the seed's shape out."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field, field_validator

from sipedge.api.carrier_cidr import normalise_cidr
from sipedge.api.schemas.common import RequestModel, ResponseModel, reject_null


class CarrierIpIn(RequestModel):
    cidr: str = Field(min_length=1, max_length=64, description="IPv4/IPv6 address or CIDR")

    @field_validator("cidr", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return reject_null(value, "cidr")

    @field_validator("cidr")
    @classmethod
    def _normalise(cls, value: str) -> str:
        return normalise_cidr(value)


class CarrierIpOut(ResponseModel):
    id: str
    trunk_id: str
    cidr: str
    created_at: datetime
    updated_at: datetime
    is_deleted: bool
    deleted_at: datetime | None
