"""A decision's rule results mapped onto one variable, as Camunda 7's ``mapDecisionResult``.

``rules`` is :meth:`bpm.dmn.DecisionModel.evaluate_rules`'s answer: one dict per matched
rule (output name -> value). The four mappings of Camunda 7 (its business rule task and
``DmnDecisionResult``):

==================  =================================================================
``singleEntry``     the one output of the one matched rule (null when none matched)
``singleResult``    the one matched rule's outputs as a dict (null when none matched)
``collectEntries``  the one output of every matched rule, as a list
``resultList``      every matched rule's outputs, as a list of dicts (the default)
==================  =================================================================

A result that does not fit its mapping (two rules for ``singleResult``, two outputs for
``singleEntry``) raises :class:`DecisionResultError`, as Camunda does.
"""

from __future__ import annotations

from typing import Any

from bpm.errors import BpmError

MAPPINGS = ("singleEntry", "singleResult", "collectEntries", "resultList")


class DecisionResultError(BpmError):
    """A decision result does not fit the ``mapDecisionResult`` asked for."""


def map_result(rules: list[dict[str, Any]], mapping: str = "resultList") -> Any:
    """The variable value of ``rules`` under ``mapping`` (one of :data:`MAPPINGS`)."""
    if mapping == "resultList":
        return [dict(rule) for rule in rules]
    if mapping == "collectEntries":
        values: list[Any] = []
        for rule in rules:
            if len(rule) != 1:
                raise DecisionResultError(
                    f"collectEntries needs one output per rule, a rule gave {sorted(rule)}: "
                    "use resultList"
                )
            values.extend(rule.values())
        return values
    if mapping not in ("singleEntry", "singleResult"):
        raise DecisionResultError(
            f"mapDecisionResult {mapping!r} is not one of {', '.join(MAPPINGS)}"
        )
    if not rules:
        return None
    if len(rules) > 1:
        raise DecisionResultError(
            f"{mapping} needs at most one matched rule, {len(rules)} matched: use "
            "collectEntries or resultList, or a single-hit policy"
        )
    (rule,) = rules
    if mapping == "singleResult":
        return dict(rule)
    if len(rule) != 1:
        raise DecisionResultError(
            f"singleEntry needs one output, the rule gave {sorted(rule)}: use singleResult"
        )
    return next(iter(rule.values()))
