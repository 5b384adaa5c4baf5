"""Errors in the Camunda JSON shape: ``{"type", "message", "code"}`` with a 4xx/5xx status.

Every error path of the app goes through here, including FastAPI's own request validation
(which would otherwise answer 422 ``{"detail": ...}``) and unknown routes. Bad input never
gets a 500 or a stack trace.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from bpm.errors import (
    BpmError,
    ConfigurationError,
    DeploymentError,
    Forbidden,
    InvalidOperation,
    LeaseLost,
    NotFound,
    VariableError,
)

log = logging.getLogger("bpm.api")

INVALID_REQUEST = "InvalidRequestException"
# Seconds a client is asked to wait before it tries again while the database is away.
RETRY_AFTER_SECONDS = 5


class ApiError(Exception):
    """An error answer: HTTP ``status``, Camunda exception ``type`` and a ``message``."""

    def __init__(
        self,
        status: int,
        type_: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


def bad_request(message: str) -> ApiError:
    return ApiError(400, INVALID_REQUEST, message)


def error_response(
    status: int,
    type_: str,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"type": type_, "message": message, "code": None}
    body.update(extra or {})
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def _loc(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts)


def validation_message(errors: Sequence[Any]) -> str:
    """One line naming the first problems, e.g. ``workerId: Field required``."""
    out = []
    for err in list(errors)[:3]:
        kind = err.get("type", "")
        if kind == "json_invalid":
            out.append("the request body is not valid JSON")
            continue
        where = _loc(err.get("loc", ()))
        msg = str(err.get("msg", "invalid value"))
        out.append(f"{where}: {msg}" if where else msg)
    return "; ".join(out) or "invalid request"


def _bpm_error(exc: BpmError) -> JSONResponse:
    if isinstance(exc, NotFound):
        return error_response(404, "RestException", str(exc))
    if isinstance(exc, DeploymentError):
        resource = exc.resource or "resource"
        details = {
            resource: {
                "errors": [
                    {
                        "message": p.message,
                        "line": p.line,
                        "column": p.column,
                        "mainBpmnElementId": p.element_id,
                        "elementType": p.element_type,
                        "bpmnElementIds": [p.element_id] if p.element_id else [],
                    }
                    for p in exc.problems
                ],
                "warnings": [],
            }
        }
        return error_response(400, "ParseException", str(exc), extra={"details": details})
    if isinstance(exc, VariableError):
        return error_response(400, INVALID_REQUEST, str(exc))
    if isinstance(exc, (LeaseLost, InvalidOperation)):
        return error_response(400, "BadUserRequestException", str(exc))
    if isinstance(exc, Forbidden):
        return error_response(403, "AuthorizationException", str(exc))
    if isinstance(exc, ConfigurationError):
        return error_response(500, "ProcessEngineException", str(exc))
    return error_response(400, "ProcessEngineException", str(exc))


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into the Camunda shape."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(
            exc.status, exc.type, exc.message, headers=exc.headers, extra=exc.extra
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, INVALID_REQUEST, validation_message(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = f"no resource at {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"method {request.method} is not allowed on {request.url.path}"
        else:
            message = str(exc.detail)
        return error_response(
            exc.status_code, "RestException", message, headers=getattr(exc, "headers", None)
        )

    @app.exception_handler(BpmError)
    async def _bpm(request: Request, exc: BpmError) -> JSONResponse:
        return _bpm_error(exc)

    @app.exception_handler(RecursionError)
    async def _too_deep(request: Request, exc: RecursionError) -> JSONResponse:
        return error_response(400, INVALID_REQUEST, "the request body is nested too deeply")

    async def _bad_data(request: Request, exc: Exception) -> JSONResponse:
        # the database refused a value (NUL character, too long, out of range): bad input
        first = (str(getattr(exc, "orig", None) or exc).splitlines() or ["?"])[0]
        return error_response(400, INVALID_REQUEST, f"invalid value: {first}")

    app.add_exception_handler(DataError, _bad_data)
    app.add_exception_handler(psycopg.DataError, _bad_data)

    async def _database_away(request: Request, exc: Exception) -> JSONResponse:
        # The database cannot be reached (refused, gone, restarting, pool exhausted): not
        # the client's fault and not a bug; a handler of its own (not the catch-all below,
        # which closes the connection) answers 503 and keeps the keep-alive connection.
        if isinstance(exc, DBAPIError) and not (
            exc.connection_invalidated or isinstance(exc, (OperationalError, InterfaceError))
        ):
            return await _unexpected(request, exc)
        first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or ["?"])[0]
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path, first)
        return error_response(
            503,
            "ProcessEngineException",
            "the database is unavailable; try again in a few seconds",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    for kind in (DBAPIError, PoolTimeout, psycopg.OperationalError, psycopg.InterfaceError):
        app.add_exception_handler(kind, _database_away)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(
            500,
            "ProcessEngineException",
            f"internal error ({type(exc).__name__}); see the server log",
        )
