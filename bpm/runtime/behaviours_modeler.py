"""What tokens do at the node kinds that models from other modelers bring (issue 9).

* ``task``, ``manualTask`` and a none ``intermediateThrowEvent`` (:class:`PassThrough`): the
  token moves on at once, in the same transaction.
* A CEL script task: the expression is evaluated over the instance variables, its value
  stored in the result variable, and the token moves on; a failure (an error in the
  expression, a value that is not JSON) fails the token with a ``failedScript`` incident.
* A script task in any other language: exactly an inline service task whose handler is
  named by the task id; the handler finds the script text on ``ctx.script``.

Nodes without outgoing flows need nothing here: :meth:`Flow.leave` with no flow completes
the token, and the instance completes when no token is left (BPMN's implicit end).
Imported by :mod:`bpm.engine.definitions`, which every engine loads.
"""

from __future__ import annotations

from bpm.errors import BpmError
from bpm.expressions import compile_expression
from bpm.model import nodes as n
from bpm.runtime.advance import BEHAVIOURS, Flow, behaviour
from bpm.runtime.records import Token

__all__ = ["SCRIPT_INCIDENT"]

SCRIPT_INCIDENT = "failedScript"
"""Incident type of a CEL script that could not be evaluated or stored."""


@behaviour(n.PassThrough)
def _pass_through(flow: Flow, tok: Token, node: n.PassThrough) -> None:
    flow.leave(tok)


@behaviour(n.ScriptTask)
def _script(flow: Flow, tok: Token, node: n.ScriptTask) -> None:
    if not node.is_cel:
        BEHAVIOURS[n.ServiceTask](flow, tok, node)  # an inline step like any other
        return
    w = flow.work
    try:
        value = compile_expression(node.script or "").evaluate(w.instance.variables)
        if node.result_variable:
            w.merge_variables({node.result_variable: value}, source=node.id, token_id=tok.id)
    except BpmError as exc:  # ExpressionError, VariableError: the model's or the data's fault
        flow.fail_token(tok, f"script of {node.id}: {exc}", incident_type=SCRIPT_INCIDENT)
        return
    flow.leave(tok)
