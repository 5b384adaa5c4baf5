"""``load``: DMN XML (and the models it imports) into a :class:`DecisionModel`.

Everything is checked and compiled here, once: references between elements (``href``),
requirement cycles, item definitions, every FEEL text. A model that cannot run is refused
with a :class:`DeploymentError` naming the element and its line; nothing half-loaded is
returned.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from bpm.dmn.boxed import compile_logic, expression_child, formal_parameters
from bpm.dmn.compiling import Compiling
from bpm.dmn.itemdefs import ItemDefinitions
from bpm.dmn.model import DecisionModel, Element, TableShape
from bpm.dmn.tables import MULTI, POLICY_ALIASES
from bpm.dmn.xml import Node, problem, read_dmn_xml
from bpm.errors import DeploymentError, Problem
from bpm.feel import types

Source = str | bytes | Path
DRG_TAGS = ("decision", "inputData", "businessKnowledgeModel", "decisionService")


def _read(source: Source) -> tuple[bytes | str, str | None, Path | None]:
    if isinstance(source, Path) or (
        isinstance(source, str) and not source.lstrip().startswith("<") and os.path.exists(source)
    ):
        path = Path(source)
        return path.read_bytes(), path.name, path
    return source, None, None


class _Document:
    """One parsed DMN file, before its elements are linked and compiled."""

    def __init__(self, root: Node, resource: str | None, path: Path | None) -> None:
        self.root = root
        self.resource = resource
        self.path = path
        self.namespace = root.attr("namespace")
        self.name = root.attr("name")


def load(source: Source, *, imports: Iterable[Source] = (), strict: bool = True) -> DecisionModel:
    """Load a DMN model from a path or XML text; ``imports`` are the files its ``<import>``
    elements name (matched by namespace; a file beside ``source`` is found by its
    ``locationURI`` too).

    ``strict=False`` keeps a model whose FEEL texts do not all compile: each such text
    evaluates to null and is listed in ``model.problems`` (the TCK runner loads this way,
    as other engines run the valid parts of a model with errors). Structural errors are
    refused either way.
    """
    data, resource, path = _read(source)
    main = _Document(read_dmn_xml(data, resource), resource, path)
    library: dict[str, _Document] = {}
    for extra in imports:
        extra_data, extra_resource, extra_path = _read(extra)
        doc = _Document(read_dmn_xml(extra_data, extra_resource), extra_resource, extra_path)
        library.setdefault(doc.namespace, doc)
    return _Linker(main, library, [] if not strict else None).link()


class _Linker:
    def __init__(
        self, main: _Document, library: dict[str, _Document], deferred: list[Problem] | None
    ) -> None:
        self.deferred = deferred
        self.main = main
        self.library = library
        self.elements: list[Element] = []
        self.by_ref: dict[tuple[str, str], Element] = {}
        self.nodes: dict[Element, Node] = {}
        self.doc_of: dict[Element, _Document] = {}
        self.types: dict[str, ItemDefinitions] = {}
        self.imports: dict[str, dict[str, str]] = {}  # model namespace -> import namespace -> name
        self.seen: set[str] = set()

    def fail(self, doc: _Document, node: Node | None, message: str) -> DeploymentError:
        return DeploymentError(problem(node, message), doc.resource or self.main.resource)

    def link(self) -> DecisionModel:
        self._collect(self.main, ())
        names = self._names()
        for ns, defs in self.types.items():
            defs.imported = {
                name: self.types[imp]
                for imp, name in self.imports.get(ns, {}).items()
                if imp in self.types
            }
        for defs in self.types.values():
            defs.check_all()
        for element in self.elements:
            self._requirements(element)
        self._check_cycles()
        for element in self.elements:
            self._compile(element, names)
        source = self.main.root.attr("name")
        model = DecisionModel(
            source,
            self.main.namespace,
            self.elements,
            self.main.resource or source,
            self.main.root.attr("id"),
        )
        model.problems = list(self.deferred or ())
        return model

    # --- documents and elements ----------------------------------------------------------

    def _collect(self, doc: _Document, path: tuple[str, ...]) -> None:
        if doc.namespace in self.seen:
            return
        self.seen.add(doc.namespace)
        root = doc.root
        names = tuple(sorted({n.attr("name") for n in _walk(root) if n.get("name")}))
        self.types[doc.namespace] = ItemDefinitions(root.all("itemDefinition"), names, doc.resource)
        own: dict[str, Element] = {}
        for node in root.dmn_children():
            if node.tag not in DRG_TAGS:
                continue
            variable = node.first("variable")
            name = node.get("name") or (variable.get("name") if variable is not None else None)
            if not name:
                raise self.fail(doc, node, f"<{node.tag}> has no name")
            if name in own:
                raise self.fail(
                    doc, node, f"two DRG elements are named {name!r}; names must be unique"
                )
            element = Element(node.tag, node.get("id") or name, name, doc.namespace, path)
            own[name] = element
            self.elements.append(element)
            self.by_ref[(doc.namespace, element.id)] = element
            self.nodes[element] = node
            self.doc_of[element] = doc
        for imp in root.all("import"):
            namespace = imp.attr("namespace")
            target = self._import(doc, imp, namespace)
            prefix = imp.attr("name")
            self.imports.setdefault(doc.namespace, {})[namespace] = prefix
            self._collect(target, (*path, prefix) if prefix else path)

    def _import(self, doc: _Document, imp: Node, namespace: str) -> _Document:
        if namespace in self.library:
            return self.library[namespace]
        location = imp.get("locationURI")
        if location and doc.path is not None:
            candidate = (doc.path.parent / location).resolve()
            if candidate.is_file() and candidate.is_relative_to(doc.path.parent.resolve()):
                data = candidate.read_bytes()
                found = _Document(read_dmn_xml(data, candidate.name), candidate.name, candidate)
                if found.namespace == namespace:
                    self.library[namespace] = found
                    return found
        raise self.fail(
            doc,
            imp,
            f"the import of namespace {namespace!r} was not given: pass its file in "
            "load(..., imports=[...])",
        )

    def _names(self) -> tuple[str, ...]:
        names: set[str] = set()
        for doc in {*self.library.values(), self.main}:
            names.update(n.attr("name") for n in _walk(doc.root) if n.get("name"))
            names.update(
                n.attr("iteratorVariable") for n in _walk(doc.root) if n.get("iteratorVariable")
            )
        return tuple(sorted(n for n in names if n))

    # --- requirements ---------------------------------------------------------------------

    def _resolve(self, element: Element, ref: Node) -> tuple[Element, str | None]:
        doc = self.doc_of[element]
        href = ref.attr("href")
        namespace, _, ident = href.rpartition("#")
        namespace = namespace or element.namespace
        target = self.by_ref.get((namespace, ident))
        if target is None:
            raise self.fail(
                doc, ref, f"{self.nodes[element].label()}: href {href!r} names no element"
            )
        prefix = None
        if namespace != element.namespace:
            prefix = self.imports.get(element.namespace, {}).get(namespace)
            if prefix is None:
                raise self.fail(doc, ref, f"href {href!r} points into a model that is not imported")
        return target, prefix or None

    def _requirements(self, element: Element) -> None:
        node = self.nodes[element]
        refs: list[Node] = []
        for req in node.all("informationRequirement") + node.all("knowledgeRequirement"):
            refs.extend(
                c
                for c in req.dmn_children()
                if c.tag in ("requiredDecision", "requiredInput", "requiredKnowledge")
            )
        element.requirements = [self._resolve(element, r) for r in refs]
        if element.kind == "decisionService":
            for tag, bucket in (
                ("outputDecision", element.outputs),
                ("encapsulatedDecision", element.encapsulated),
                ("inputDecision", element.input_decisions),
                ("inputData", element.input_data),
            ):
                bucket.extend(self._resolve(element, r)[0] for r in node.all(tag))
            if not element.outputs:
                raise self.fail(
                    self.doc_of[element], node, "a decision service needs an outputDecision"
                )

    def _check_cycles(self) -> None:
        state: dict[Element, int] = {}

        def visit(element: Element, trail: list[Element]) -> None:
            if state.get(element) == 2:
                return
            if state.get(element) == 1:
                loop = " -> ".join(e.name for e in [*trail[trail.index(element) :], element])
                raise self.fail(
                    self.doc_of[element], self.nodes[element], f"requirement cycle: {loop}"
                )
            state[element] = 1
            for required, _ in element.requirements:
                if required.kind == "decision" or element.kind == "decision":
                    visit(required, [*trail, element])
            state[element] = 2

        for element in self.elements:
            if element.kind == "decision":
                visit(element, [])

    # --- compiling ----------------------------------------------------------------------

    def _compile(self, element: Element, names: tuple[str, ...]) -> None:
        node = self.nodes[element]
        doc = self.doc_of[element]
        c = Compiling(names, self.types[element.namespace], doc.resource, self.deferred)
        variable = node.first("variable")
        ref = variable.get("typeRef") if variable is not None else None
        element.type = c.type_of(ref, variable) if ref and variable is not None else None
        if element.kind == "decision":
            logic_node = expression_child(node)
            element.logic = compile_logic(logic_node, c)
            if logic_node is not None and logic_node.tag == "decisionTable":
                element.table = TableShape(
                    logic_node.get("id"),
                    tuple(o.get("name") for o in logic_node.all("output")),
                    (logic_node.get("aggregation") or "").upper() or None,
                    _policy(logic_node.get("hitPolicy")) in MULTI,
                )
        elif element.kind == "businessKnowledgeModel":
            logic = node.first("encapsulatedLogic")
            if logic is not None:
                element.params = formal_parameters(logic, c)
                element.logic = compile_logic(expression_child(logic), c)
                out = logic.get("typeRef")
                element.result_type = c.type_of(out, logic) if out else None
        elif element.kind == "decisionService":
            # The service's variable types the function it is: its output type is what
            # the service must return.
            declared = element.type
            base = declared.base if isinstance(declared, types.Custom) else declared
            element.result_type = base.result if isinstance(base, types.FunctionOf) else None
            element.type = None


def _walk(node: Node) -> Iterable[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _policy(text: str | None) -> str:
    policy = (text or "UNIQUE").strip().upper()
    return POLICY_ALIASES.get(policy, policy)
