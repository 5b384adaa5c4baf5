"""DMN item definitions as FEEL types, and the conversions DMN applies at a typed boundary.

An item definition narrows a base type (``typeRef``) with allowed values (unary tests) or
builds a structure (``itemComponent``), a collection (``isCollection``) or a function type
(``functionItem``). Definitions may refer to each other in any order and to themselves; they
are resolved when first used. A value that does not conform where a type is declared (a
decision's variable, an input, a parameter) becomes null, as DMN 1.5 §7.3.5 says.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from bpm.dmn.xml import Node, problem
from bpm.errors import DeploymentError, ExpressionError
from bpm.feel import UnaryTests, compile_unary_tests, types
from bpm.feel.runtime import Env, Run

Resolver = Callable[[str], "types.FeelType | None"]


def builtin_type(name: str) -> types.FeelType | None:
    """A typeRef naming a FEEL type, with or without a ``feel:``/``xsd:`` prefix."""
    for prefix in ("feel:", "xsd:", "FEEL:"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return types.builtin(name)


class ItemDefinitions:
    """The item definitions of one model, resolvable by name (``tLoan``, ``imp.tLoan``)."""

    def __init__(self, nodes: list[Node], names: tuple[str, ...], resource: str | None) -> None:
        self._nodes = {n.attr("name"): n for n in nodes}
        self._names = names
        self._resource = resource
        self._types: dict[str, types.FeelType] = {}
        self.imported: dict[str, ItemDefinitions] = {}

    def resolve(self, name: str) -> types.FeelType | None:
        """The type called ``name`` here, built in, or in a named import; None if none."""
        name = name.strip()
        found = builtin_type(name)
        if found is not None:
            return found
        if name in self._types:
            return self._types[name]
        node = self._nodes.get(name)
        if node is not None:
            return self._build(name, node)
        prefix, dot, rest = name.partition(".")
        if dot and prefix in self.imported:
            return self.imported[prefix].resolve(rest)
        return None

    def require(self, name: str, where: Node) -> types.FeelType:
        found = self.resolve(name)
        if found is None:
            raise DeploymentError(
                problem(where, f"typeRef {name!r} names no item definition or FEEL type"),
                self._resource,
            )
        return found

    def check_all(self) -> None:
        """Resolve every definition now, so a broken one is refused at load."""
        for name in self._nodes:
            kind = self.resolve(name)
            if isinstance(kind, types.Custom):
                kind.accepts(None)

    def _build(self, name: str, node: Node) -> types.FeelType:
        # Registered before its parts are built, so a definition may contain itself.
        holder: list[Callable[[Any], bool]] = []
        custom = types.Custom(name, lambda v: holder[0](v), shape=lambda v: holder[1](v))
        self._types[name] = custom
        check, base = self._check_of(node, True)
        shape, _ = self._check_of(node, False)
        holder.extend((check, shape))
        built = types.Custom(name, check, base, shape)
        self._types[name] = built
        return built

    def _check_of(
        self, node: Node, constrained: bool
    ) -> tuple[Callable[[Any], bool], types.FeelType | None]:
        """The definition's test; ``constrained=False`` leaves allowed values out (the
        shape that ``instance of`` checks)."""
        collection = node.get("isCollection") == "true"
        element, base = self._element_check(node, constrained)
        if not collection:
            return element, base

        def each(value: Any) -> bool:
            return isinstance(value, list) and all(v is None or element(v) for v in value)

        return each, types.ListOf(base) if base is not None else types.Simple("list")

    def _element_check(
        self, node: Node, constrained: bool
    ) -> tuple[Callable[[Any], bool], types.FeelType | None]:
        components = node.all("itemComponent")
        function = node.first("functionItem")
        if components:
            fields = [(c.attr("name"), self._check_of(c, constrained)[0]) for c in components]

            def structure(value: Any) -> bool:
                if not isinstance(value, dict):
                    return False
                return all(
                    key in value and (value[key] is None or check(value[key]))
                    for key, check in fields
                )

            return structure, types.Simple("context")
        if function is not None:
            params = tuple(
                self.require(p.attr("typeRef"), p) if p.get("typeRef") else types.ANY
                for p in function.all("parameters")
            )
            out = function.get("outputTypeRef")
            kind = types.FunctionOf(params, self.require(out, function) if out else types.ANY)
            return kind.accepts, kind
        ref = node.child_text("typeRef") or node.get("typeRef")
        base = self.require(ref, node) if ref else None
        allowed_node = node.first("allowedValues") or node.first("typeConstraint")
        allowed = self._tests(allowed_node) if allowed_node is not None else None

        def narrowed(value: Any) -> bool:
            if base is not None and not (
                base.accepts(value) if constrained else base.instance(value)
            ):
                return False
            if allowed is None or not constrained:
                return True
            return allowed.run_in(Env({}, None, Run()), value) is True

        return narrowed, base

    def _tests(self, node: Node) -> UnaryTests:
        text = node.child_text("text") if node.first("text") is not None else node.text.strip()
        try:
            return compile_unary_tests(text or "-", self._names, self.resolve)
        except ExpressionError as exc:
            raise DeploymentError(problem(node, str(exc)), self._resource) from None


def conform(value: Any, kind: types.FeelType | None) -> Any:
    """``value`` where ``kind`` is declared: as is, converted (singleton lists, a date as a
    date and time), or null when it does not conform."""
    if kind is None or value is None or kind.accepts(value):
        return value
    if isinstance(value, list) and len(value) == 1 and kind.accepts(value[0]):
        return value[0]
    if kind.accepts([value]):
        return [value]
    if (
        isinstance(value, dt.date)
        and not isinstance(value, dt.datetime)
        and kind.accepts(dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC))
    ):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    return None
