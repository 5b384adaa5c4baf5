"""DMN boxed expressions compiled into closures over a FEEL scope (DMN 1.5 chapter 7 and 8).

Literal expressions, contexts, invocations, relations, lists, function definitions,
conditionals, filters, iterators and quantifiers; decision tables live in
:mod:`bpm.dmn.tables`. Every FEEL text is compiled here, at load, and an error names the
element it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bpm.dmn.compiling import Compiling, Logic
from bpm.dmn.itemdefs import conform
from bpm.dmn.tables import compile_table
from bpm.dmn.xml import Node
from bpm.feel import types
from bpm.feel.java import external_function
from bpm.feel.runtime import Env, Run
from bpm.feel.semantics import invoke
from bpm.feel.values import Function

EXPRESSION_TAGS = frozenset(
    {"literalExpression", "decisionTable", "context", "invocation", "relation", "list",
     "functionDefinition", "conditional", "filter", "for", "some", "every"}
)  # fmt: skip


def expression_child(node: Node) -> Node | None:
    """The one boxed expression inside ``node`` (a decision, a context entry, ...)."""
    for child in node.dmn_children():
        if child.tag in EXPRESSION_TAGS:
            return child
    return None


def compile_logic(node: Node | None, c: Compiling) -> Logic:
    """A boxed expression as ``fn(env) -> value``; no expression gives null."""
    if node is None:
        return lambda env: None
    tag = node.tag
    kind = node.get("typeRef")
    if tag not in _COMPILERS:
        raise c.fail(node, f"<{tag}> is not a boxed expression this engine knows")
    logic = _COMPILERS[tag](node, c)
    if kind:
        declared = c.type_of(kind, node)
        return lambda env: conform(logic(env), declared)
    return logic


def _literal(node: Node, c: Compiling) -> Logic:
    text_node = node.first("text")
    expr = c.feel(text_node.text if text_node is not None else None, node)
    return expr.run_in


def _context(node: Node, c: Compiling) -> Logic:
    entries: list[tuple[str | None, Logic]] = []
    for entry in node.all("contextEntry"):
        variable = entry.first("variable")
        value = compile_logic(expression_child(entry), c)
        name = variable.get("name") if variable is not None else None
        declared = c.type_of(variable.get("typeRef"), variable) if variable is not None else None
        if declared is not None:
            value = _typed(value, declared)
        entries.append((name, value))

    def build(env: Env) -> Any:
        result: dict[str, Any] = {}
        scope = env.child(result)
        for name, value in entries:
            if name is None:
                return value(scope)
            result[name] = value(scope)
        return result

    return build


def _typed(logic: Logic, declared: types.FeelType) -> Logic:
    return lambda env: conform(logic(env), declared)


def _invocation(node: Node, c: Compiling) -> Logic:
    target_node = node.first("text") or node.first("literalExpression")
    if target_node is None:
        raise c.fail(node, "invocation names no function (<text> or <literalExpression>)")
    target_text = target_node.text if target_node.tag == "text" else target_node.child_text("text")
    target = c.feel(target_text, node)
    bindings: list[tuple[str, Logic]] = []
    for binding in node.all("binding"):
        param = binding.first("parameter")
        if param is None or not param.get("name"):
            raise c.fail(binding, "binding without a <parameter name=...>")
        bindings.append((param.attr("name"), compile_logic(expression_child(binding), c)))

    def call(env: Env) -> Any:
        fn = target.run_in(env)
        return invoke(env.run, fn, {name: value(env) for name, value in bindings})

    return call


def _relation(node: Node, c: Compiling) -> Logic:
    columns = [col.attr("name") for col in node.all("column")]
    rows: list[list[Logic]] = []
    for row in node.all("row"):
        cells = [
            compile_logic(cell, c) for cell in row.dmn_children() if cell.tag in EXPRESSION_TAGS
        ]
        if len(cells) != len(columns):
            raise c.fail(row, f"relation row has {len(cells)} cells for {len(columns)} columns")
        rows.append(cells)

    def build(env: Env) -> list[dict[str, Any]]:
        return [{col: cell(env) for col, cell in zip(columns, row, strict=True)} for row in rows]

    return build


def _list(node: Node, c: Compiling) -> Logic:
    items = [compile_logic(item, c) for item in node.dmn_children() if item.tag in EXPRESSION_TAGS]
    return lambda env: [item(env) for item in items]


def function_value(
    name: str,
    params: list[tuple[str, types.FeelType | None]],
    body: Logic,
    closure: Env,
    result_type: types.FeelType | None = None,
) -> Function:
    """A FEEL function whose body is a boxed expression, run in ``closure`` plus its params."""
    names = tuple(p for p, _ in params)

    def call(run: Run, args: list[Any]) -> Any:
        if len(args) != len(names):
            return None
        bound = {}
        for (param, kind), arg in zip(params, args, strict=True):
            value = conform(arg, kind)
            if value is None and arg is not None:
                return None
            bound[param] = value
        run.tick()
        run.enter()
        try:
            return conform(body(Env(bound, closure, run)), result_type)
        finally:
            run.leave()

    return Function(
        name, names, call, tuple(k or types.ANY for _, k in params), result_type=result_type
    )


def formal_parameters(node: Node, c: Compiling) -> list[tuple[str, types.FeelType | None]]:
    return [(p.attr("name"), c.type_of(p.get("typeRef"), p)) for p in node.all("formalParameter")]


def _function_definition(node: Node, c: Compiling) -> Logic:
    params = formal_parameters(node, c)
    body_node = expression_child(node)
    kind = (node.get("kind") or "FEEL").upper()
    if kind == "JAVA":
        spec = compile_logic(body_node, c)
        names = tuple(p for p, _ in params)
        return lambda env: external_function({"java": spec(env)}, names)
    if kind != "FEEL":
        raise c.fail(node, f"functionDefinition kind={kind!r} is not supported (FEEL or Java)")
    body = compile_logic(body_node, c)
    return lambda env: function_value("anonymous", params, body, env)


def _part(node: Node, tag: str, c: Compiling) -> Logic:
    part = node.first(tag)
    if part is None:
        raise c.fail(node, f"<{node.tag}> needs a <{tag}> part")
    return compile_logic(expression_child(part), c)


def _conditional(node: Node, c: Compiling) -> Logic:
    cond, then, other = (_part(node, t, c) for t in ("if", "then", "else"))

    def choose(env: Env) -> Any:
        # A boxed conditional whose condition is not a boolean is an error: null.
        value = cond(env)
        if value is True:
            return then(env)
        return other(env) if value is False or value is None else None

    return choose


def _filter(node: Node, c: Compiling) -> Logic:
    source, match = _part(node, "in", c), _part(node, "match", c)

    def filtered(env: Env) -> Any:
        items = source(env)
        if not isinstance(items, list):
            return None
        kept = []
        for item in items:
            env.run.tick()
            scope = env.child({"item": item})
            if isinstance(item, dict):
                scope = scope.child(item)
            keep = match(scope)
            if keep is True:
                kept.append(item)
            elif keep is not False and keep is not None:
                return None  # a match that is not a boolean: the filter is an error
        return kept

    return filtered


def _iterator(node: Node, c: Compiling) -> Logic:
    name = node.get("iteratorVariable")
    if not name:
        raise c.fail(node, f"<{node.tag}> needs an iteratorVariable")
    source = _part(node, "in", c)
    body = _part(node, "return" if node.tag == "for" else "satisfies", c)
    tag = node.tag

    def iterate(env: Env) -> Any:
        items = source(env)
        if items is None:
            return None
        if not isinstance(items, list):
            items = [items]
        results = []
        for item in items:
            env.run.tick()
            results.append(body(env.child({name: item})))
        if tag == "for":
            return results
        if any(not isinstance(r, bool) for r in results):
            return None
        if tag == "some":
            return any(results)
        return all(results)

    return iterate


_COMPILERS: dict[str, Callable[[Node, Compiling], Logic]] = {
    "literalExpression": _literal,
    "context": _context,
    "invocation": _invocation,
    "relation": _relation,
    "list": _list,
    "functionDefinition": _function_definition,
    "conditional": _conditional,
    "filter": _filter,
    "for": _iterator,
    "some": _iterator,
    "every": _iterator,
    "decisionTable": compile_table,
}
