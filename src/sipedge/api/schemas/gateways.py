"""Gateway schemas: `{host, port=5060, priority=0}` in, the seed's Gateway shape out."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field, ValidationInfo, field_validator

from sipedge.api.gateway_resolver import validate_gateway_host
from sipedge.api.schemas.common import RequestModel, ResponseModel, reject_null


class GatewayIn(RequestModel):
    host: str = Field(min_length=1, max_length=253, description="FQDN or IPv4 literal")
    port: int = Field(default=5060, ge=1, le=65535)
    priority: int = Field(default=0, ge=0, le=65535, description="lower is tried first")

    @field_validator("host", "port", "priority", mode="before")
    @classmethod
    def _not_null(cls, value: object, info: ValidationInfo) -> object:
        return reject_null(value, info.field_name or "field")

    @field_validator("host")
    @classmethod
    def _canonical_host(cls, value: str) -> str:
        return validate_gateway_host(value)


class GatewayOut(ResponseModel):
    id: str
    trunk_id: str
    host: str
    resolved_ips: list[str] | None
    port: int
    priority: int
    created_at: datetime
    updated_at: datetime
    is_deleted: bool
    deleted_at: datetime | None
