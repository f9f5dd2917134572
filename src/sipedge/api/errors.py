"""The seed's error shapes, and the handlers that render every failure in them.

400/401/403/404/405/413/429: `{message}` (429 carries `Retry-After`); 409:
`{detail: {code, message}}`; 422: `{detail: [{loc, msg, type}]}` with no `input`, `ctx` or `url`,
and messages that never embed the rejected input.

Under `/v2/agent` every failure has the seed's Agent error shape `{error: <status>, message}`,
and request validation failures (malformed JSON, a body that is not an object, a bad query
parameter) are HTTP 400 there, like the seed's create errors.
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

from sipedge.store.errors import (
    ConflictError,
    NotFoundError,
    NotYoursError,
    RejectedError,
    StoreError,
)

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
AGENT_PREFIX = "/v2/agent"
_AGENT_QUERY_MESSAGES = {
    "limit": "limit must be an integer from 1 to 200",
    "offset": "offset must be a non-negative integer",
}


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


class AgentError(Exception):
    """A failure on an agent endpoint: `{error: status_code, message}` (seed "Agent error")."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def is_agent_path(path: str) -> bool:
    return path == AGENT_PREFIX or path.startswith(AGENT_PREFIX + "/")


def agent_error_response(
    status_code: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": status_code, "message": message}, status_code=status_code, headers=headers
    )


def _render(
    request: Request, status_code: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    if is_agent_path(request.url.path):
        return agent_error_response(status_code, message, headers)
    return message_response(status_code, message, headers)


def agent_request_message(errors: Iterable[Mapping[str, Any]]) -> str:
    """A request validation failure on an agent endpoint, in one line without the input."""
    for error in errors:
        loc = tuple(error.get("loc", ()))
        if error.get("type") == "json_invalid":
            return "request body is not valid JSON"
        if loc[:1] == ("query",) and len(loc) > 1:
            return _AGENT_QUERY_MESSAGES.get(str(loc[1]), "a query parameter is invalid")
        if loc[:1] == ("body",):
            return "request body must be a JSON object"
    return "invalid request"


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


async def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    if is_agent_path(request.url.path):
        return agent_error_response(400, agent_request_message(exc.errors()))
    return JSONResponse({"detail": clean_validation_errors(exc.errors())}, status_code=422)


async def _on_api_validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiValidationError)
    return JSONResponse({"detail": clean_validation_errors(exc.errors)}, status_code=422)


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return _render(request, exc.status_code, exc.message, exc.headers)


async def _on_agent_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AgentError)
    return agent_error_response(exc.status_code, exc.message)


async def _on_store_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StoreError)
    if isinstance(exc, ConflictError):
        if is_agent_path(request.url.path):
            return agent_error_response(409, exc.message)
        return conflict_response(exc.code, exc.message)
    if isinstance(exc, NotFoundError):
        return _render(request, 404, exc.message)
    if isinstance(exc, NotYoursError | RejectedError):
        return _render(request, 400, exc.message)
    raise TypeError(f"unmapped store error {type(exc).__name__}")


async def _on_integrity(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, IntegrityError)
    code, message = integrity_conflict(exc)
    if is_agent_path(request.url.path):
        return agent_error_response(409, message)
    return conflict_response(code, message)


async def _on_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    return _render(request, exc.status_code, message, exc.headers)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled %s in request", type(exc).__name__, exc_info=exc)
    return _render(request, 500, "internal error")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(ApiValidationError, _on_api_validation)
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(AgentError, _on_agent_error)
    app.add_exception_handler(StoreError, _on_store_error)
    app.add_exception_handler(IntegrityError, _on_integrity)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(Exception, _on_unexpected)
