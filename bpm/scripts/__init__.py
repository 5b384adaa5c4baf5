"""Python scripts, sandboxed: compiled once with RestrictedPython (:mod:`.policy`), run in a
forked child bounded in CPU time and memory (:mod:`.sandbox`), forked by a small sandbox
process (:mod:`.server`) a worker starts once (:mod:`.client`).

A script sees the variables as names; what it assigns (or changes in place) at its top
level becomes the variable updates, as in SpiffWorkflow; the value of its last expression
is its result (``camunda:resultVariable``). Scripts run on workers, as inline steps do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.errors import StepFailed
from bpm.scripts.client import run_in_sandbox
from bpm.scripts.policy import ALLOWED_MODULES, CompiledScript, ScriptError, compile_python
from bpm.scripts.sandbox import Limits, ScriptOutcome, run

__all__ = [
    "ALLOWED_MODULES",
    "PYTHON_SCRIPT",
    "CompiledScript",
    "Limits",
    "ScriptError",
    "ScriptOutcome",
    "compile_python",
    "is_python",
    "run",
    "run_in_sandbox",
    "run_step",
]

PYTHON_SCRIPT = "bpm:python"
"""The handler name of a Python script run in the sandbox (a built-in every handler
registry resolves): the handler of a ``scriptFormat="python"`` task without ``bpm:handler``."""


def is_python(language: str | None) -> bool:
    """Whether a ``scriptFormat`` or ``language`` names Python."""
    return (language or "").strip().lower() in ("python", "python3", "py")


def run_step(
    what: str,
    source: str,
    variables: Mapping[str, Any],
    result_variable: str | None = None,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """Run a script of a step (``what`` names it in errors) and return the variables to
    set. A failure is final for the step (a script fails the same way every time):
    :class:`StepFailed` without retries, so an incident follows."""
    try:
        compile_python(source)  # refused here without a round trip (deploy refused it too)
        outcome = run_in_sandbox(source, variables, limits or Limits.from_env())
    except ScriptError as exc:
        raise StepFailed(f"script of {what}: {exc}", retry=False) from None
    updates = dict(outcome.updates)
    if result_variable:
        updates[result_variable] = outcome.result
    return updates
