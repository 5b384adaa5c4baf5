"""FEEL builtins: conversion, boolean, string and context functions (DMN 1.5 §10.3.4.1-4).

Patterns are XML Schema regular expressions, run by the ``regex`` module with a time limit,
so a pattern that backtracks without end (``(a+)+$``) gives an error instead of a hung worker.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import regex

from bpm.feel import temporal
from bpm.feel.library import builtin, text
from bpm.feel.runtime import FeelLimitError, Run
from bpm.feel.values import DECIMAL, Function, Range, YearsMonths, equal

REGEX_TIMEOUT = 1.0  # seconds for one match, replace or split


def number_text(value: Decimal) -> str:
    """A number as FEEL prints it: plain digits, no exponent, no trailing zeros."""
    if value == value.to_integral_value() and abs(value) < Decimal("1e40"):
        return str(int(value))
    return format(value.normalize(DECIMAL), "f")


def to_string(value: Any, nested: bool = False) -> str | None:
    """``string(from)``: the FEEL text of any value; null stays null at the top level."""
    if value is None:
        return "null" if nested else None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return number_text(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if nested else value
    if isinstance(value, dt.datetime):
        return temporal.format_date_time(value)
    if isinstance(value, dt.date):
        return temporal.format_date(value)
    if isinstance(value, dt.time):
        return temporal.format_time(value)
    if isinstance(value, dt.timedelta):
        return temporal.format_duration(value)
    if isinstance(value, YearsMonths):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(to_string(v, True) or "null" for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {to_string(v, True)}" for k, v in value.items()) + "}"
    if isinstance(value, Range):
        low = "[" if value.start_included else "("
        high = "]" if value.end_included else ")"
        ends = ["" if v is None else to_string(v, True) or "" for v in (value.start, value.end)]
        return f"{low}{ends[0]}..{ends[1]}{high}"
    if isinstance(value, Function):
        return repr(value)
    return str(value)


@builtin("string", "from")
def _string(value: Any) -> str | None:
    return to_string(value)


@builtin("number", "from, grouping separator?, decimal separator?")
def _number(source: Any, grouping: Any = None, decimal_sep: Any = None) -> Decimal | None:
    source = text(source)
    if grouping is not None and grouping not in (" ", ",", "."):
        return None
    if decimal_sep is not None and decimal_sep not in (",", "."):
        return None
    if grouping is not None and grouping == decimal_sep:
        return None
    if grouping:
        source = source.replace(grouping, "")
    if decimal_sep:
        source = source.replace(decimal_sep, ".")
    if not regex.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", source):
        return None
    return DECIMAL.create_decimal(source)


@builtin("not", "negand")
def _not(value: Any) -> bool | None:
    return (not value) if isinstance(value, bool) else None


@builtin("is", "value1, value2")
def _is(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dt.datetime | dt.time) and a.tzinfo != b.tzinfo:
        return False
    return equal(a, b) is True


# --- strings -------------------------------------------------------------------------------


@builtin("substring", "string, start position, length?")
def _substring(value: Any, start: Any, length: Any = None) -> str | None:
    source = text(value)
    if not isinstance(start, Decimal):
        return None
    begin = int(start)
    if begin == 0 or abs(begin) > len(source):
        return None if begin == 0 else ("" if begin > 0 else None)
    offset = begin - 1 if begin > 0 else len(source) + begin
    if length is None:
        return source[offset:]
    if not isinstance(length, Decimal) or length < 0:
        return None
    count = int(length)
    return source[offset : offset + count]


@builtin("string length", "string")
def _length(source: Any) -> Decimal:
    return Decimal(len(text(source)))


@builtin("upper case", "string")
def _upper(source: Any) -> str:
    return text(source).upper()


@builtin("lower case", "string")
def _lower(source: Any) -> str:
    return text(source).lower()


@builtin("substring before", "string, match")
def _before(source: Any, match: Any) -> str:
    source, match = text(source), text(match)
    at = source.find(match)
    return "" if at < 0 else source[:at]


@builtin("substring after", "string, match")
def _after(source: Any, match: Any) -> str:
    source, match = text(source), text(match)
    at = source.find(match)
    return "" if at < 0 else source[at + len(match) :]


@builtin("contains", "string, match")
def _contains(source: Any, match: Any) -> bool:
    return text(match) in text(source)


@builtin("starts with", "string, match")
def _starts(source: Any, match: Any) -> bool:
    return text(source).startswith(text(match))


@builtin("ends with", "string, match")
def _ends(source: Any, match: Any) -> bool:
    return text(source).endswith(text(match))


def pattern(source: Any, flags: Any = None) -> regex.Pattern[str]:
    """An XML Schema pattern with XPath flags (``s m i x q``) compiled for ``regex``."""
    source = text(source)
    given = text(flags) if flags is not None else ""
    if any(flag not in "smixq" for flag in given):
        raise ValueError(f"unknown regular expression flag in {given!r}")
    options = regex.V1
    if "s" in given:
        options |= regex.DOTALL
    if "m" in given:
        options |= regex.MULTILINE
    if "i" in given:
        options |= regex.IGNORECASE
    if "q" in given:
        return regex.compile(regex.escape(source), options)
    return regex.compile(xsd_pattern(source, "s" in given, "x" in given, "m" in given), options)


def xsd_pattern(source: str, dotall: bool, extended: bool, multiline: bool) -> str:
    r"""XML Schema / XPath regular expression syntax in ``regex`` terms: ``.`` matches no
    line end, ``$`` only the end, ``[a-z-[aeiou]]`` subtracts, ``\p{IsBasicLatin}`` is a
    block, ``x`` drops white space outside classes; back-references in a class are refused."""
    out: list[str] = []
    depth, i = 0, 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            nxt = source[i + 1 : i + 2]
            if nxt in ("p", "P") and source[i + 2 : i + 3] == "{":
                end = source.index("}", i)
                name = source[i + 3 : end]
                name = "".join(name.split()) if extended else name
                if name.startswith("Is"):
                    name = "In" + name[2:]
                out.append(f"\\{nxt}{{{name}}}")
                i = end + 1
                continue
            if nxt == "0" or (nxt.isdigit() and depth > 0):
                raise ValueError("a back-reference inside a character class, or \\0")
            out.append(char + nxt)
            i += 2
            continue
        if extended and depth == 0 and char in " \t\n\r":
            i += 1
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth > 0:
            depth -= 1
        elif char == "-" and depth > 0 and source[i + 1 : i + 2] == "[":
            out.append("--")  # class subtraction
            i += 1
            continue
        elif char == "." and depth == 0 and not dotall:
            out.append("[^\\n\\r]")
            i += 1
            continue
        elif char == "$" and depth == 0 and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _timed(call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, timeout=REGEX_TIMEOUT, **kwargs)
    except TimeoutError:
        raise FeelLimitError(
            f"regular expression took more than {REGEX_TIMEOUT} s (catastrophic backtracking?)"
        ) from None


@builtin("matches", "input, pattern, flags?")
def _matches(source: Any, expr: Any, flags: Any = None) -> bool:
    compiled = pattern(expr, flags)
    return _timed(compiled.search, text(source)) is not None


def _replacement(template: str) -> str:
    """XPath's ``$1`` and ``\\$`` replacement syntax in ``regex`` terms."""
    out, i = [], 0
    while i < len(template):
        char = template[i]
        if char == "\\":
            if i + 1 >= len(template) or template[i + 1] not in "\\$":
                raise ValueError("invalid escape in replacement")
            out.append("\\\\" if template[i + 1] == "\\" else "$")
            i += 2
        elif char == "$":
            digits = regex.match(r"\d+", template[i + 1 :])
            if not digits:
                raise ValueError("$ must be followed by a group number")
            out.append(f"\\g<{digits.group()}>")
            i += 1 + len(digits.group())
        else:
            out.append(char)
            i += 1
    return "".join(out)


