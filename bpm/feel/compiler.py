"""A FEEL parse tree compiled into Python closures, once; evaluating one never uses ``eval``.

Each node becomes ``fn(env) -> value``; a unary test becomes ``fn(env, input) -> bool|None``.
Subtrees without names (``[1..5]``, ``@"P1D"``, ``"a" + "b"``) are folded at compile time.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from lark import Token, Tree

from bpm.errors import ExpressionError
from bpm.feel import ops, types
from bpm.feel.builtins import BUILTINS
from bpm.feel.grammar import parse
from bpm.feel.java import external_function
from bpm.feel.lexer import Names
from bpm.feel.library import builtin
from bpm.feel.runtime import MISSING, Env, Run
from bpm.feel.semantics import (
    and3,
    conform,
    index,
    invoke,
    item_scope,
    iterable,
    relation,
    select,
    steps,
    test_value,
)
from bpm.feel.temporal import parse_temporal
from bpm.feel.values import DECIMAL, UNBOUNDED, Function, Range, TestValue, compare

Node = Callable[[Env], Any]
Test = Callable[[Env, Any], "bool | None"]
TypeResolver = Callable[[str], "types.FeelType | None"]

_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{6}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\"}
_LOOPING = {"for_expr", "quantified", "filter", "function_def", "call", "name"}


def unescape(literal: str) -> str:
    """A FEEL string literal's value (``"a\\"b"`` -> ``a"b``), surrogate pairs joined."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "uU" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _SIMPLE_ESCAPES.get(code, "\\" + code)

    text = _ESCAPE.sub(one, literal[1:-1])
    return text.encode("utf-16", "surrogatepass").decode("utf-16") if _has_surrogate(text) else text


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def _ch(tree: Tree[Token]) -> list[Any]:
    """A tree's children, as values mypy lets us read as tokens or trees."""
    return list(tree.children)


def _kids(tree: Tree[Token]) -> list[Any]:
    """Children that carry meaning: subtrees and name/literal tokens, not punctuation."""
    return [
        c
        for c in tree.children
        if isinstance(c, Tree) or (isinstance(c, Token) and c.type in ("NAME", "STRING", "NUMBER"))
    ]


def _uses(tree: Any, pred: Callable[[Any], bool]) -> bool:
    if not isinstance(tree, Tree):
        return pred(tree)
    return pred(tree) or any(_uses(c, pred) for c in tree.children)


def uses_input(tree: Any) -> bool:
    """Whether a test mentions ``?`` (then its boolean value is the test's answer)."""
    return _uses(tree, lambda t: isinstance(t, Token) and t.type == "NAME" and t.value == "?")


def _constant(tree: Any) -> bool:
    return not _uses(tree, lambda t: isinstance(t, Tree) and t.data in _LOOPING)


_NUMERIC_TESTS = {
    "LT": operator.lt,
    "LE": operator.le,
    "GT": operator.gt,
    "GE": operator.ge,
}


def _number_test(op: str, bound: Decimal) -> Test:
    """``< 10`` and its kin against a constant: the decision table's hot path."""
    compare_to = _NUMERIC_TESTS[op]

    def test(env: Env, value: Any) -> bool | None:
        if type(value) is Decimal:
            return bool(compare_to(value, bound))
        return relation(op, value, bound)

    return test


