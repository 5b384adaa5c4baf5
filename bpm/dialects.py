"""Conditions as other engines write them: CEL, JUEL turned into CEL where the meaning is
the same, and Zeebe's FEEL kept as it is (run natively by :mod:`bpm.expressions_feel`).

Three spellings reach a deploy besides plain CEL:

* **JUEL** inside ``${...}`` (Camunda 7, Activiti, Flowable): ``${amount gt 100 and not
  empty customer}``. The word operators (``eq ne lt gt le ge and or not mod empty``) are
  rewritten to CEL token by token; ``empty x`` becomes a CEL test that is true for null and
  for an empty string, list or map, false otherwise, exactly as JUEL. What has no exact
  CEL meaning (``div`` and ``/``: JUEL divides as decimals, CEL integers as integers; Java
  method calls; ``execution.getVariable``) is refused with the CEL spelling to use.
* **FEEL** after ``=`` (Zeebe): ``= amount > 100 and status = "open"``, kept as
  ``=...`` text and evaluated as FEEL (every construct and builtin of :mod:`bpm.feel`);
  one that does not compile is refused at deploy. (:func:`translate_feel`, FEEL to CEL
  where the meaning is the same, is kept for callers that need CEL text.)
* **Python** spellings (``True``, ``False``, ``None``, ``and``, ``or``, ``not``, ``is``,
  ``len``) in a plain expression are refused at deploy with the fix named: ``x == False``
  would otherwise deploy and fail the first instance (CEL reads ``False`` as a variable).

Text inside ``${...}`` without any JUEL word is CEL, as it always was here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bpm.errors import ExpressionError

__all__ = [
    "juel_to_cel",
    "python_spellings",
    "translate_feel",
    "translate_juel",
    "type_name_variables",
]

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    |(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    |(?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
    |(?P<op>==|!=|<=|>=|&&|\|\||.)""",
    re.VERBOSE | re.DOTALL,
)
_WRAPPED = re.compile(r"^\s*[$#]\{(?P<body>.*)\}\s*$", re.DOTALL)

_JUEL_WORDS = {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "gt": ">",
    "le": "<=",
    "ge": ">=",
    "and": "&&",
    "or": "||",
    "not": "!",
    "mod": "%",
}
_JUEL_ONLY = {*_JUEL_WORDS, "empty", "div"}
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
_PYTHON_WORDS = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "is": "== (or != for `is not`)",
    "elif": "a ? b : c",
    "len": "size(x)",
}
_JAVA_METHODS = {
    "equals": "a == b",
    "isEmpty": "size(x) == 0",
    "length": "size(x)",
    "contains": "x.contains(y) on strings; y in x on lists",
    "getVariable": "the variable name itself",
}


@dataclass(frozen=True)
class _Token:
    kind: str  # ws, num, str, ident, op
    text: str


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "op"
        out.append(_Token(kind, match.group()))
    return out


def _words(tokens: list[_Token]) -> list[_Token]:
    return [t for t in tokens if t.kind != "ws"]


def _next_word(tokens: list[_Token], i: int) -> _Token | None:
    for tok in tokens[i + 1 :]:
        if tok.kind != "ws":
            return tok
    return None


def _prev_word(tokens: list[_Token], i: int) -> _Token | None:
    for tok in reversed(tokens[:i]):
        if tok.kind != "ws":
            return tok
    return None


