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
from bpm.bpmn.tasks import parse_service
from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.kinds import KINDS, Kinds, activity_type, model_to_bpmn
from bpm.kinds import service_task as service_kind
from bpm.kinds.spec import ElementKind, KindError, TriggerKind
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import _KINDS, NODE_CLASSES, ProcessModel

DATA = Path(__file__).parent / "data" / "kinds"
EVERY = parse_bpmn_file((DATA / "every_kind.bpmn").read_text()).models
NEW = parse_bpmn_file((DATA / "new_kinds.bpmn").read_text()).models
"""The kinds added after the registry (the 1ef2dda fixtures hold none of them)."""
NODES = [node for model in (*EVERY, *NEW) for node in model.nodes.values()]

ALL_CLASSES = sorted(
    (
        cls
        for _, cls in inspect.getmembers(n, inspect.isclass)
        if issubclass(cls, n.Node) and cls not in (n.Node, n.Activity)
    ),
    key=lambda cls: cls.__name__,
)

NOT_DRAWN = frozenset(
    {"name", "handler", "topic", "result_variable", "assignee", "candidate_groups"}
    | {"map_result", "all_in", "all_out", "loop", "line"}
)
"""What the cockpit's drawing leaves out of a node: how it runs (handlers, topics, people,
result mapping), not what it is; nor its source line. A task without a name is drawn with
its id as name."""


def test_every_node_class_is_in_the_sample_file() -> None:
    found = {type(node) for node in NODES}
    assert [c.__name__ for c in ALL_CLASSES if c not in found] == []


def test_the_model_knows_every_node_class() -> None:
    assert set(NODE_CLASSES) == set(ALL_CLASSES)
    assert {cls.json_name for cls in NODE_CLASSES} == set(_KINDS)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_node_class_is_in_every_table(cls: type[n.Node]) -> None:
    kind = KINDS.by_node[cls]
    assert _KINDS[kind.name] is cls, "the JSON name"
    assert KINDS.behaviours[cls] is kind.behave
    for node in (x for x in NODES if type(x) is cls):
        assert activity_type(node) != "unknown"
        assert element_type(node).removeprefix("bpmn:") in kind.parse
        if kind.position is not None:  # an event position draws and names its trigger
            trigger = KINDS.trigger_of(node)
            assert trigger is None or kind.position in trigger.positions


def test_the_parsers_tag_table_is_the_registrys() -> None:
    assert dict(ELEMENTS) == dict(KINDS.parsers)


def test_activity_and_element_types_are_what_main_said_before_the_registry() -> None:
    before = json.loads((DATA / "types_1ef2dda.json").read_text())
    for model in EVERY:
        now = {k: [activity_type(v), element_type(v)] for k, v in model.nodes.items()}
        assert now == before[model.key]


def test_the_new_kinds_say_their_types() -> None:
    for model in NEW:
        for node in model.nodes.values():
            if isinstance(node, n.ComplexGateway):
                assert (activity_type(node), element_type(node)) == (
                    "complexGateway",
                    "bpmn:complexGateway",
                )


def _one_kind_changed(**changes: Any) -> Kinds:
    elements = tuple(
        dataclasses.replace(k, **changes) if k is service_kind.KIND else k for k in KINDS.elements
    )
    return Kinds(elements=elements, triggers=KINDS.triggers, hooks=KINDS.hooks)


def test_a_kind_without_a_facet_fails_when_the_registry_is_built() -> None:
    with pytest.raises(KindError, match="facet 'draw' is missing"):
        _one_kind_changed(draw=None)
    with pytest.raises(KindError, match="no builder verb 'serve'"):
        _one_kind_changed(build=("serve",))
    with pytest.raises(KindError, match="no builder verb makes it"):
        _one_kind_changed(build=())
    with pytest.raises(KindError, match="says how to find its trigger"):
        _one_kind_changed(position="boundary")


def test_a_tag_parsed_two_ways_fails_when_the_registry_is_built() -> None:
    with pytest.raises(KindError, match="<userTask> is parsed two ways"):
        _one_kind_changed(parse={"serviceTask": parse_service, "userTask": parse_service})


def test_a_node_class_without_a_kind_fails_when_the_registry_is_built() -> None:
    elements = tuple(k for k in KINDS.elements if k.node is not n.ReceiveTask)
    with pytest.raises(KindError, match="without an element kind: ReceiveTask"):
        Kinds(elements=elements, triggers=KINDS.triggers, hooks=KINDS.hooks)
    with pytest.raises(KindError, match="ServiceTask has two element kinds"):
        Kinds(
            elements=(*KINDS.elements, service_kind.KIND),
            triggers=KINDS.triggers,
            hooks=KINDS.hooks,
        )


def test_a_trigger_declared_twice_or_in_no_position_fails() -> None:
    timer = KINDS.by_trigger["timer"]
    with pytest.raises(KindError, match="declared twice"):
        Kinds(elements=KINDS.elements, triggers=(*KINDS.triggers, timer), hooks=KINDS.hooks)
    bad = TriggerKind("x", "xEventDefinition", {"middle": "x"}, timer.draw)
    with pytest.raises(KindError, match="positions must be some of"):
        Kinds(elements=KINDS.elements, triggers=(*KINDS.triggers, bad), hooks=KINDS.hooks)
    assert isinstance(KINDS.by_node[n.StartEvent], ElementKind)


def _without(node: n.Node, names: frozenset[str]) -> dict[str, Any]:
    return {f.name: getattr(node, f.name) for f in dataclasses.fields(node) if f.name not in names}


@pytest.mark.parametrize("model", (*EVERY, *NEW), ids=lambda m: m.key)
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