class Compiler:
    """Turns trees into closures; ``resolve_type`` names the model's item definitions."""

    def __init__(self, source: str, resolve_type: TypeResolver | None = None) -> None:
        self.source = source
        self.resolve_type = resolve_type

    # --- expressions ---------------------------------------------------------------------

    def expr(self, tree: Any) -> Node:
        node: Node = getattr(self, "_" + tree.data)(tree)
        if tree.data not in ("number", "string", "true", "false", "null") and _constant(tree):
            try:
                value = node(Env({}, None, Run(source=self.source)))
            except ExpressionError:
                return node
            return lambda env: value
        return node

    def _expression(self, tree: Tree[Token]) -> Node:
        return self.expr(_kids(tree)[0])

    def _primary(self, tree: Tree[Token]) -> Node:  # ( expression )
        return self.expr(_kids(tree)[0])

    def _unary_range(self, tree: Tree[Token]) -> Node:  # (< 10): a range with one open end
        test = _kids(tree)[0]
        op = test.children[0].type
        endpoint = self.expr(test.children[1])

        def build(env: Env) -> Any:
            point = endpoint(env)
            if point is None:
                return None
            if op in ("LT", "LE"):
                return Range(UNBOUNDED, point, False, op == "LE")
            if op in ("GT", "GE"):
                return Range(point, UNBOUNDED, op == "GE", False)
            return TestValue(op, point)

        return build

    def _number(self, tree: Tree[Token]) -> Node:
        value = DECIMAL.create_decimal(_ch(tree)[0].value)
        return lambda env: value

    def _string(self, tree: Tree[Token]) -> Node:
        value = unescape(_ch(tree)[0].value)
        return lambda env: value

    def _true(self, tree: Tree[Token]) -> Node:
        return lambda env: True

    def _false(self, tree: Tree[Token]) -> Node:
        return lambda env: False

    def _null(self, tree: Tree[Token]) -> Node:
        return lambda env: None

    def _temporal(self, tree: Tree[Token]) -> Node:
        # An @-literal that is no date, time or duration is null, like date("foo").
        value = parse_temporal(unescape(_kids(tree)[0].value))
        return lambda env: value

    def _name(self, tree: Tree[Token]) -> Node:
        name = _ch(tree)[0].value
        builtin = BUILTINS.get(name)

        if "." in name:
            # A known name such as ``Person.Age`` (a parameter) may be read where only
            # ``Person`` is bound: then it is the path.
            head, *rest = name.split(".")

            def lookup_dotted(env: Env) -> Any:
                value = env.lookup(name)
                if value is not MISSING:
                    return value
                value = env.lookup(head)
                if value is MISSING:
                    return builtin
                for part in rest:
                    value = select(value, part)
                return value

            return lookup_dotted

        def lookup(env: Env) -> Any:
            value = env.lookup(name)
            if value is MISSING:
                return builtin
            return value

        return lookup

    def _list(self, tree: Tree[Token]) -> Node:
        items = [self.expr(c) for c in _kids(tree) if c is not None]
        return lambda env: [item(env) for item in items]

    def _context(self, tree: Tree[Token]) -> Node:
        entries: list[tuple[str, Node]] = []
        for entry in _kids(tree):
            if entry is None:
                continue
            key_token, value = _kids(entry)
            key = unescape(key_token.value) if key_token.type == "STRING" else key_token.value
            if any(key == k for k, _ in entries):
                raise ExpressionError(f"context in `{self.source}` has the key {key!r} twice")
            entries.append((key, self.expr(value)))

        def build(env: Env) -> dict[str, Any]:
            result: dict[str, Any] = {}
            scope = env.child(result)
            for key, value in entries:
                result[key] = value(scope)
            return result

        return build

    def _range(self, tree: Tree[Token]) -> Node:
        opener, closer = _ch(tree)[0].value, _ch(tree)[-1].value
        start, end = (self.expr(c) for c in _kids(tree))
        return self._make_range(start, end, opener == "[", closer == "]")

    @staticmethod
    def _make_range(start: Node, end: Node, low: bool, high: bool) -> Node:
        def build(env: Env) -> Range | None:
            a, b = start(env), end(env)
            if a is not None and b is not None:
                order = compare(a, b)
                if order is None or order > 0:
                    return None
            if a is None and b is None:
                return None
            return Range(a, b, low, high)

        return build

    def _neg(self, tree: Tree[Token]) -> Node:
        operand = self.expr(_kids(tree)[0])
        return lambda env: ops.neg(operand(env))

    def _binary(self, tree: Tree[Token], fn: Callable[[Any, Any], Any]) -> Node:
        left, right = (self.expr(c) for c in _kids(tree))
        return lambda env: fn(left(env), right(env))

    def _add(self, tree: Tree[Token]) -> Node:
        left, right = (self.expr(c) for c in _kids(tree))

        def add(env: Env) -> Any:
            result = ops.add(left(env), right(env))
            if isinstance(result, str):
                env.run.check_string(result)
            return result

        return add

    def _sub(self, tree: Tree[Token]) -> Node:
        return self._binary(tree, ops.sub)

    def _mul(self, tree: Tree[Token]) -> Node:
        return self._binary(tree, ops.mul)

    def _div(self, tree: Tree[Token]) -> Node:
        return self._binary(tree, ops.div)

    def _pow(self, tree: Tree[Token]) -> Node:
        return self._binary(tree, ops.power)

    def _compare(self, tree: Tree[Token]) -> Node:
        op = _ch(tree)[1].type
        left, right = self.expr(_ch(tree)[0]), self.expr(_ch(tree)[2])
        return lambda env: relation(op, left(env), right(env))

    def _between(self, tree: Tree[Token]) -> Node:
        value, low, high = (self.expr(c) for c in _kids(tree))

        def between(env: Env) -> bool | None:
            x = value(env)
            return and3(relation("GE", x, low(env)), relation("LE", x, high(env)))

        return between

    def _and_(self, tree: Tree[Token]) -> Node:
        left, right = (self.expr(c) for c in _kids(tree))

        def conj(env: Env) -> bool | None:
            a = left(env)
            if a is False:
                return False
            return and3(a, right(env))

        return conj

    def _or_(self, tree: Tree[Token]) -> Node:
        left, right = (self.expr(c) for c in _kids(tree))

        def disj(env: Env) -> bool | None:
            a = left(env)
            if a is True:
                return True
            b = right(env)
            if b is True:
                return True
            return False if a is False and b is False else None

        return disj

    def _in_(self, tree: Tree[Token]) -> Node:
        value_tree, tests_tree = _kids(tree)
        value, test = self.expr(value_tree), self.tests(tests_tree)
        return lambda env: test(env, value(env))

    def _instance_of(self, tree: Tree[Token]) -> Node:
        value = self.expr(_ch(tree)[0])
        kind = self.type(_ch(tree)[3])
        return lambda env: kind.instance(value(env))

    def _if_expr(self, tree: Tree[Token]) -> Node:
        cond, then, other = (self.expr(c) for c in _kids(tree))
        return lambda env: then(env) if cond(env) is True else other(env)

    def _negation(self, tree: Tree[Token]) -> Node:
        tests = _kids(tree)
        if len(tests) != 1 or tests[0].data == "simple_test":
            return lambda env: None
        operand = self.expr(tests[0])

        def negate(env: Env) -> bool | None:
            value = operand(env)
            return (not value) if isinstance(value, bool) else None

        return negate

    def _path(self, tree: Tree[Token]) -> Node:
        base = self.expr(_ch(tree)[0])
        name = _ch(tree)[2].value
        return lambda env: select(base(env), name)

    def _filter(self, tree: Tree[Token]) -> Node:
        base, cond = self.expr(_ch(tree)[0]), self.expr(_ch(tree)[2])

        def filtered(env: Env) -> Any:
            items = base(env)
            if items is None:
                return None
            if not isinstance(items, list):
                items = [items]
            if not items:
                return []
            run = env.run
            first = cond(item_scope(env, items[0]))
            if isinstance(first, Decimal):
                return index(items, first)
            kept = [items[0]] if first is True else []
            for item in items[1:]:
                run.tick()
                if cond(item_scope(env, item)) is True:
                    kept.append(item)
            return kept

        return filtered

    def _call(self, tree: Tree[Token]) -> Node:
        callee = self.expr(_ch(tree)[0])
        args = _ch(tree)[2]
        if args is None:
            return lambda env: invoke(env.run, callee(env), [])
        pairs = _kids(args)
        if args.data == "named":
            names = [p.value for p in pairs[::2]]
            values = [self.expr(p) for p in pairs[1::2]]

            def call_named(env: Env) -> Any:
                fn = callee(env)
                return invoke(env.run, fn, {n: v(env) for n, v in zip(names, values, strict=True)})

            return call_named
        positional = [self.expr(p) for p in pairs]
        return lambda env: invoke(env.run, callee(env), [a(env) for a in positional])

    def _function_def(self, tree: Tree[Token]) -> Node:
        params = [p for p in _kids(tree)[:-1] if p is not None and p.data == "param"]
        names = tuple(_kids(p)[0].value for p in params)
        declared = [_kids(p)[1] if len(_kids(p)) > 1 else None for p in params]
        param_types = tuple(self.type(t) if t is not None else types.ANY for t in declared)
        typed = any(t is not None for t in declared)
        body_tree = _kids(tree)[-1]
        body = self.expr(body_tree)
        external = any(isinstance(c, Token) and c.type == "EXTERNAL" for c in tree.children)
        result_type = _static_type(body_tree)
        if external:
            from_java = _external(body_tree)
            return lambda env: from_java(env, names)

        def define(env: Env) -> Function:
            def call(run: Run, args: list[Any]) -> Any:
                if len(args) != len(names):
                    return None
                if typed:
                    converted = [conform(a, t) for a, t in zip(args, param_types, strict=True)]
                    if any(c is MISSING for c in converted):
                        return None
                    args = converted
                run.tick()
                run.enter()
                try:
                    return body(Env(dict(zip(names, args, strict=True)), env, run))
                finally:
                    run.leave()

            return Function("anonymous", names, call, param_types, result_type=result_type)

        return define

    def _for_expr(self, tree: Tree[Token]) -> Node:
        parts = _kids(tree)
        iterations = [self._iteration(it) for it in parts[:-1]]
        body = self.expr(parts[-1])

        def loop(env: Env) -> list[Any] | None:
            results: list[Any] = []
            run = env.run

            def nest(level: int, scope: Env) -> bool:
                if level == len(iterations):
                    run.tick()
                    results.append(body(scope.child({"partial": results})))
                    run.check_items(len(results))
                    return True
                name, source = iterations[level]
                items = source(scope)
                if items is None:
                    return False
                return all(nest(level + 1, scope.child({name: item})) for item in items)

            return results if nest(0, env) else None

        return loop

    def _iteration(self, tree: Tree[Token]) -> tuple[str, Callable[[Env], Any]]:
        parts = _kids(tree)
        name = parts[0].value
        if tree.data == "iterate_range":
            low, high = self.expr(parts[1]), self.expr(parts[2])
            return name, lambda env: steps(env.run, low(env), high(env))
        source = self.expr(parts[1])
        return name, lambda env: iterable(env.run, source(env))

    def _quantified(self, tree: Tree[Token]) -> Node:
        every: bool = _ch(tree)[0].type == "EVERY"
        parts = _kids(tree)
        names = [p.value for p in parts[:-1:2]]
        sources = [self.expr(p) for p in parts[1:-1:2]]
        body = self.expr(parts[-1])

        def quantify(env: Env) -> bool | None:
            run = env.run

            def nest(level: int, scope: Env) -> bool | None:
                if level == len(names):
                    run.tick()
                    return body(scope) is True
                items = iterable(run, sources[level](scope))
                if items is None:
                    return None
                for item in items:
                    found = nest(level + 1, scope.child({names[level]: item}))
                    if found is None:
                        return None
                    if found != every:
                        return found
                return every

            return nest(0, env)

        return quantify

    # --- unary tests ---------------------------------------------------------------------

    def tests(self, tree: Any) -> Test:
        """A test list (``tests``/``any_test`` tree, or one positive test) as one test."""
        if isinstance(tree, Tree) and tree.data == "any_test":
            return lambda env, value: True
        if isinstance(tree, Tree) and tree.data == "tests":
            parts = [self.test(c) for c in _kids(tree)]
            if len(parts) == 1:
                return parts[0]

            def any_of(env: Env, value: Any) -> bool | None:
                unknown = False
                for part in parts:
                    result = part(env, value)
                    if result is True:
                        return True
                    if result is None:
                        unknown = True
                return None if unknown else False

            return any_of
        return self.test(tree)

    def test(self, tree: Any) -> Test:
        if tree.data == "simple_test":
            op = _ch(tree)[0].type
            endpoint = self.expr(_ch(tree)[1])
            if _constant(_ch(tree)[1]):
                fixed = endpoint(Env({}, None, Run(source=self.source)))
                if isinstance(fixed, Decimal) and op in _NUMERIC_TESTS:
                    return _number_test(op, fixed)
            return lambda env, value: relation(op, value, endpoint(env))
        root = tree
        while isinstance(root, Tree) and root.data == "expression":
            root = _kids(root)[0]
        if isinstance(root, Tree) and root.data == "negation":
            inner = self.tests(Tree("tests", _kids(root)))

            def negated(env: Env, value: Any) -> bool | None:
                result = inner(env, value)
                return None if result is None else not result

            return negated
        expr = self.expr(tree)
        if uses_input(tree):

            def boolean(env: Env, value: Any) -> bool | None:
                result = expr(env.child({"?": value}))
                return result if isinstance(result, bool) else None

            return boolean

        def matches(env: Env, value: Any) -> bool | None:
            target = expr(env.child({"?": value}))
            return test_value(value, target)

        return matches

    # --- types ---------------------------------------------------------------------------

    def type(self, tree: Tree[Token]) -> types.FeelType:
        if tree.data == "named_type":
            name = ".".join(t.value for t in _kids(tree))
            found = types.builtin(name) or (self.resolve_type(name) if self.resolve_type else None)
            if found is None:
                raise ExpressionError(f"`{self.source}` names the unknown type {name!r}")
            return found
        if tree.data == "generic_type":
            outer, inner = _kids(tree)
            item = self.type(inner)
            if outer.value == "list":
                return types.ListOf(item)
            if outer.value == "range":
                return types.RangeOf(item)
            raise ExpressionError(f"`{self.source}`: {outer.value}<...> is not a FEEL type")
        if tree.data == "context_type":
            parts = [p for p in _kids(tree)[1:] if p is not None]
            fields = tuple(
                (parts[i].value, self.type(parts[i + 1])) for i in range(0, len(parts), 2)
            )
            return types.ContextOf(fields)
        parts = [p for p in _kids(tree) if p is not None]
        return types.FunctionOf(tuple(self.type(p) for p in parts[:-1]), self.type(parts[-1]))