def python_spellings(cel: str) -> str | None:
    """A message naming the first Python spelling in ``cel`` and its CEL fix, else None."""
    tokens = _tokens(cel)
    for i, tok in enumerate(tokens):
        if tok.kind != "ident":
            continue
        before = _prev_word(tokens, i)
        if before is not None and before.text == ".":
            continue  # a field or method name, e.g. order.None is a field
        if tok.text in _PYTHON_LITERALS:
            return (
                f"`{tok.text}` is Python; CEL writes {_PYTHON_LITERALS[tok.text]} (in lower "
                f"case): `{cel.strip()}` would read `{tok.text}` as a variable"
            )
        if tok.text in _PYTHON_WORDS:
            after = _next_word(tokens, i)
            if tok.text == "len" and (after is None or after.text != "("):
                continue  # a variable called len
            if tok.text not in ("len",) and after is not None and after.text in (
                "==", "!=", ")", "]", ",", "?", ":", "&&", "||", ".",
            ):  # fmt: skip
                continue  # a variable called `or`, `is`...: CEL will judge
            return f"`{tok.text}` is Python; CEL writes {_PYTHON_WORDS[tok.text]}"
        if tok.text in _JUEL_WORDS or tok.text in ("empty", "div"):
            after = _next_word(tokens, i)
            if after is None or after.text in ("==", "!=", ")", "]", ",", "?", ":", "."):
                continue
            fix = _JUEL_WORDS.get(tok.text, "size(x) == 0" if tok.text == "empty" else "/")
            return (
                f"`{tok.text}` is JUEL; write {fix} in CEL, or wrap the whole condition in "
                "${...} to have it translated"
            )
    return None


def _operand_end(tokens: list[_Token], start: int) -> int:
    """Index after the postfix expression (path, call, index, parentheses) at ``start``."""
    i = start
    while i < len(tokens) and tokens[i].kind == "ws":
        i += 1
    if i >= len(tokens):
        return i
    if tokens[i].text == "(":
        return _closing(tokens, i) + 1
    if tokens[i].kind not in ("ident", "num", "str"):
        return i
    i += 1
    while i < len(tokens):
        tok = tokens[i]
        if tok.text == "." and i + 1 < len(tokens) and tokens[i + 1].kind == "ident":
            i += 2
        elif tok.text in ("[", "("):
            i = _closing(tokens, i) + 1
        else:
            break
    return i


def _closing(tokens: list[_Token], opening: int) -> int:
    pairs = {"(": ")", "[": "]", "{": "}"}
    close = pairs[tokens[opening].text]
    depth = 0
    for i in range(opening, len(tokens)):
        if tokens[i].text == tokens[opening].text:
            depth += 1
        elif tokens[i].text == close:
            depth -= 1
            if depth == 0:
                return i
    raise ExpressionError(f"unbalanced '{tokens[opening].text}' in the expression")


def _empty_test(operand: str) -> str:
    x = operand.strip()
    # type("") rather than the name string: a variable called string, list or map would
    # shadow the type's name.
    kinds = " || ".join(f"type({x}) == type({k})" for k in ('""', "[]", "{}"))
    return f"({x} == null || (({kinds}) && size({x}) == 0))"


def _refuse(source: str, what: str, fix: str) -> ExpressionError:
    return ExpressionError(f"`{source.strip()}`: {what}; in CEL write {fix}")


def translate_juel(body: str) -> str:
    """JUEL (the inside of ``${...}``) -> CEL, or :class:`ExpressionError` naming the fix."""
    tokens = _divisions(body, _tokens(body))
    if not any(t.kind == "ident" and t.text in _JUEL_ONLY for t in tokens):
        _check_java(body, tokens)
        return "".join(t.text for t in tokens).strip()
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        before = _prev_word(tokens, i)
        member = before is not None and before.text == "."
        if tok.kind == "ident" and not member and tok.text == "empty":
            end = _operand_end(tokens, i + 1)
            operand = "".join(t.text for t in tokens[i + 1 : end])
            if not operand.strip():
                raise _refuse(body, "`empty` needs an operand", "size(x) == 0")
            out.append(_empty_test(translate_juel(operand)))
            i = end
            continue
        if tok.kind == "ident" and not member and tok.text in _JUEL_WORDS:
            out.append(_JUEL_WORDS[tok.text])
        else:
            out.append(tok.text)
        i += 1
    _check_java(body, tokens)
    return "".join(out).strip()


_ARITHMETIC = frozenset({"*", "/", "%", "+", "-"})


