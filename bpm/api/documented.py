"""Request field types whose ``/openapi.json`` schema states what the server accepts.

Validation stays as lenient as Camunda clients need (the route reports a precise 400);
only the documented schema is narrowed, to the values the server is sure to accept, so a
client (or a fuzzer) that follows the document is never refused.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import WithJsonSchema

from bpm.api.limits import MAX_CONDITIONS, MAX_SORTING, MAX_VARIABLES, at_most

#: Text without NUL characters (PostgreSQL text and jsonb cannot hold them: 400).
NO_NUL = "^[^\\x00]*$"
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _typed(type_name: str, value: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": {"const": type_name}, "value": _nullable(value)},
        "required": ["type"],
    }


_TEXT = {"type": "string", "pattern": NO_NUL}
#: A JSON scalar (text without NUL).
SCALAR: dict[str, Any] = {"anyOf": [_TEXT, {"type": ["number", "boolean", "null"]}]}
#: One Camunda typed value that :func:`bpm.api.variables.from_camunda` reads: the value
#: matches its ``type`` (types this schema leaves out, such as ``Date``, ``Json`` and
#: ``Object``, are accepted too, in the formats of CAMUNDA_REST.md); without a ``type``
#: the JSON value is kept as is.
VARIABLE_VALUE: dict[str, Any] = {
    "anyOf": [
        _typed("String", _TEXT),
        _typed("Integer", {"type": "integer", "minimum": INT32[0], "maximum": INT32[1]}),
        _typed("Long", {"type": "integer", "minimum": INT64[0], "maximum": INT64[1]}),
        _typed("Double", {"type": "number"}),
        _typed("Boolean", {"type": "boolean"}),
        _typed("Null", {"type": "null"}),
        {
            "type": "object",
            "properties": {"value": SCALAR},
            "additionalProperties": False,
        },
    ]
}
VARIABLES: dict[str, Any] = _nullable(
    {
        "type": "object",
        "propertyNames": {"minLength": 1, "pattern": NO_NUL},
        "additionalProperties": VARIABLE_VALUE,
        "maxProperties": MAX_VARIABLES,
    }
)

#: A name the engine reads as given: not only whitespace (and no NUL).
NAMED = "^[^\\x00]*[!-~][^\\x00]*$"

#: A map of name -> Camunda typed value (or null), at most ``MAX_VARIABLES`` of them.
Variables = Annotated[
    Annotated[dict[str, Any], at_most(MAX_VARIABLES)] | None, WithJsonSchema(VARIABLES)
]

#: A Camunda date (``yyyy-MM-dd'T'HH:mm:ss.SSSZ``; any ISO 8601 date-time is read).
DateText = Annotated[
    str | None, WithJsonSchema(_nullable({"type": "string", "format": "date-time"}))
]

#: ``variableValues`` of a POST filter: ``{name, operator, value}`` conditions.
CONDITION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _TEXT,
        "operator": {"enum": ["eq", "neq", "gt", "gteq", "lt", "lteq"]},
        "value": SCALAR,
    },
    "required": ["name"],
}
LIKE_CONDITION: dict[str, Any] = {
    "type": "object",
    "properties": {"name": _TEXT, "operator": {"const": "like"}, "value": _TEXT},
    "required": ["name", "operator", "value"],
}
Conditions = Annotated[
    Annotated[list[dict[str, Any]], at_most(MAX_CONDITIONS)] | None,
    WithJsonSchema(
        _nullable(
            {
                "type": "array",
                "items": {"anyOf": [CONDITION, LIKE_CONDITION]},
                "maxItems": MAX_CONDITIONS,
            }
        )
    ),
]

#: A message's time to live: milliseconds, or an ISO 8601 duration such as ``PT30S``.
TimeToLive = Annotated[
    int | str | None,
    WithJsonSchema(
        _nullable(
            {
                "anyOf": [
                    {"type": "integer", "minimum": 1, "maximum": 365 * 24 * 3600 * 1000},
                    {"type": "string", "pattern": "^P(?:[1-9][0-9]{0,3}D|T[1-9][0-9]{0,5}[HMS])$"},
                ]
            }
        )
    ),
]

#: A variables map this engine refuses when it holds a variable: null or ``{}``.
NoVariables = Annotated[
    dict[str, Any] | None,
    WithJsonSchema(
        _nullable({"type": "object", "maxProperties": 0, "description": "not supported"})
    ),
]

#: A field this engine refuses when given: only ``null`` is documented.
Unsupported = Annotated[
    str | None, WithJsonSchema({"type": "null", "description": "not supported: leave it out"})
]


def sorting(keys: tuple[str, ...]) -> WithJsonSchema:
    """The schema of a filter body's ``sorting``: a list of ``{sortBy, sortOrder}`` (or one
    such object), ``sortBy`` one of ``keys``."""
    item = {
        "type": "object",
        "properties": {
            "sortBy": {"type": "string", "enum": list(keys)},
            "sortOrder": {"anyOf": [{"type": "string", "enum": ["asc", "desc"]}, {"type": "null"}]},
        },
        "required": ["sortBy"],
    }
    listed = {"type": "array", "items": item, "maxItems": MAX_SORTING}
    schema = _nullable({"anyOf": [listed, item]})
    return WithJsonSchema(schema)


#: ``processVariables`` of a fetch-and-lock topic: name -> the value to equal.
VariableFilter = Annotated[
    Annotated[dict[str, Any], at_most(MAX_CONDITIONS)] | None,
    WithJsonSchema(
        _nullable(
            {
                "type": "object",
                "propertyNames": {"minLength": 1, "pattern": NO_NUL},
                "additionalProperties": SCALAR,
                "maxProperties": MAX_CONDITIONS,
            }
        )
    ),
]

#: ``correlationKeys`` of a message: name -> the value an instance's variable must equal.
CorrelationKeys = Annotated[
    Annotated[dict[str, Any], at_most(MAX_CONDITIONS)] | None,
    WithJsonSchema(
        _nullable(
            {
                "type": "object",
                "propertyNames": {"minLength": 1, "pattern": NO_NUL},
                "additionalProperties": VARIABLE_VALUE,
                "maxProperties": MAX_CONDITIONS,
            }
        )
    ),
]