def _static_type(tree: Any) -> types.FeelType | None:
    """The result type of a function body that is a literal (``function() "foo"``)."""
    while isinstance(tree, Tree) and tree.data == "expression":
        tree = _kids(tree)[0]
    if not isinstance(tree, Tree) or not _constant(tree):
        return None
    try:
        value = Compiler("").expr(tree)(Env({}, None, Run()))
    except ExpressionError:
        return None
    return types.of_value(value) if value is not None else None


def _external(body: Any) -> Callable[[Env, tuple[str, ...]], Any]:
    """``function(...) external {java: ...}``: the few java.lang.Math methods DMN models use."""
    expr = Compiler("").expr(body)

    def define(env: Env, names: tuple[str, ...]) -> Any:
        return external_function(expr(env), names)

    return define


@builtin("range", "from")
def _range_from(source: Any) -> Range | None:
    """``range("[1..10)")``: a range literal (or ``< x`` form) whose ends are literals."""
    if not isinstance(source, str):
        return None
    try:
        tree = parse(source.strip(), Names(()), "expression")
    except ExpressionError:
        return None
    root = tree
    while isinstance(root, Tree) and root.data == "expression":
        root = _kids(root)[0]
    if not isinstance(root, Tree) or root.data not in ("range", "unary_range"):
        return None
    if _uses(
        root, lambda t: isinstance(t, Token) and t.type == "NAME" and t.value not in _LITERAL_CALLS
    ):
        return None
    try:
        value = Compiler(source).expr(root)(Env({}, None, Run()))
    except ExpressionError:
        return None
    return value if isinstance(value, Range) else None


_LITERAL_CALLS = {"date", "time", "date and time", "duration"}