def _operand_start(tokens: list[_Token], end: int) -> int:
    """Index of the first token of the postfix expression (path, call, index,
    parentheses) that ends just before ``end``; ``end`` when there is none."""
    i = end - 1
    while i >= 0 and tokens[i].kind == "ws":
        i -= 1
    start = end
    while i >= 0:
        tok = tokens[i]
        if tok.text in (")", "]"):
            opening = {")": "(", "]": "["}[tok.text]
            depth = 0
            while i >= 0:
                if tokens[i].text == tok.text:
                    depth += 1
                elif tokens[i].text == opening:
                    depth -= 1
                    if depth == 0:
                        break
                i -= 1
            if i < 0:
                raise ExpressionError(f"unbalanced '{tok.text}' in the expression")
            start = i
            i -= 1
            if i >= 0 and (tokens[i].kind == "ident" or tokens[i].text in (")", "]")):
                continue  # a call or an index: its callee is part of the operand
            break
        if tok.kind in ("ident", "num", "str"):
            start = i
            if i >= 2 and tokens[i - 1].text == "." and tokens[i - 2].kind != "ws":
                i -= 2
                continue
            break
        break
    return start


def _divisions(body: str, tokens: list[_Token]) -> list[_Token]:
    """JUEL's ``/`` and ``div`` divide as decimals (EL 1.4.2.2: both operands coerced to
    Double), CEL's divide integers as integers: ``a / b`` becomes ``double(a) / double(b)``.
    CEL has no mixed arithmetic, so a division inside a longer arithmetic chain (``a * b /
    c``, ``a / b + 1``) is refused with the CEL to write; comparisons mix freely."""
    out = list(tokens)
    i = 0
    while i < len(out):
        tok = out[i]
        before = _prev_word(out, i)
        is_div = tok.text == "/" or (
            tok.kind == "ident" and tok.text == "div" and (before is None or before.text != ".")
        )
        if not is_div:
            i += 1
            continue
        start = _operand_start(out, i)
        end = _operand_end(out, i + 1)
        first = next((j for j in range(i + 1, end) if out[j].kind != "ws"), end)
        left_ok = start < i
        outside_before = _prev_word(out, start) if left_ok else None
        outside_after = _next_word(out, end - 1) if end > first else None
        if (
            not left_ok
            or first >= end
            or (outside_before is not None and outside_before.text in _ARITHMETIC)
            or (outside_after is not None and outside_after.text in _ARITHMETIC)
        ):
            raise _refuse(
                body,
                "JUEL divides as decimals and CEL has no mixed arithmetic, so only a "
                "division of two operands standing alone is translated",
                "double(a) / double(b) for a decimal result (every operand of the "
                "arithmetic a double), or int(a) / int(b) for whole numbers",
            )
        left = "".join(t.text for t in out[start:i]).strip()
        right = "".join(t.text for t in out[first:end]).strip()
        text = f"double({left}) / double({right})"
        out[start:end] = [_Token("op", text)]
        i = start + 1
    return out


CEL_TYPE_NAMES = frozenset(
    {"bool", "bytes", "double", "dyn", "int", "list", "map", "null_type", "string", "type", "uint"}
)
"""Names CEL resolves to a type when no variable has them."""


def _is_type_literal(words: list[_Token], i: int) -> bool:
    """Whether the type name at ``words[i]`` is compared with a ``type(...)`` call."""
    prev = words[i - 1].text if i >= 1 else ""
    if prev in ("==", "!=") and i >= 2 and words[i - 2].text == ")":
        depth = 0
        for j in range(i - 2, -1, -1):
            if words[j].text == ")":
                depth += 1
            elif words[j].text == "(":
                depth -= 1
                if depth == 0:
                    return j >= 1 and words[j - 1].text == "type"
        return False
    nxt = words[i + 1].text if i + 1 < len(words) else ""
    return (
        nxt in ("==", "!=")
        and i + 3 < len(words)
        and words[i + 2].text == "type"
        and words[i + 3].text == "("
    )


def type_name_variables(cel: str) -> frozenset[str]:
    """The variables a CEL text reads whose names CEL also knows as types (``list``,
    ``map``, ``int``, ``string``, ``type``...): not a field (``x.list``), not a conversion
    (``string(x)``), not a type compared with ``type(...)`` (``type(x) == list``).

    CEL reads such a name as the type when no variable has it, so ``list == null`` would
    be false instead of failing as an unset variable; the engine checks them itself."""
    words = _words(_tokens(cel))
    out: set[str] = set()
    for i, tok in enumerate(words):
        if tok.kind != "ident" or tok.text not in CEL_TYPE_NAMES:
            continue
        if i >= 1 and words[i - 1].text == ".":
            continue
        if i + 1 < len(words) and words[i + 1].text == "(":
            continue
        if _is_type_literal(words, i):
            continue
        out.add(tok.text)
    return frozenset(out)


