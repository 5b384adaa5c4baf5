"""The FEEL grammar (DMN 1.5 chapter 10.3.1), as an LALR(1) grammar for lark.

Tokens come from :mod:`bpm.feel.lexer`, which knows the names in scope; the grammar only
arranges them. Precedence, lowest first: ``for``/``if``/``some``/``every``/``function``;
``or``; ``and``; comparisons, ``between``, ``in``, ``instance of``; ``+ -``; ``* /``;
``**`` (left associative); unary ``-`` (so ``-3 ** 2`` is 9); paths, filters, invocations.
The parser is built once per process and shared (lark parsers are reentrant).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedToken
from lark.lexer import Lexer

from bpm.errors import ExpressionError
from bpm.feel.lexer import Names, Tok, tokenize

GRAMMAR = r"""
%declare NAME NUMBER STRING DOTDOT POW LE GE NE ARROW DOT STAR SLASH PLUS MINUS LT GT EQ
%declare LPAR RPAR LBRACE RBRACE COMMA COLON AT LSQB FILTER RSQB OPEN_EXCL CLOSE_EXCL
%declare FOR IN RETURN IF THEN ELSE SOME EVERY SATISFIES AND OR BETWEEN FUNCTION
%declare TRUE FALSE NULL NOT INSTANCE OF EXTERNAL

expression: textual

unary_tests: MINUS                                          -> any_test
    | positive_unary_test (COMMA positive_unary_test)*      -> tests

?textual: for_expr | if_expr | quantified | function_def | disjunction

for_expr: FOR iteration (COMMA iteration)* RETURN expression
iteration: NAME IN expression                               -> iterate_over
    | NAME IN additive DOTDOT additive                      -> iterate_range
if_expr: IF expression THEN expression ELSE expression
quantified: (SOME | EVERY) NAME IN expression (COMMA NAME IN expression)* SATISFIES expression
function_def: FUNCTION LPAR [param (COMMA param)*] RPAR [EXTERNAL] expression
param: NAME [COLON type]

?disjunction: disjunction OR conjunction                    -> or_
    | conjunction
?conjunction: conjunction AND comparison                    -> and_
    | comparison
?comparison: additive (EQ | NE | LT | LE | GT | GE) additive -> compare
    | additive BETWEEN additive AND additive                -> between
    | additive IN in_rhs                                    -> in_
    | additive INSTANCE OF type                             -> instance_of
    | additive

in_rhs: positive_unary_test                                 -> tests
    | LPAR positive_unary_test (COMMA positive_unary_test)+ RPAR -> tests

?positive_unary_test: simple_test | expression
simple_test: (LT | LE | GT | GE | EQ | NE) additive

?additive: additive PLUS multiplicative                     -> add
    | additive MINUS multiplicative                         -> sub
    | multiplicative
?multiplicative: multiplicative STAR power                  -> mul
    | multiplicative SLASH power                            -> div
    | power
?power: power POW unary                                     -> pow
    | unary
?unary: MINUS unary                                         -> neg
    | postfix
?postfix: postfix DOT NAME                                  -> path
    | postfix FILTER expression RSQB                        -> filter
    | postfix LPAR [arguments] RPAR                         -> call
    | primary

arguments: expression (COMMA expression)*                   -> positional
    | NAME COLON expression (COMMA NAME COLON expression)*  -> named

?primary: NUMBER                                            -> number
    | STRING                                                -> string
    | TRUE                                                  -> true
    | FALSE                                                 -> false
    | NULL                                                  -> null
    | NAME                                                  -> name
    | AT STRING                                             -> temporal
    | LPAR expression RPAR
    | LPAR simple_test RPAR                                 -> unary_range
    | LSQB [expression (COMMA expression)*] RSQB            -> list
    | (LSQB | LPAR | OPEN_EXCL) additive DOTDOT additive (RSQB | RPAR | CLOSE_EXCL) -> range
    | LBRACE [entry (COMMA entry)*] RBRACE                  -> context
    | NOT LPAR positive_unary_test (COMMA positive_unary_test)* RPAR -> negation

entry: (NAME | STRING) COLON expression

type: NAME (DOT NAME)*                                      -> named_type
    | NAME LT type GT                                       -> generic_type
    | NAME LT [NAME COLON type (COMMA NAME COLON type)*] GT -> context_type
    | FUNCTION LT [type (COMMA type)*] GT ARROW type        -> function_type
"""


class _NoLexer(Lexer):
    """Tokens are fed one by one (see :func:`parse`): lark's own lexer is never asked."""

    def __init__(self, conf: object) -> None:
        pass

    def lex(self, state: object, parser_state: object) -> Iterator[Token]:  # pragma: no cover
        raise AssertionError("tokens are fed by bpm.feel.grammar.parse")


@cache
def _parser() -> Lark:
    return Lark(
        GRAMMAR,
        parser="lalr",
        lexer=_NoLexer,
        start=["expression", "unary_tests"],
        maybe_placeholders=True,
        keep_all_tokens=True,
    )


def parse(text: str, names: Names, start: str = "expression") -> Tree[Token]:
    """The parse tree of ``text``; an ExpressionError says where and what was expected."""
    tokens = tokenize(text, names)
    interactive = _parser().parse_interactive("", start=start)
    try:
        for tok in tokens:
            interactive.feed_token(_lark_token(tok))
        last = _lark_token(tokens[-1]) if tokens else None
        tree: Tree[Token] = interactive.feed_eof(last)  # type: ignore[no-untyped-call]
    except UnexpectedToken as exc:
        where = (
            f"at end of `{text}`"
            if exc.token.type == "$END"
            else f"at {exc.token.value!r} (position {exc.token.start_pos})"
        )
        raise ExpressionError(f"FEEL syntax error in `{text}` {where}") from None
    except LarkError as exc:
        raise ExpressionError(f"FEEL syntax error in `{text}`: {exc}") from None
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        raise ExpressionError(
            f"expression `{text[:80]}` nests {depth} levels deep, over {MAX_DEPTH}: split it "
            "into a context of named parts"
        )
    return tree


MAX_DEPTH = 400
"""The deepest parse tree compiled (a chain of 150 ``+`` is about this deep)."""


def _depth(tree: Tree[Token]) -> int:
    """The depth of a parse tree, measured without recursion (a hostile chain is deep)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((c, level + 1) for c in node.children if isinstance(c, Tree))
    return deepest


def _lark_token(tok: Tok) -> Token:
    return Token(tok.type, tok.value, start_pos=tok.start, end_pos=tok.end)
