"""Trunk schemas: create and PATCH bodies (seed body table and rules 1-3), the Trunk shape."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from sipedge.api.schemas.carrier_ips import CarrierIpIn, CarrierIpOut
from sipedge.api.schemas.common import RequestModel, ResponseModel, reject_null
from sipedge.api.schemas.gateways import GatewayIn, GatewayOut
from sipedge.api.schemas.numbers import NumberIn, NumberOut
from sipedge.store.views import TrunkView

Preset = Literal["plivo", "telnyx", "twilio", "exotel", "vobiz", "vonage", "custom"]
Transport = Literal["udp", "tcp"]
Health = Literal["ready", "waiting_for_carrier", "degraded", "disabled"]
CODECS = ("PCMU", "PCMA")
MAX_CHILDREN = 100

NON_NULLABLE = (
    "name",
    "is_active",
    "inbound_enabled",
    "outbound_enabled",
    "channels",
    "transport",
    "outbound_leading_plus_enabled",
    "codecs",
)
SCALAR_FIELDS = (
    *NON_NULLABLE,
    "description",
    "preset",
    "default_inbound_agent_id",
    "auth_username",
    "auth_password",
)


def normalise_codecs(value: str) -> str:
    items = [item.strip().upper() for item in value.split(",")]
    if any(item not in CODECS for item in items) or len(set(items)) != len(items):
        raise ValueError(
            "codecs must be a non-empty comma-separated subset of PCMU and PCMA, without repeats"
        )
    return ",".join(items)


class _TrunkRules(RequestModel):
    """Validators shared by create and PATCH."""

    @field_validator(*NON_NULLABLE, mode="before", check_fields=False)
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        return reject_null(value, info.field_name or "field")

    @field_validator("codecs", check_fields=False)
    @classmethod
    def _codecs(cls, value: str | None) -> str | None:
        return None if value is None else normalise_codecs(value)

    @model_validator(mode="after")
    def _credentials_together(self) -> Self:
        sent = {"auth_username", "auth_password"} & self.model_fields_set
        username = getattr(self, "auth_username", None)
        password = getattr(self, "auth_password", None)
        if len(sent) == 1 or (len(sent) == 2 and (username is None) != (password is None)):
            raise PydanticCustomError(
                "value_error",
                "auth_username and auth_password must be sent together: both set or both null",
            )
        return self

    def scalar_fields(self, *, only_sent: bool) -> dict[str, Any]:
        return self.model_dump(include=set(SCALAR_FIELDS), exclude_unset=only_sent)


class TrunkPatch(_TrunkRules):
    """PATCH body: every field optional; only the sent fields change."""

    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=500)
    preset: Preset | None = None
    is_active: bool | None = None
    inbound_enabled: bool | None = None
    outbound_enabled: bool | None = None
    channels: int | None = Field(default=None, ge=1, le=1000)
    default_inbound_agent_id: str | None = None
    auth_username: str | None = Field(default=None, min_length=1, max_length=255)
    auth_password: str | None = Field(default=None, min_length=1, max_length=255)
    transport: Transport | None = None
    outbound_leading_plus_enabled: bool | None = None
    codecs: str | None = Field(default=None, min_length=1, max_length=64)


class TrunkCreate(_TrunkRules):
    """Create body: the PATCH fields (`name` required) plus gateways, carrier IPs and numbers."""

    name: str = Field(min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=500)
    preset: Preset | None = None
    is_active: bool = True
    inbound_enabled: bool = True
    outbound_enabled: bool = True
    channels: int = Field(default=10, ge=1, le=1000)
    default_inbound_agent_id: str | None = None
    auth_username: str | None = Field(default=None, min_length=1, max_length=255)
    auth_password: str | None = Field(default=None, min_length=1, max_length=255)
    transport: Transport = "udp"
    outbound_leading_plus_enabled: bool = True
    codecs: str = Field(default="PCMU,PCMA", min_length=1, max_length=64)
    gateways: list[GatewayIn] = Field(default_factory=list, max_length=MAX_CHILDREN)
    ip_acls: list[CarrierIpIn] = Field(default_factory=list, max_length=MAX_CHILDREN)
    numbers: list[NumberIn] = Field(default_factory=list, max_length=MAX_CHILDREN)

    @field_validator("gateways", "ip_acls", "numbers", mode="before")
    @classmethod
    def _lists_not_null(cls, value: Any, info: ValidationInfo) -> Any:
        return reject_null(value, info.field_name or "field")


class TrunkOut(ResponseModel):
    """The seed's Trunk shape (never `auth_password`)."""

    id: str
    name: str
    description: str | None
    preset: str | None
    is_active: bool
    inbound_enabled: bool
    outbound_enabled: bool
    channels: int
    default_inbound_agent_id: str | None
    auth_username: str | None
    transport: str
    codecs: str
    outbound_leading_plus_enabled: bool
    last_inbound_at: datetime | None
    last_outbound_at: datetime | None
    converted_from_byot_trunk_id: str | None
    organization_id: str | None
    sub_account_id: str | None
    user_id: str | None
    created_at: datetime
    updated_at: datetime
    is_deleted: bool
    deleted_at: datetime | None
    health: Health
    active_calls: int
    gateways: list[GatewayOut]
    ip_acls: list[CarrierIpOut]
    numbers: list[NumberOut]

    @classmethod
    def from_view(cls, view: TrunkView, *, active_calls: Callable[[str], int]) -> TrunkOut:
        trunk = view.trunk
        health = trunk.health_state if trunk.is_active else "disabled"
        return cls.model_validate(
            {
                **{name: getattr(trunk, name) for name in _TRUNK_COLUMNS},
                "health": health,
                "active_calls": active_calls(trunk.id),
                "gateways": [GatewayOut.model_validate(g) for g in view.gateways],
                "ip_acls": [CarrierIpOut.model_validate(i) for i in view.ip_acls],
                "numbers": [NumberOut.model_validate(n) for n in view.numbers],
            }
        )


_TRUNK_COLUMNS = tuple(
    name
    for name in TrunkOut.model_fields
    if name not in {"health", "active_calls", "gateways", "ip_acls", "numbers"}
)


class TrunkPage(ResponseModel):
    items: list[TrunkOut]
    total: int
    limit: int
    offset: int
