"""The seed's error shapes, and the handlers that render every failure in them.

400/401/403/404/405/413: `{message}`; 409: `{detail: {code, message}}`; 422:
`{detail: [{loc, msg, type}]}` with no `input`, `ctx` or `url`, and messages that never embed
the rejected input.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException

from sipedge.store.errors import ConflictError, NotFoundError, NotYoursError, StoreError

log = logging.getLogger(__name__)

# Validation error types whose pydantic message never contains the input.
_SAFE_TYPES = frozenset(
    {
        "missing",
        "extra_forbidden",
        "string_type",
        "string_too_short",
        "string_too_long",
        "int_type",
        "int_parsing",
        "int_from_float",
        "bool_type",
        "bool_parsing",
        "dict_type",
        "list_type",
        "model_type",
        "model_attributes_type",
        "json_invalid",
        "json_type",
        "literal_error",
        "enum",
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
        "too_short",
        "too_long",
        "value_error",
        "none_required",
    }
)
_FALLBACK_MESSAGES = {
    "uuid_parsing": "Input should be a valid UUID",
    "uuid_type": "Input should be a valid UUID",
}
_MAX_LOC_PART = 64


class ApiError(Exception):
    """An error the API answers with `{message}` and the given status."""

    def __init__(
        self, status_code: int, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.headers = dict(headers or {})


class ApiValidationError(Exception):
    """A 422 raised outside pydantic (e.g. a gateway host that does not resolve)."""

    def __init__(self, loc: Sequence[str | int], msg: str, type_: str = "value_error") -> None:
        super().__init__(msg)
        self.errors = [{"loc": list(loc), "msg": msg, "type": type_}]


def message_response(
    status_code: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status_code, headers=headers)


def conflict_response(code: str, message: str) -> JSONResponse:
    return JSONResponse({"detail": {"code": code, "message": message}}, status_code=409)


def clean_validation_errors(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Keep `loc`, `msg` and `type`; drop `input`, `ctx` and `url`; never echo the input."""
    cleaned = []
    for error in errors:
        type_ = str(error.get("type", "value_error"))
        msg = str(error.get("msg", ""))
        if type_ == "value_error" and msg.startswith("Value error, "):
            msg = msg.removeprefix("Value error, ")
        if type_ not in _SAFE_TYPES:
            msg = _FALLBACK_MESSAGES.get(type_, "Invalid value")
        loc: list[str | int] = [
            part if isinstance(part, int) else str(part)[:_MAX_LOC_PART]
            for part in error.get("loc", ())
        ]
        cleaned.append({"loc": loc, "msg": msg, "type": type_})
    return cleaned


def integrity_conflict(exc: IntegrityError) -> tuple[str, str]:
    """A unique-index race lost at commit, as a 409 code and message."""
    text = str(exc.orig)
    if "destination_key" in text:
        return "number_taken", "the number is already live on a trunk"
    return "conflict", "the change clashes with an existing record"


async def _on_validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": clean_validation_errors(exc.errors())}, status_code=422)


async def _on_api_validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiValidationError)
    return JSONResponse({"detail": clean_validation_errors(exc.errors)}, status_code=422)


async def _on_api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return message_response(exc.status_code, exc.message, exc.headers)


async def _on_store_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StoreError)
    if isinstance(exc, ConflictError):
        return conflict_response(exc.code, exc.message)
    if isinstance(exc, NotFoundError):
        return message_response(404, exc.message)
    if isinstance(exc, NotYoursError):
        return message_response(400, exc.message)
    raise TypeError(f"unmapped store error {type(exc).__name__}")


async def _on_integrity(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, IntegrityError)
    code, message = integrity_conflict(exc)
    return conflict_response(code, message)


async def _on_http(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    return message_response(exc.status_code, message, exc.headers)


async def _on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled %s in request", type(exc).__name__, exc_info=exc)
    return message_response(500, "internal error")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(ApiValidationError, _on_api_validation)
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(StoreError, _on_store_error)
    app.add_exception_handler(IntegrityError, _on_integrity)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(Exception, _on_unexpected)