def every_verb() -> ProcessModel:
    """A builder process that uses every builder verb the registry names."""
    return (
        Process("verbs")
        .start("s")
        .message_start("s_msg", "placed")
        .signal_start("s_sig", "go")
        .service_task("charge", handler="charge", compensate_with="refund")
        .script_task("add", "1 + 2", result="three")
        .script_task("py", "x = 1", language="python")
        .user_task("approve", assignee="demo")
        .business_rule_task("dish", decision="dish", result_variable="dish")
        .task("nothing")
        .exclusive("xor", default="x_b")
        .parallel("fork")
        .parallel("join")
        .inclusive("or_fork", default="o_b")
        .inclusive("or_join")
        .complex("cplx", activation="activationCount >= 1")
        .timer("wait", duration="PT1H")
        .wait_until("deadline", "due")
        .receive_message("paid", "paid")
        .receive_signal("stock", "stock")
        .throw_signal("tell", "told")
        .throw_escalation("escalate", "LATE")
        .link_throw("jump", "L")
        .link_catch("land", "L")
        .event_gateway("race")
        .receive_task("reply", "reply")
        .call_activity("child", "child_process")
        .compensate("undo", activity="charge")
        .sub_process(
            "sub",
            lambda b: (
                b.start("ss")
                .user_task("inner")
                .end("se", error_code="E1")
                .sequence("ss", "inner", "se")
                .event_sub_process(
                    "esp",
                    lambda e: (
                        e.start("on_late", escalation="LATE", interrupting=False)
                        .end("noted")
                        .sequence("on_late", "noted")
                    ),
                )
            ),
        )
        .boundary_timer("sub_timer", "sub", duration="PT5M", interrupting=False)
        .boundary_error("sub_error", "sub", error_code="E1")
        .boundary_escalation("sub_escalation", "sub", escalation_code="LATE")
        .boundary_message("sub_message", "sub", "cancel")
        .boundary_signal("sub_signal", "sub", "stop", interrupting=False)
        .boundary_condition("sub_cond", "sub", "three > 5", interrupting=False)
        .wait_condition("ready", "${three == 3}", variable_name="three")
        .event_sub_process(
            "esp_cond",
            lambda e: (
                e.condition_start("on_cond", "three > 9", variable_events="create, update")
                .end("cond_done")
                .sequence("on_cond", "cond_done")
            ),
        )
        .transaction(
            "tx",
            lambda t: (
                t.start("ts")
                .task("tx_work")
                .cancel_end("tx_cancel")
                .sequence("ts", "tx_work", "tx_cancel")
            ),
        )
        .boundary_cancel("tx_cancelled", "tx")
        .ad_hoc("adhoc", lambda a: a.task("ah_one").task("ah_two"), completion="three > 2")
        .boundary_compensation("approve_undo", "approve", handler="unapprove")
        .user_task("unapprove", for_compensation=True)
        .end("e")
        .end("e_terminate", terminate=True)
        .end("e_escalation", escalation_code="LATE")
        .compensate_end("e_compensate")
        .end("e_timer")
        .end("e_message")
        .end("e_signal")
        .end("e_cond")
        .sequence("s", "charge", "add", "py", "approve", "dish", "nothing", "xor")
        .flow("s_msg", "charge")
        .flow("s_sig", "charge")
        .flow("xor", "fork", condition="three > 2", id="x_a")
        .flow("xor", "fork", id="x_b")
        .sequence("fork", "or_fork")
        .sequence("fork", "child", "join")
        .flow("or_fork", "or_join", condition="three == 3", id="o_a")
        .flow("or_fork", "or_join", id="o_b")
        .sequence("or_join", "cplx", "join", "wait", "deadline", "tell", "escalate", "jump")
        .sequence("land", "race")
        .sequence("race", "paid", "sub", "undo", "ready", "e")
        .sequence("race", "stock", "reply", "e_terminate")
        .flow("sub_timer", "e_timer")
        .flow("sub_error", "e_compensate")
        .flow("sub_escalation", "e_escalation")
        .flow("sub_message", "e_message")
        .flow("sub_signal", "e_signal")
        .flow("sub_cond", "e_cond")
        .sequence("or_fork", "tx", "or_join")
        .sequence("or_fork", "adhoc", "or_join")
        .flow("tx_cancelled", "e")
        .build()
    )


def test_every_builder_verb_the_registry_names_is_in_the_builder_sample() -> None:
    source = inspect.getsource(every_verb)
    verbs = {verb for kind in KINDS.elements for verb in kind.build}
    assert [verb for verb in sorted(verbs) if f".{verb}(" not in source] == []


def test_builder_then_json_then_drawing_then_parse_gives_the_same_kinds() -> None:
    model = every_verb()
    assert {type(x) for x in model.nodes.values()} == set(ALL_CLASSES)
    test_json_then_drawing_then_parse_gives_the_same_kinds(model)


def test_a_script_task_from_the_builder_runs_as_parsed_ones_do() -> None:
    model = every_verb()
    cel, py = model.nodes["add"], model.nodes["py"]
    assert isinstance(cel, n.ScriptTask) and cel.is_cel and cel.result_variable == "three"
    # Python runs sandboxed (bpm.scripts): no handler of the user's to register
    assert isinstance(py, n.ScriptTask) and not py.is_cel and py.is_python
    assert "py" not in model.handler_names() and "add" not in model.handler_names()


def test_a_result_variable_on_a_handler_script_is_refused_naming_the_task() -> None:
    builder = (
        Process("bad")
        .start("s")
        .script_task("py", "x = 1", language="groovy", result="x")
        .end("e")
        .sequence("s", "py", "e")
    )
    with pytest.raises(DeploymentError, match="result= is for CEL and Python scripts") as caught:
        builder.build()
    assert [p.element_id for p in caught.value.problems] == ["py"]
