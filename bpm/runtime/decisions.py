"""Decision tasks: a business rule task evaluates a deployed DMN decision in the step's own
transaction, writes the mapped result, and the token moves on (no worker round trip).

The runtime reaches deployed decisions only through a :class:`Decider`, which the unit of
work implements (it holds the transaction: the decision instance history is written in
it, linked to the process instance). A decision that cannot be found or evaluated, or
whose result does not fit its mapping, fails the token with a ``failedDecision`` incident;
nothing of that evaluation is recorded, and retrying the incident evaluates again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bpm.errors import BpmError
from bpm.model import nodes as n
from bpm.runtime.records import Token
from bpm.runtime.variables import reference

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

DECISION_INCIDENT = "failedDecision"
"""Incident type of a business rule task whose decision could not be evaluated."""


def decision_key(node: n.DecisionTask, seen: Mapping[str, Any]) -> str:
    """The decision id ``node`` names (``${var}``: the variable's value; ``=FEEL``: the
    expression's)."""
    return reference(node.decision, seen, "a decision to evaluate")


def decision_task(walker: Walk, tok: Token, node: n.DecisionTask) -> None:
    """Evaluate the decision, write its result, move on; an error is an incident."""
    if not walker.enter_activity(tok):
        return
    decider = walker.decider
    if decider is None:
        walker.fail_token(
            tok, f"business rule task '{node.id}': decisions need an engine",
            incident_type=DECISION_INCIDENT,
        )  # fmt: skip
        return
    seen = walker.variables(tok)
    try:
        key = decision_key(node, seen)
        decided = decider.decide(walker, tok, node, key, seen)
        if decided.updates:
            walker.write_variables(tok, decided.updates)
    except BpmError as exc:  # NotFound, a FEEL error, DecisionResultError, VariableError
        walker.fail_token(
            tok,
            f"business rule task '{node.id}': {exc}",
            incident_type=DECISION_INCIDENT,
        )
        return
    decider.record(decided)
    walker.work.record(
        "decision_evaluated", token_id=tok.id, node_id=node.id, payload=decided.payload
    )
    walker.leave(tok)
