"""What ``/openapi.json`` says beyond FastAPI's defaults, so that it tells the truth:

- the security schemes (HTTP Basic with a key's id and secret, Bearer with the secret);
- no ``422``: request validation answers ``400`` in Camunda's error shape;
- every error status a route may answer, with the error schema;
- the query parameters of the Camunda list endpoints, which read their filters from the
  query string themselves (see :func:`query`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import TypeAdapter

from bpm.api.camunda_params import MAX_RESULTS, OPERATORS
from bpm.api.documented import NO_NUL
from bpm.api.schemas import ErrorDto
from bpm.api.schemas_process import SUCCESS

PAGING = (("firstResult", "offset"), ("maxResults", "limit"))


#: A ``variableValues`` query value: ``name_operator_value`` conditions, comma-separated
#: (see :meth:`bpm.api.camunda_params.Params.conditions`).
_CONDITION = f"[^_,\\x00]+_(?:{'|'.join(OPERATORS)})_[^,\\x00]*"
CONDITIONS = f"^{_CONDITION}(?:,{_CONDITION})*$"

Kind = str | dict[str, Any]


def sorting(keys: Iterable[str]) -> tuple[tuple[str, Kind], ...]:
    """The ``sortBy`` (one of ``keys``) and ``sortOrder`` query parameters of a list, as one
    exploded object parameter: a ``sortOrder`` needs a ``sortBy`` (400 otherwise, as in
    Camunda), which separate parameters cannot say."""
    return (
        (
            "sorting",
            {
                "type": "object",
                "anyOf": [
                    {
                        "properties": {
                            "sortBy": {"type": "string", "enum": list(keys)},
                            "sortOrder": {"type": "string", "enum": ["asc", "desc"]},
                        },
                        "required": ["sortBy"],
                        "additionalProperties": False,
                    },
                    {"properties": {}, "additionalProperties": False},  # no sorting
                ],
            },
        ),
    )


def query(*groups: Iterable[tuple[str, Kind]], required: Iterable[str] = ()) -> dict[str, Any]:
    """``openapi_extra`` declaring query parameters ``(name, type)``: ``string``,
    ``integer``, ``boolean``, ``date`` (a Camunda date string), ``list`` (comma-separated),
    ``offset`` / ``limit`` (paging: what :func:`bpm.api.camunda_params.page` accepts),
    ``order`` (asc / desc), ``conditions`` (``variableValues``) or a JSON schema.
    The names in ``required`` must be given (a required string is not empty either)."""
    must = set(required)
    params = []
    for group in groups:
        for name, kind in group:
            schema: dict[str, Any] = {"type": "string", "pattern": NO_NUL}
            if isinstance(kind, dict):
                schema = kind
            elif kind == "conditions":
                schema = {"type": "string", "pattern": CONDITIONS}
            elif kind == "integer":  # priorities: the database's 32-bit integer column
                schema = {"type": kind, "minimum": -(2**31), "maximum": 2**31 - 1}
            elif kind == "boolean":
                schema = {"type": kind}
            elif kind == "offset":
                schema = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
            elif kind == "limit":
                schema = {"type": "integer", "minimum": 0, "maximum": MAX_RESULTS}
            elif kind == "order":
                schema = {"type": "string", "enum": ["asc", "desc"]}
            elif kind == "date":
                schema = {"type": "string", "format": "date-time"}
            if name in must and schema.get("type") == "string":
                schema = {**schema, "minLength": 1}
            param = {"name": name, "in": "query", "required": name in must, "schema": schema}
            if schema.get("type") == "object":  # its properties are the parameters
                param.update(style="form", explode=True)
            params.append(param)
    return {"parameters": params}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for the error statuses a route answers."""
    return {status: {"model": ErrorDto, "description": "Camunda error"} for status in statuses}


#: The /engine-rest routes that answer without a key: none (``/version`` and ``/engine``
#: authenticate too, as in Camunda with authentication on).
OPEN_PATHS: frozenset[str] = frozenset()


def _authenticated(path: str) -> bool:
    return path.startswith("/engine-rest/") and path not in OPEN_PATHS


def _describe_success(doc: dict[str, Any], schemas: dict[str, Any]) -> None:
    """The success schemas of the routes that build their JSON by hand (SUCCESS)."""
    for (method, path), shape in SUCCESS.items():
        operation = doc.get("paths", {}).get(path, {}).get(method)
        if operation is None:
            continue
        status = next((s for s in ("200", "201") if s in operation["responses"]), "200")
        response = operation["responses"].setdefault(status, {"description": "OK"})
        if shape is str:
            response["content"] = {"text/plain": {"schema": {"type": "string"}}}
            continue
        schema = TypeAdapter(shape).json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in schema.pop("$defs", {}).items():
            schemas.setdefault(name, definition)
        response["content"] = {"application/json": {"schema": schema}}


def _no_nul(schema: Any) -> None:
    """Every plain string of a schema says it holds no NUL (the server refuses NUL in any
    text it stores: PostgreSQL cannot hold it)."""
    if isinstance(schema, list):
        for item in schema:
            _no_nul(item)
        return
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "string" and not {"pattern", "enum", "const", "format"} & set(schema):
        schema["pattern"] = NO_NUL
    for value in schema.values():
        _no_nul(value)


def install(app: FastAPI) -> None:
    """Replace ``app.openapi`` with the corrected document (built once)."""

    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        components = doc.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        schemas.setdefault("ErrorDto", ErrorDto.model_json_schema())
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        components["securitySchemes"] = {
            "basic": {"type": "http", "scheme": "basic", "description": "key id and secret"},
            "bearer": {"type": "http", "scheme": "bearer", "description": "a key's secret"},
        }
        error_ref = {"$ref": "#/components/schemas/ErrorDto"}
        _describe_success(doc, schemas)
        _no_nul(schemas)
        for path, item in doc.get("paths", {}).items():
            for operation in item.values():
                if not isinstance(operation, dict) or "responses" not in operation:
                    continue
                responses = operation["responses"]
                _no_nul(operation.get("parameters", []))
                if responses.pop("422", None) is not None and "400" not in responses:
                    responses["400"] = {
                        "description": "Bad request",
                        "content": {"application/json": {"schema": error_ref}},
                    }
                extra: list[tuple[str, str]] = []
                if path.startswith("/engine-rest/") and path not in OPEN_PATHS:
                    extra.append(("400", "Bad request"))  # any parameter or body
                    if "{" in path:
                        extra.append(("404", "No such resource (unknown or ended)"))
                if _authenticated(path):
                    operation["security"] = [{"basic": []}, {"bearer": []}]
                    extra += [
                        ("401", "No or wrong credentials"),
                        ("403", "Not allowed"),
                        ("429", "Too many failed sign-ins: wait Retry-After seconds"),
                    ]
                if "requestBody" in operation:
                    extra.append(("413", "Request body over the size limit"))
                for status, text in extra:
                    responses.setdefault(
                        status,
                        {
                            "description": text,
                            "content": {"application/json": {"schema": error_ref}},
                        },
                    )
        app.openapi_schema = doc
        return doc

    app.openapi = build  # type: ignore[method-assign]
