"""Deploy checks of decision tasks (business rule tasks that evaluate a DMN decision)."""

from __future__ import annotations

from collections.abc import Iterator

from bpm.errors import Problem
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel
from bpm.timeexpr import variable_name

__all__ = ["check_decisions"]


def _at(node: n.Node, message: str) -> Problem:
    return Problem(message, node.id, node.line, element_type=element_type(node))


def check_decisions(model: ProcessModel) -> Iterator[Problem]:
    """A decision named (an id or ``${var}``), a known result mapping, a version for the
    ``version`` and ``versionTag`` bindings, a result variable to map onto."""
    for node in model.nodes.values():
        if not isinstance(node, n.DecisionTask):
            continue
        ref = node.decision.strip()
        if not ref:
            yield _at(
                node,
                f"business rule task '{node.id}' names no decision: set camunda:decisionRef "
                "(or zeebe:calledDecision decisionId) to the id of a deployed DMN decision",
            )
        elif ("${" in ref or "#{" in ref) and variable_name(ref) is None:
            yield _at(
                node,
                f"decision reference '{ref}' of '{node.id}' is an expression: write the "
                "decision id, or ${name} to read it from a variable",
            )
        if node.map_result not in n.MAP_RESULTS:
            yield _at(
                node,
                f"business rule task '{node.id}' maps its result with '{node.map_result}', "
                "which is not a decision result mapping: use singleEntry, singleResult, "
                "collectEntries or resultList (camunda:mapDecisionResult)",
            )
        version = (node.version or "").strip()
        if node.binding is n.CallBinding.VERSION and not version.isdigit():
            yield _at(
                node,
                f"business rule task '{node.id}' binds version {version or '(none)'}: the "
                "version binding needs camunda:decisionRefVersion, a whole number",
            )
        if node.binding is n.CallBinding.VERSION_TAG and not version:
            yield _at(
                node,
                f"business rule task '{node.id}' binds by version tag but names none: set "
                "camunda:decisionRefVersionTag",
            )
        if node.result_variable is not None and not node.result_variable.strip():
            yield _at(node, f"business rule task '{node.id}' has an empty result variable")