def _check_java(source: str, tokens: list[_Token]) -> None:
    words = _words(tokens)
    for i, tok in enumerate(words):
        if tok.kind != "ident":
            continue
        if tok.text == "execution" and i + 1 < len(words) and words[i + 1].text == ".":
            raise _refuse(
                source,
                "conditions read instance variables only, there is no `execution`",
                "the variable's name, e.g. amount for execution.getVariable('amount')",
            )
        is_method = (
            i > 0 and words[i - 1].text == "." and i + 1 < len(words) and words[i + 1].text == "("
        )
        if is_method and tok.text in _JAVA_METHODS and tok.text != "contains":
            raise _refuse(source, f"`.{tok.text}()` is a Java method", _JAVA_METHODS[tok.text])


_FEEL_REFUSED = {
    "between": "x >= a && x <= b",
    "in": "x in [a, b] (CEL lists), or x >= a && x <= b for a range",
    "some": "list.exists(v, test)",
    "every": "list.all(v, test)",
    "if": "condition ? a : b",
    "for": "list.map(v, expression)",
    "instance": "type(x) == string (or int, double, bool, list, map)",
    "function": "a service task that computes the value",
    "satisfies": "list.exists(v, test)",
    "is": "x == null / x != null",
}


def translate_feel(body: str) -> str:
    """FEEL (after Zeebe's ``=``) -> CEL, or :class:`ExpressionError` naming the fix."""
    tokens = _tokens(body)
    for i, tok in enumerate(tokens):
        prev = _prev_word(tokens, i)
        if tok.kind == "ident" and tok.text in _FEEL_REFUSED and (prev is None or prev.text != "."):
            raise _refuse(
                body,
                f"FEEL `{tok.text}` has no exact CEL translation here",
                _FEEL_REFUSED[tok.text],
            )
    out: list[str] = []
    for i, tok in enumerate(tokens):
        prev, nxt = _prev_word(tokens, i), _next_word(tokens, i)
        member = prev is not None and prev.text == "."
        if tok.kind == "ident" and not member:
            if tok.text in ("and", "or"):
                out.append("&&" if tok.text == "and" else "||")
                continue
            if tok.text == "not" and nxt is not None and nxt.text == "(":
                out.append("!")
                continue
            if nxt is not None and (nxt.text == "(" or nxt.kind == "ident"):
                raise _refuse(
                    body,
                    f"FEEL function `{tok.text}` has no exact CEL translation here",
                    "a CEL function (size, contains, startsWith, matches, int, string...)",
                )
        if tok.kind == "str" and tok.text.startswith("'"):
            raise _refuse(body, "FEEL strings use double quotes", '"text"')
        if tok.text == "=":
            out.append("==")
        elif tok.text in ("/", "**"):
            raise _refuse(
                body,
                "FEEL divides as decimals and CEL divides integers as integers",
                "double(a) / double(b)",
            )
        elif tok.text in ("[", "@", "{"):
            raise _refuse(
                body,
                f"FEEL `{tok.text}` (lists, filters, ranges, contexts, temporal literals) has "
                "no exact CEL translation here (FEEL lists count from 1)",
                "x[0] for the first element, [a, b] for a list literal",
            )
        else:
            out.append(tok.text)
    return "".join(out).strip()


def juel_to_cel(source: str) -> str:
    """The CEL of a condition written in CEL or ``${JUEL}`` (``=FEEL`` is compiled by
    :func:`bpm.expressions.to_cel`, which builds on this module).

    Raises :class:`ExpressionError` when the text uses something without an exact CEL
    translation, or a Python spelling (the message names the CEL to write instead).
    """
    text = source.strip()
    match = _WRAPPED.match(text)
    cel = translate_juel(match.group("body")) if match else text
    if not match:
        _check_java(text, _tokens(text))
    if not cel:
        raise ExpressionError("empty expression")
    problem = python_spellings(cel)
    if problem is not None:
        raise ExpressionError(problem)
    return cel
