"""Every kind of node, in every table that lists kinds (issue 20).

``data/kinds/every_kind.bpmn`` holds every node class and every trigger in every position
the engine accepts; ``data/kinds/stored_1ef2dda.json`` is that file's compiled models as
main wrote them (``ProcessModel.to_dict``) before the kinds registry, with their checksums:
stored definitions must keep loading, to the same model and the same checksum.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from bpm.bpmn import parse_bpmn
from bpm.bpmn.elements import ELEMENTS
from bpm.bpmn.parser import parse_bpmn_file
from bpm.cockpit.diagram import DRAW, model_to_bpmn
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import _KINDS, ProcessModel
from bpm.runtime.activities import activity_type
from bpm.runtime.behaviours import BEHAVIOURS

DATA = Path(__file__).parent / "data" / "kinds"
EVERY = parse_bpmn_file((DATA / "every_kind.bpmn").read_text()).models
NODES = [node for model in EVERY for node in model.nodes.values()]

NODE_CLASSES = sorted(
    (
        cls
        for _, cls in inspect.getmembers(n, inspect.isclass)
        if issubclass(cls, n.Node) and cls not in (n.Node, n.Activity)
    ),
    key=lambda cls: cls.__name__,
)

NOT_DRAWN = frozenset(
    {"name", "handler", "topic", "result_variable", "assignee", "candidate_groups"}
    | {"map_result", "all_in", "loop", "line"}
)
"""What the cockpit's drawing leaves out of a node: how it runs (handlers, topics, people,
result mapping), not what it is; nor its source line. A task without a name is drawn with
its id as name."""


def test_every_node_class_is_in_the_sample_file() -> None:
    found = {type(node) for node in NODES}
    assert [c.__name__ for c in NODE_CLASSES if c not in found] == []


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=lambda c: c.__name__)
def test_every_node_class_is_in_every_table(cls: type[n.Node]) -> None:
    assert cls in _KINDS.values(), "no JSON name"
    assert cls in BEHAVIOURS, "no behaviour"
    assert cls in DRAW, "no drawing"
    for node in (x for x in NODES if type(x) is cls):
        assert activity_type(node) != "unknown"
        assert element_type(node).removeprefix("bpmn:") in ELEMENTS


def test_every_parsed_tag_is_a_flow_element() -> None:
    # the parser's table holds what a process may contain; nothing else is parsed
    assert set(ELEMENTS) >= {"startEvent", "endEvent", "boundaryEvent", "sequenceFlow"}


def _without(node: n.Node, names: frozenset[str]) -> dict[str, Any]:
    return {f.name: getattr(node, f.name) for f in dataclasses.fields(node) if f.name not in names}


@pytest.mark.parametrize("model", EVERY, ids=lambda m: m.key)
def test_json_then_drawing_then_parse_gives_the_same_kinds(model: ProcessModel) -> None:
    stored = ProcessModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert stored == model
    again = parse_bpmn(model_to_bpmn(stored))
    assert set(again.nodes) == set(model.nodes)
    for node_id, node in model.nodes.items():
        drawn = again.nodes[node_id]
        assert type(drawn) is type(node), node_id
        assert _without(drawn, NOT_DRAWN) == _without(node, NOT_DRAWN), node_id
    assert {(f.id, f.source, f.target, f.condition) for f in again.flows} == {
        (f.id, f.source, f.target, f.condition) for f in model.flows
    }


def test_sub_processes_are_drawn_as_containers() -> None:
    model = next(m for m in EVERY if m.key == "compensation_esp")
    xml = model_to_bpmn(model)
    again = parse_bpmn(xml)
    assert again.nodes["c_comp_start"].container == "c_comp_esp"
    assert again.nodes["c_comp_esp"].container == "c_sub"
    assert 'triggeredByEvent="true"' in xml


def test_script_tasks_are_drawn_as_script_tasks() -> None:
    model = next(m for m in EVERY if m.key == "tasks")
    again = parse_bpmn(model_to_bpmn(model))
    script = again.nodes["script_cel"]
    assert isinstance(script, n.ScriptTask) and script.script == "1 + 2" and script.is_cel


def test_models_stored_before_the_registry_still_load() -> None:
    stored = json.loads((DATA / "stored_1ef2dda.json").read_text())
    assert len(stored["models"]) == len(EVERY)
    for entry, model in zip(stored["models"], EVERY, strict=True):
        loaded = ProcessModel.from_dict(entry["model"])
        assert loaded == model
        assert loaded.checksum() == entry["checksum"]  # a redeploy is not a new version
