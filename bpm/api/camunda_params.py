"""Reading Camunda query parameters and filter bodies: paging, dates, lists, sorting,
variable conditions; every bad value answers 400 ``InvalidRequestException`` saying
what to send instead.

Camunda's list endpoints take the same filter either as query parameters (GET) or as a
JSON body (POST); both arrive here as a mapping of name -> value. Unknown names are
ignored (as Camunda does); a Camunda filter this engine does not evaluate answers 400
when it is given a value, so a client never gets an unfiltered list by mistake.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import QueryParams

from bpm.api.errors import bad_request
from bpm.api.limits import MAX_CONDITIONS, MAX_SORTING

#: The most rows one page returns (a larger ``maxResults`` answers 400; without one, a
#: page holds this many: read ``/count`` for the total).
MAX_RESULTS = 1000
OPERATORS = ("eq", "neq", "gt", "gteq", "lt", "lteq", "like")


@dataclass(frozen=True)
class Page:
    offset: int = 0
    limit: int = MAX_RESULTS


def _int(name: str, raw: Any) -> int:
    if isinstance(raw, bool):
        raise bad_request(f"{name} must be an integer, not {raw!r}")
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise bad_request(f"{name} must be an integer, not {raw!r}") from None


def page(query: QueryParams | Mapping[str, Any]) -> Page:
    """``firstResult`` and ``maxResults`` (query parameters, also for POST lists)."""
    first = query.get("firstResult")
    most = query.get("maxResults")
    offset = 0 if first in (None, "") else _int("firstResult", first)
    limit = MAX_RESULTS if most in (None, "") else _int("maxResults", most)
    if offset < 0 or offset > 2**31 - 1:
        raise bad_request(f"firstResult must be between 0 and {2**31 - 1}, not {offset}")
    if limit < 0:
        raise bad_request(f"maxResults cannot be negative, not {limit}")
    if limit > MAX_RESULTS:
        raise bad_request(
            f"maxResults {limit} is over the limit of {MAX_RESULTS}; page with firstResult"
        )
    return Page(offset, limit)


class Params:
    """One request's filter: query parameters or a JSON body, read by name."""

    def __init__(self, values: Mapping[str, Any], *, from_query: bool) -> None:
        self.values = values
        self.from_query = from_query

    @classmethod
    def of_query(cls, query: QueryParams) -> Params:
        return cls({k: query.get(k) for k in query}, from_query=True)

    @classmethod
    def of_body(cls, body: Any) -> Params:
        if body is None:
            return cls({}, from_query=False)
        if not isinstance(body, Mapping):
            raise bad_request("the filter must be a JSON object")
        return cls(body, from_query=False)

    def raw(self, name: str) -> Any:
        value = self.values.get(name)
        return None if value == "" and self.from_query else value

    def text(self, name: str, *, limit: int = 4000) -> str | None:
        value = self.raw(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise bad_request(f"{name} must be a string, not {json.dumps(value)[:80]}")
        out = str(value)
        if len(out) > limit:
            raise bad_request(f"{name} is longer than {limit} characters")
        if "\x00" in out:
            raise bad_request(f"{name} contains a NUL character")
        return out

    def texts(self, name: str) -> tuple[str, ...] | None:
        """A list: comma-separated in a query, a JSON array in a body."""
        value = self.raw(name)
        if value is None:
            return None
        if isinstance(value, str):
            items: Iterable[Any] = [v for v in value.split(",") if v != ""]
        elif isinstance(value, list):
            items = value
        else:
            raise bad_request(f"{name} must be a list of strings")
        out = []
        for item in items:
            if not isinstance(item, str) or len(item) > 4000 or "\x00" in item:
                raise bad_request(f"{name} must be a list of strings")
            out.append(item)
        if len(out) > MAX_RESULTS:
            raise bad_request(f"{name} lists more than {MAX_RESULTS} values (the limit)")
        return tuple(out)

    def flag(self, name: str) -> bool | None:
        value = self.raw(name)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise bad_request(f"{name} must be true or false, not {json.dumps(value)[:80]}")

    def true(self, name: str) -> bool:
        return self.flag(name) is True

    def integer(self, name: str) -> int | None:
        value = self.raw(name)
        if value is None:
            return None
        out = _int(name, value)
        if not -(2**63) <= out <= 2**63 - 1:
            raise bad_request(f"{name} is out of range")
        return out

    def date(self, name: str) -> datetime | None:
        value = self.raw(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise bad_request(f"{name} must be a date like 2026-11-30T10:15:00.000+0000")
        return parse_date(name, value)

    def refuse(self, names: Iterable[str]) -> None:
        """400 for each Camunda filter given a value that this engine does not evaluate."""
        for name in names:
            value = self.values.get(name)
            if value not in (None, "", [], False, "false"):
                raise bad_request(
                    f"the filter {name} is not supported by this engine; leave it out"
                )

    def sorting(self, allowed: Iterable[str]) -> tuple[tuple[str, bool], ...]:
        """``sortBy``/``sortOrder`` (query) or ``sorting`` (a list, or one object) of
        ``{"sortBy", "sortOrder"}``; 400 for a key outside ``allowed``."""
        keys = tuple(allowed)
        pairs: list[tuple[Any, Any]] = []
        if self.from_query or "sortBy" in self.values:
            by, order = self.values.get("sortBy"), self.values.get("sortOrder")
            if by not in (None, ""):
                pairs.append((by, order))
            elif order not in (None, ""):
                raise bad_request("sortOrder needs a sortBy")
        sorting = self.values.get("sorting")
        if isinstance(sorting, Mapping):
            sorting = [sorting]
        if sorting is not None and not isinstance(sorting, list):
            raise bad_request("sorting must be a list of {sortBy, sortOrder}")
        for item in sorting or ():
            if not isinstance(item, Mapping):
                raise bad_request("sorting must be a list of {sortBy, sortOrder}")
            pairs.append((item.get("sortBy"), item.get("sortOrder")))
        if len(pairs) > MAX_SORTING:
            raise bad_request(f"sorting lists more than {MAX_SORTING} entries (the limit)")
        out = []
        for by, order in pairs:
            if by not in keys:
                raise bad_request(
                    f"cannot sort by {json.dumps(by)[:80]}; sort by one of {', '.join(keys)}"
                )
            direction = "asc" if order in (None, "") else order
            if direction not in ("asc", "desc"):
                raise bad_request(f"sortOrder must be asc or desc, not {json.dumps(order)[:80]}")
            out.append((str(by), direction == "asc"))
        return tuple(out)

    def conditions(self, name: str) -> tuple[tuple[str, str, Any], ...]:
        """Variable conditions: ``a_eq_1,b_like_x%`` in a query; in a body a list of
        ``{"name", "operator", "value"}``. A query value is JSON when it parses as a number
        or boolean (except for ``like``), else text (Camunda compares the text of a query
        value)."""
        value = self.raw(name)
        if value is None:
            return ()
        out: list[tuple[str, str, Any]] = []
        if isinstance(value, str):
            for part in value.split(","):
                pieces = part.split("_")
                if len(pieces) < 3 or pieces[1] not in OPERATORS or not pieces[0]:
                    raise bad_request(
                        f"{name}: '{part[:80]}' is not name_operator_value with an operator "
                        f"of {', '.join(OPERATORS)}"
                    )
                text = "_".join(pieces[2:])
                # like compares with a pattern: its value stays text (a_like_1 means "1")
                value = text if pieces[1] == "like" else _query_value(text)
                out.append((pieces[0], pieces[1], value))
        elif isinstance(value, list):
            for item in value:
                if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                    raise bad_request(f"{name} must be a list of {{name, operator, value}}")
                op = item.get("operator", "eq")
                if op not in OPERATORS:
                    raise bad_request(
                        f"{name}: operator {json.dumps(op)[:40]} is not one of "
                        f"{', '.join(OPERATORS)}"
                    )
                val = item.get("value")
                if isinstance(val, (dict, list)):
                    raise bad_request(f"{name}: compare with a string, number or boolean")
                out.append((item["name"], op, val))
        else:
            raise bad_request(f"{name} must be name_operator_value conditions")
        if len(out) > MAX_CONDITIONS:
            raise bad_request(f"{name} lists more than {MAX_CONDITIONS} conditions (the limit)")
        for _, op, val in out:
            if op == "like" and not isinstance(val, str):
                raise bad_request(f"{name}: like compares with a text pattern")
        return tuple(out)


def _query_value(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, float, bool)) else text


def parse_date(name: str, text: str) -> datetime:
    """Camunda's ``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` (any ISO 8601 with an offset; none: UTC).

    A ``+`` sent unencoded in a query string arrives as a space: it is read as ``+``."""
    raw = text.strip()
    if len(raw) > 10 and raw[-5] == " " and raw[-4:].isdigit():
        raw = raw[:-5] + "+" + raw[-4:]
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise bad_request(
            f"{name}: cannot read {text[:40]!r} as a date; send yyyy-MM-dd'T'HH:mm:ss.SSSZ, "
            "e.g. 2026-11-30T10:15:00.000+0000"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
