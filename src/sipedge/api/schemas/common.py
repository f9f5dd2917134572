"""Pieces shared by the request and response schemas."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError


def _storable(data: Any) -> bool:
    """No NUL characters and no lone surrogates anywhere: neither database can store them.

    Iterative, so a deeply nested body cannot exhaust the stack."""
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return False
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return True


def is_storable(data: Any) -> bool:
    """Whether every string in `data` (keys too) can be stored by both databases."""
    return _storable(data)


class RequestModel(BaseModel):
    """Request bodies: unknown fields are 422, types are not coerced ("10" is not 10)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _only_storable_text(cls, data: Any) -> Any:
        if not _storable(data):
            raise PydanticCustomError(
                "value_error", "text cannot contain NUL characters or unpaired surrogates"
            )
        return data


class ResponseModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


def reject_null(value: Any, field: str) -> Any:
    """Seed PATCH rule 2: a non-nullable field sent as null."""
    if value is None:
        raise PydanticCustomError("value_error", "fields cannot be null: {field}", {"field": field})
    return value


class Removed(ResponseModel):
    """The answer to removing a gateway, carrier IP or number."""

    id: str
    is_deleted: bool


class MessageBody(BaseModel):
    message: str


class CodedDetail(BaseModel):
    code: str
    message: str


class CodedBody(BaseModel):
    detail: CodedDetail


class ValidationItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationBody(BaseModel):
    detail: list[ValidationItem]


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": MessageBody, "description": "A referenced agent is not one of the caller's"},
    401: {"model": MessageBody, "description": "Missing, invalid or revoked bearer token"},
    404: {"model": MessageBody, "description": "No live resource with this id for the caller"},
    409: {"model": CodedBody, "description": "Conflict with existing data"},
    413: {"model": MessageBody, "description": "Request body too large"},
    422: {"model": ValidationBody, "description": "Validation failed (input never echoed)"},
    429: {
        "model": MessageBody,
        "description": "Too many requests for this token (see the Retry-After header)",
        "headers": {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}
        },
    },
}