@builtin("replace", "input, pattern, replacement, flags?", needs_run=True)
def _replace(run: Run, source: Any, expr: Any, replacement: Any, flags: Any = None) -> str:
    compiled = pattern(expr, flags)
    if compiled.fullmatch(""):
        raise ValueError("pattern matches the empty string")
    template = text(replacement)
    if flags is not None and "q" in text(flags):
        result = _timed(compiled.sub, lambda m: template, text(source))
    else:
        result = _timed(compiled.sub, _replacement(template), text(source))
    return run.check_string(result)


@builtin("split", "string, delimiter")
def _split(source: Any, delimiter: Any) -> list[str]:
    compiled = pattern(delimiter)
    if compiled.fullmatch(""):
        raise ValueError("delimiter matches the empty string")
    return list(_timed(compiled.split, text(source)))


@builtin("string join", "list, delimiter?", needs_run=True)
def _join(run: Run, items: Any, delimiter: Any = None) -> str | None:
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        return None
    if delimiter is not None and not isinstance(delimiter, str):
        return None
    if not all(isinstance(i, str) or i is None for i in items):
        return None
    joined = (delimiter or "").join(i for i in items if i is not None)
    return run.check_string(joined)


# --- contexts ------------------------------------------------------------------------------


@builtin("get value", "m, key")
def _get_value(context: Any, key: Any) -> Any:
    if isinstance(context, dict) and isinstance(key, str):
        return context.get(key)
    return None


@builtin("get entries", "m")
def _get_entries(context: Any) -> list[dict[str, Any]] | None:
    if not isinstance(context, dict):
        return None
    return [{"key": k, "value": v} for k, v in context.items()]


@builtin("context", "entries")
def _context(entries: Any) -> dict[str, Any] | None:
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        return None
    result: dict[str, Any] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "key" not in entry or "value" not in entry:
            return None
        key = entry["key"]
        if not isinstance(key, str) or key in result:
            return None
        result[key] = entry["value"]
    return result


@builtin("context put", "context, key, value", "context, keys, value")
def _context_put(context: Any, key: Any, value: Any) -> dict[str, Any] | None:
    if not isinstance(context, dict):
        return None
    if isinstance(key, list):
        if not key or not all(isinstance(k, str) for k in key):
            return None
        if len(key) == 1:
            single: dict[str, Any] | None = _context_put(context, key[0], value)
            return single
        inner = context.get(key[0])
        nested = _context_put(inner if isinstance(inner, dict) else {}, key[1:], value)
        if nested is None or not isinstance(inner, dict):
            return None
        return {**context, key[0]: nested}
    if not isinstance(key, str):
        return None
    return {**context, key: value}


@builtin("context merge", "contexts")
def _context_merge(contexts: Any) -> dict[str, Any] | None:
    if isinstance(contexts, dict):
        contexts = [contexts]
    if not isinstance(contexts, list) or not all(isinstance(c, dict) for c in contexts):
        return None
    merged: dict[str, Any] = {}
    for context in contexts:
        merged.update(context)
    return merged
