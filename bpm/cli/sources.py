"""What ``bpm deploy`` and ``bpm run`` take: a ``.bpmn`` / ``.dmn`` file, or a Python
builder process.

- ``order.bpmn``, ``pricing.dmn``: the file (any file that is not ``.py``).
- ``loan.py``: the builder ``Process`` the file defines at module level (``bpm deploy``
  deploys every one; ``bpm run`` needs exactly one, or the attribute named).
- ``loan.py:process``: the attribute ``process`` of that file.
- ``loans.models:process``: the attribute ``process`` of an importable module (resolved
  from the current directory first, like ``celery -A``).

A Python file is imported as a module named after it, with its own directory on
``sys.path``; its ``@service_task`` handlers are registered by the import, so a builder
process and its handlers can live in one file.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bpm.cli.app import fail

__all__ = ["Source", "load_source"]


@dataclass(frozen=True)
class Source:
    """A file to deploy as it is (``path``), or the builder processes of a Python source,
    each with the name it has there (``loan.py:process``)."""

    spec: str
    path: Path | None = None
    processes: tuple[tuple[str, Any], ...] = ()


def _is_process(value: Any) -> bool:
    from bpm.builder import Process
    from bpm.model.process import ProcessModel

    return isinstance(value, Process | ProcessModel)


def _import_file(path: Path) -> ModuleType:
    name = path.stem
    if not name.isidentifier():
        fail(f"{path}: a Python file to load must have a module name (letters, digits, _)")
    folder = str(path.resolve().parent)
    for entry in (folder, os.getcwd()):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) != str(path.resolve()):
        name = f"_bpm_source_{name}"  # e.g. a types.py: never replace a module in use
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    if spec is None or spec.loader is None:
        fail(f"{path}: cannot be loaded as a Python module")
        raise AssertionError("unreachable")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader = spec.loader
    _run(lambda: loader.exec_module(module), str(path))
    return module


def _import_module(name: str, spec: str) -> ModuleType:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    if found is None:
        fail(f"{spec}: no module named '{name}' (run from the folder it is importable from)")
    module: ModuleType | None = None

    def load() -> None:
        nonlocal module
        module = importlib.import_module(name)

    _run(load, spec)
    assert module is not None
    return module


def _run(load: Any, spec: str) -> None:
    """Import the user's module; an exception in it is one line naming its file and line."""
    try:
        load()
    except SystemExit:
        raise
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        fail(f"cannot load {spec}: {type(exc).__name__}: {exc}{where}")


def load_source(spec: str) -> Source:
    """The file or builder processes ``spec`` names (see the module docstring)."""
    path_part, _, attr = spec.partition(":")
    if attr and not Path(spec).exists() and Path(path_part).suffix != ".py":
        if not all(p.isidentifier() for p in path_part.split(".")) or not attr.isidentifier():
            fail(f"{spec} is not a file, nor MODULE:ATTRIBUTE")
        return _from_module(spec, _import_module(path_part, spec), attr)
    path = Path(path_part if attr else spec)
    if not path.is_file():
        fail(f"{path} is not a file")
    if path.suffix != ".py":
        if attr:
            fail(f"{spec}: only a Python file has attributes (FILE.py:ATTRIBUTE)")
        return Source(spec, path=path)
    if attr and not attr.isidentifier():
        fail(f"{spec}: '{attr}' is not an attribute name")
    return _from_module(spec, _import_file(path), attr or None)


def _from_module(spec: str, module: ModuleType, attr: str | None) -> Source:
    where = spec.partition(":")[0]
    if attr is not None:
        if not hasattr(module, attr):
            fail(f"{where} has no attribute '{attr}'")
        value = getattr(module, attr)
        if not _is_process(value):
            fail(
                f"{spec} is a {type(value).__name__}, not a builder Process "
                "(bpm.builder.Process(...))"
            )
        return Source(spec, processes=((f"{where}:{attr}", value),))
    seen: set[int] = set()
    found: list[tuple[str, Any]] = []
    for name, value in vars(module).items():
        if not name.startswith("_") and _is_process(value) and id(value) not in seen:
            seen.add(id(value))
            found.append((f"{where}:{name}", value))
    if not found:
        fail(
            f"{where} defines no builder Process at module level "
            "(e.g. process = Process('loan')...)"
        )
    return Source(spec, processes=tuple(found))
