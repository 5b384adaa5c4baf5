"""The three structure figures of issue 20, measured from the source alone (``ast``, no import).

``python -m bench.structure`` prints, for the ``bpm`` package of the current directory:

* **circles**: import circles between modules of ``bpm`` (strongly connected groups of more
  than one module), counting every import, also those only made for type hints under
  ``if TYPE_CHECKING:`` and those inside functions. ``from pkg import name`` is an edge to
  ``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``); a package's parents
  are not counted (as grimp does), so a circle is one a reader can follow by the names.
* **inner imports**: ``import`` statements inside a function in the core packages
  (``bpm/model``, ``runtime``, ``engine``, ``store``, ``bpmn``, ``kinds``): what ruff's
  PLC0415 reports.
* **isinstance on concrete kinds** outside ``bpm/model`` and ``bpm/kinds``: ``isinstance``
  calls whose class (or one of a tuple's) is a concrete node class of ``bpm/model/nodes.py``
  (one that says a non-empty ``json_name``). Abstract bases (``Node``, ``Activity``) and
  values (``Flow``) are not kinds and are not counted.

``--list`` names every circle, inner import and isinstance call; ``--json`` prints the figures
as one JSON object (for notes and CI).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

CORE = ("model", "runtime", "engine", "store", "bpmn", "kinds")
"""The packages of ``bpm`` that may not import inside a function."""

KIND_HOMES = ("model", "kinds")
"""Where a concrete kind may be named."""


@dataclass(frozen=True)
class Figures:
    """What :func:`measure` finds; the ``*_at`` lists say where."""

    circles: list[list[str]]
    inner_imports_at: list[str]
    isinstance_at: list[str]

    def summary(self) -> dict[str, int]:
        return {
            "circles": len(self.circles),
            "inner_imports": len(self.inner_imports_at),
            "isinstance_concrete": len(self.isinstance_at),
        }


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted(root.rglob("*.py"))}


def resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of ``bpm`` that ``name`` imports anywhere in its body."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(name, is_package, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    found.add(sub)
                elif base in known:
                    found.add(base)
    found.discard(name)
    return found


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; only the groups of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def inner_imports(path: Path, shown: str) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(func):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    yield f"{shown}:{node.lineno}"


def concrete_kinds(root: Path) -> set[str]:
    """Node classes of ``model/nodes.py`` that say a non-empty ``json_name``."""
    tree = ast.parse((root / "model" / "nodes.py").read_text())
    found: set[str] = set()
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for stmt in cls.body:
            target = getattr(stmt, "target", None)
            value = getattr(stmt, "value", None)
            if (
                isinstance(target, ast.Name)
                and target.id == "json_name"
                and isinstance(value, ast.Constant)
                and value.value
            ):
                found.add(cls.name)
    return found


def class_names(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Tuple):
        for element in node.elts:
            yield from class_names(element)
    elif isinstance(node, ast.BinOp):  # isinstance(x, A | B)
        yield from class_names(node.left)
        yield from class_names(node.right)
    elif isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr


def isinstance_calls(path: Path, shown: str, kinds: set[str]) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            named = sorted(set(class_names(node.args[1])) & kinds)
            if named:
                yield f"{shown}:{node.lineno} {'|'.join(named)}"


def measure(root: Path) -> Figures:
    """The figures for the package at ``root`` (a directory named ``bpm``)."""
    known = modules(root)
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    kinds = concrete_kinds(root)
    inner: list[str] = []
    calls: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        shown = str(path.relative_to(root.parent))
        if rel.parts[0] in CORE:
            inner.extend(inner_imports(path, shown))
        if rel.parts[0] not in KIND_HOMES:
            calls.extend(isinstance_calls(path, shown, kinds))
    return Figures(strongly_connected(graph), inner, calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("bpm"), help="the bpm package")
    parser.add_argument("--list", action="store_true", help="name every finding")
    parser.add_argument("--json", action="store_true", help="figures as JSON")
    args = parser.parse_args(argv)
    figures = measure(args.root.resolve())
    if args.json:
        print(json.dumps(figures.summary()))
        return 0
    for key, value in figures.summary().items():
        print(f"{key}: {value}")
    if args.list:
        for group in figures.circles:
            print("circle:", " <-> ".join(group))
        for where in figures.inner_imports_at:
            print("inner import:", where)
        for where in figures.isinstance_at:
            print("isinstance:", where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
