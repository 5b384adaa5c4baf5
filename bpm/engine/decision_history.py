"""The decision history of one evaluation: a decision instance for the decision asked for
and one for each decision it required (pointing to it), with the table's inputs, each
matched rule's outputs (rule id and position) and a COLLECT aggregation's value."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, replace
from typing import Any

from bpm import dmn
from bpm.dmn.model import Element, Evaluation
from bpm.dmn.tables import TableHit
from bpm.feel.jsonvalues import to_json
from bpm.runtime.records import DecisionDefinition, DecisionInstance


@dataclass(frozen=True)
class Caller:
    """Who evaluates, for the history: a business rule task of a process instance."""

    process_definition_id: str | None = None
    process_definition_key: str | None = None
    process_instance_id: str | None = None
    activity_id: str | None = None
    tenant_id: str | None = None


def history_rows(
    model: dmn.DecisionModel,
    definition: DecisionDefinition,
    evaluation: Evaluation,
    rules: list[dict[str, Any]],
    now: dt.datetime,
    caller: Caller,
) -> list[DecisionInstance]:
    root = _instance(definition.key, definition.name, definition, evaluation, now, caller, None)
    root = _with_outputs(root, _find(model, definition.key), evaluation, rules)
    rows = [root]
    for element in model.decision_elements:
        if element.id == definition.key or element.name not in evaluation.decisions:
            continue
        child = _instance(element.id, element.name, definition, evaluation, now, caller, root.id)
        value = evaluation.decisions[element.name]
        rows.append(_with_outputs(child, element, evaluation, [{element.name: value}]))
    return rows


def _find(model: dmn.DecisionModel, key: str) -> Element:
    return model.element(key)


def _instance(
    key: str,
    name: str | None,
    definition: DecisionDefinition,
    evaluation: Evaluation,
    now: dt.datetime,
    caller: Caller,
    root_id: str | None,
) -> DecisionInstance:
    return DecisionInstance(
        id=str(uuid.uuid4()),
        definition_id=definition.id if root_id is None else f"{definition.drd_id}#{key}",
        definition_key=key,
        evaluated_at=now,
        inputs=(),
        outputs=(),
        definition_name=name,
        drd_id=definition.drd_id,
        drd_key=definition.drd_key,
        process_definition_id=caller.process_definition_id,
        process_definition_key=caller.process_definition_key,
        process_instance_id=caller.process_instance_id,
        activity_id=caller.activity_id,
        root_id=root_id,
        tenant_id=caller.tenant_id or definition.tenant_id,
    )


def _with_outputs(
    row: DecisionInstance,
    element: Element,
    evaluation: Evaluation,
    rules: list[dict[str, Any]],
) -> DecisionInstance:
    hit: TableHit | None = None
    if element.table is not None:
        hit = next((h for h in reversed(evaluation.hits) if h.table_id == element.table.id), None)
    if hit is None:
        plain = tuple(
            {"id": None, "name": name, "rule_id": None, "rule_order": None, "variable": name,
             "value": to_json(value)}
            for rule in rules
            for name, value in rule.items()
        )  # fmt: skip
        return _replace(row, outputs=plain)
    inputs = tuple(
        {"id": clause_id, "name": label, "value": to_json(value)}
        for clause_id, (label, value) in zip(hit.input_ids, hit.inputs, strict=True)
    )
    outputs: list[dict[str, Any]] = []
    aggregated = element.table is not None and element.table.aggregation is not None
    for order, (rule_id, row_values) in enumerate(zip(hit.matched, hit.outputs, strict=True)):
        for (name, value), clause_id in zip(row_values.items(), hit.output_ids, strict=True):
            outputs.append(
                {"id": clause_id, "name": name, "rule_id": rule_id,
                 "rule_order": hit.orders[order], "variable": name, "value": to_json(value)}
            )  # fmt: skip
    collect = to_json(hit.result) if aggregated else None
    return _replace(row, inputs=inputs, outputs=tuple(outputs), collect_result=collect)


def _replace(row: DecisionInstance, **changes: Any) -> DecisionInstance:
    return replace(row, **changes)
