"""FEEL tokens, cut with the names in scope.

FEEL names may hold spaces, the symbols ``. / - + *`` and the right single quote
(``Monthly Salary``, ``date and time``, ``Loan-to-Value``), so where a name ends depends on
the names the model defines (DMN 1.5 §10.3.1.2). The lexer takes those names: at a name
start it takes the longest known name; otherwise it reads words and joins words that follow
one another with only spaces between them, stopping at keywords. It also tells the grammar
which role a bracket plays, which a context-free grammar cannot: ``]1..5[`` opens and closes
ranges with reversed brackets, and ``x[...]`` is a filter where ``[1, 2]`` is a list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from bpm.errors import ExpressionError

MAX_NESTING = 64
MAX_LENGTH = 100_000

KEYWORDS = {
    "for": "FOR", "in": "IN", "return": "RETURN", "if": "IF", "then": "THEN",
    "else": "ELSE", "some": "SOME", "every": "EVERY", "satisfies": "SATISFIES",
    "and": "AND", "or": "OR", "between": "BETWEEN", "function": "FUNCTION",
    "true": "TRUE", "false": "FALSE", "null": "NULL",
}  # fmt: skip

# Names of the builtin library and of types that hold spaces or keywords.
BUILTIN_NAMES = (
    "date and time", "years and months duration", "days and time duration", "string length",
    "upper case", "lower case", "substring before", "substring after", "starts with",
    "ends with", "list contains", "insert before", "index of", "distinct values",
    "get value", "get entries", "context put", "context merge", "string join", "round up",
    "round down", "round half up", "round half down", "day of year", "day of week",
    "month of year", "week of year", "met by", "overlaps before", "overlaps after",
    "finished by", "started by", "list replace", "time offset", "start included",
    "end included",
)  # fmt: skip

PUNCTUATION = [
    ("..", "DOTDOT"), ("**", "POW"), ("<=", "LE"), (">=", "GE"), ("!=", "NE"), ("->", "ARROW"),
    (".", "DOT"), ("*", "STAR"), ("/", "SLASH"), ("+", "PLUS"), ("-", "MINUS"), ("<", "LT"),
    (">", "GT"), ("=", "EQ"), ("(", "LPAR"), (")", "RPAR"), ("{", "LBRACE"), ("}", "RBRACE"),
    (",", "COMMA"), (":", "COLON"), ("@", "AT"),
]  # fmt: skip

_SPACE = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/)+", re.DOTALL)
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
# DMN 1.5 grammar rules 27-29: NameStartChar and NamePartChar.
_START = (
    "?A-Z_a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff"
    "\u200c-\u200d\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd"
    "\U00010000-\U000effff"
)
_PART = _START + "0-9\u00b7\u0300-\u036f\u203f-\u2040'\u2019"
_WORD = re.compile(f"[{_START}]")
_WORD_REST = re.compile(f"[{_PART}]*")
_DIGIT_WORD = re.compile(f"[0-9][{_PART}]*")
_NAME_CHAR = re.compile(f"[{_PART}]")
# A name before a colon (context key, named argument, typed parameter) may hold symbols.
_KEY = re.compile(r"""[{(,<]\s*([^\s"{}(),:<>\[\]][^"{}(),:<>\[\]]*?)\s*:(?!=)""")
_INLINE_SPACE = re.compile(r"[ \t\u00a0\r\n]+")

# After these a bracket begins an operand: ``[`` a list or range, ``]`` a reversed opener.
_ENDS_OPERAND = {"NAME", "NUMBER", "STRING", "RPAR", "RSQB", "RBRACE", "TRUE", "FALSE", "NULL"}


@dataclass(frozen=True)
class Tok:
    type: str
    value: str
    start: int
    end: int


class Names:
    """The names known in a scope, indexed for longest-match lookup at a position."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._by_first: dict[str, list[tuple[str, re.Pattern[str] | None]]] = {}
        self._add((*BUILTIN_NAMES, *names))

    def _add(self, names: Iterable[str]) -> None:
        for name in names:
            name = " ".join(name.split())
            if name and not _plain(name):
                # Words of a name may be split by any run of white space (a line break).
                spaced = (
                    re.compile(r"\s+".join(map(re.escape, name.split()))) if " " in name else None
                )
                self._by_first.setdefault(name[0], []).append((name, spaced))
        for group in self._by_first.values():
            group.sort(key=lambda entry: len(entry[0]), reverse=True)

    def with_names(self, names: Iterable[str]) -> Names:
        more = Names(())
        more._by_first = {k: list(v) for k, v in self._by_first.items()}
        more._add(names)
        return more

    def match(self, text: str, pos: int) -> tuple[str, int] | None:
        """The known name at ``pos`` and where it ends, longest first."""
        for name, spaced in self._by_first.get(text[pos], ()):
            if spaced is not None:
                found = spaced.match(text, pos)
                end = found.end() if found else -1
            else:
                end = pos + len(name) if text.startswith(name, pos) else -1
            if end > 0 and not (end < len(text) and _NAME_CHAR.match(text, end)):
                return name, end
        return None


def _plain(name: str) -> bool:
    """A single word with no keyword: the generic rule reads it right without help."""
    return bool(re.fullmatch(f"[{_START}][{_PART}]*", name)) and name not in KEYWORDS


def tokenize(text: str, names: Names) -> list[Tok]:
    """The tokens of ``text``; an ExpressionError names what cannot start a token."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression is {len(text)} characters long, over {MAX_LENGTH}")
    keys = {m.group(1) for m in _KEY.finditer(text) if not _plain(m.group(1))}
    if keys:
        names = names.with_names(keys)
    return list(_Lexer(text, names).run())


class _Lexer:
    def __init__(self, text: str, names: Names) -> None:
        self.text = text
        self.names = names
        self.groups: list[list[object]] = []  # [opener, saw '..']
        self.last: str | None = None

    def run(self) -> Iterator[Tok]:
        text, pos = self.text, 0
        while True:
            space = _SPACE.match(text, pos)
            if space:
                pos = space.end()
            if pos >= len(text):
                return
            tok = self._one(pos)
            self._track(tok)
            self.last = tok.type
            pos = tok.end
            yield tok

    def _one(self, pos: int) -> Tok:
        text = self.text
        char = text[pos]
        if char == '"':
            match = _STRING.match(text, pos)
            if not match:
                raise ExpressionError(f"unterminated string at position {pos}")
            return Tok("STRING", match.group(), pos, match.end())
        starts_number = char.isdigit() or (
            char == "." and pos + 1 < len(text) and text[pos + 1].isdigit()
        )
        if starts_number and not (char == "." and self.last in _ENDS_OPERAND):
            match = _NUMBER.match(text, pos)
            assert match is not None
            return Tok("NUMBER", match.group(), pos, match.end())
        if char == "[":
            kind = self._open_square()
            return Tok(kind, char, pos, pos + 1)
        if char == "]":
            operand_next = self.last not in _ENDS_OPERAND and self.last != "LSQB"
            return Tok("OPEN_EXCL" if operand_next else "RSQB", char, pos, pos + 1)
        if _WORD.match(char):
            return self._name(pos)
        for symbol, kind in PUNCTUATION:
            if text.startswith(symbol, pos):
                return Tok(kind, symbol, pos, pos + len(symbol))
        raise ExpressionError(f"unexpected character {char!r} at position {pos}")

    def _open_square(self) -> str:
        if self.last is None or self.last not in _ENDS_OPERAND:
            return "LSQB"
        top = self.groups[-1] if self.groups else None
        if top is not None and top[1] and top[0] in ("LSQB", "LPAR", "OPEN_EXCL"):
            return "CLOSE_EXCL"
        return "FILTER"

    def _track(self, tok: Tok) -> None:
        kind = tok.type
        if kind in ("LPAR", "LSQB", "LBRACE", "OPEN_EXCL", "FILTER"):
            self.groups.append([kind, False])
            if len(self.groups) > MAX_NESTING:
                raise ExpressionError(f"expression nests deeper than {MAX_NESTING} levels")
        elif kind == "DOTDOT" and self.groups:
            self.groups[-1][1] = True
        elif kind in ("RPAR", "RSQB", "RBRACE", "CLOSE_EXCL") and self.groups:
            self.groups.pop()

    def _name(self, pos: int) -> Tok:
        text = self.text
        known = self.names.match(text, pos)
        if known is not None:
            return Tok("NAME", known[0], pos, known[1])
        end = _WORD_REST.match(text, pos + 1).end()  # type: ignore[union-attr]
        word = text[pos:end]
        keyword = self._keyword(word, end)
        if keyword:
            return Tok(keyword, word, pos, end)
        words = [word]
        while True:
            space = _INLINE_SPACE.match(text, end)
            if not space:
                break
            nxt = space.end()
            if nxt >= len(text):
                break
            if _WORD.match(text[nxt]):
                follow = _WORD_REST.match(text, nxt + 1).end()  # type: ignore[union-attr]
            elif text[nxt].isdigit():
                follow = _DIGIT_WORD.match(text, nxt).end()  # type: ignore[union-attr]
            else:
                break
            candidate = text[nxt:follow]
            if self._keyword(candidate, follow) or (
                candidate == "not" and _next_is(text, follow, "(")
            ):
                break
            words.append(candidate)
            end = follow
        return Tok("NAME", " ".join(words), pos, end)

    def _keyword(self, word: str, end: int) -> str | None:
        if self.last == "DOT":
            return None
        if word in KEYWORDS:
            return KEYWORDS[word]
        if word == "not" and _next_is(self.text, end, "("):
            return "NOT"
        if word == "instance" and re.match(r"\s+of\b", self.text[end:]):
            return "INSTANCE"
        if word == "of" and self.last == "INSTANCE":
            return "OF"
        if word == "external" and self.last == "RPAR":
            return "EXTERNAL"
        return None


def _next_is(text: str, pos: int, char: str) -> bool:
    space = _SPACE.match(text, pos)
    pos = space.end() if space else pos
    return text.startswith(char, pos)
