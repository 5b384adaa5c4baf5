"""Flow labels in the cockpit's generated diagram: a builder model's flow names and
conditions are drawn beside their flows, clear of the shapes, of each other and of the
sibling flows leaving the same gateway."""

from __future__ import annotations

import itertools

from defusedxml import ElementTree as SafeET

from bpm.builder import Process
from bpm.cockpit.diagram import BPMN, BPMNDI
from bpm.cockpit.layout import Box, Layout, layout
from bpm.kinds import model_to_bpmn
from bpm.model.process import ProcessModel


def loan() -> ProcessModel:
    return (
        Process("loan")
        .start("start")
        .service_task("score", topic="score")
        .exclusive("decide")
        .user_task("review", name="Manual review")
        .service_task("pay", topic="payout")
        .end("rejected")
        .end("done")
        .sequence("start", "score", "decide")
        .flow("decide", "pay", condition="score >= 700", id="good")
        .flow("decide", "review", condition="score >= 500 && score < 700", name="borderline")
        .flow("decide", "rejected", default=True, id="bad")
        .flow("review", "pay", name="approved", id="approved")
        .flow("review", "rejected", name="turned down", id="turned_down")
        .sequence("pay", "done")
        .build()
    )


def overlaps(a: Box, b: Box) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def crosses(box: Box, points: tuple[tuple[float, float], ...]) -> bool:
    """Whether an orthogonal polyline runs through the inside of ``box``."""
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        across = y0 == y1 and box.y < y0 < box.y + box.h
        if across and min(x0, x1) < box.x + box.w and max(x0, x1) > box.x:
            return True
        down = x0 == x1 and box.x < x0 < box.x + box.w
        if down and min(y0, y1) < box.y + box.h and max(y0, y1) > box.y:
            return True
    return False


def check_labels(model: ProcessModel, placed: Layout) -> None:
    labelled = {f.id for f in model.flows if f.name or f.condition}
    assert set(placed.labels) == labelled
    for flow_id, label in placed.labels.items():
        for node_id, shape in placed.shapes.items():
            assert not overlaps(label, shape), (flow_id, node_id)
        for other, points in placed.edges.items():
            assert not crosses(label, points), (flow_id, "crossed by", other)
        assert label.x + label.w <= placed.width
    for a, b in itertools.combinations(placed.labels.items(), 2):
        assert not overlaps(a[1], b[1]), (a[0], b[0])


def test_names_and_conditions_are_labels_clear_of_everything() -> None:
    model = loan()
    placed = layout(model)
    check_labels(model, placed)
    # each label sits just above a stretch of its own flow
    for flow_id, label in placed.labels.items():
        bottom = label.y + label.h
        assert any(
            y0 == y1 and abs(y0 - bottom - 3.0) < 0.5 and min(x0, x1) < label.x
            for (x0, y0), (x1, y1) in itertools.pairwise(placed.edges[flow_id])
        ), flow_id


def test_the_generated_xml_names_each_flow_and_places_its_label() -> None:
    model = loan()
    root = SafeET.fromstring(model_to_bpmn(model).encode())
    names = {f.get("id"): f.get("name") for f in root.iter(f"{{{BPMN}}}sequenceFlow")}
    assert names["good"] == "score >= 700"  # the condition, when the flow has no name
    assert names["Flow_decide_review"] == "borderline"  # the name wins
    assert names["turned_down"] == "turned down"
    assert names["bad"] is None and names["Flow_start_score"] is None
    edges = {e.get("bpmnElement"): e for e in root.iter(f"{{{BPMNDI}}}BPMNEdge")}
    assert edges["good"].find(f"{{{BPMNDI}}}BPMNLabel") is not None
    assert edges["bad"].find(f"{{{BPMNDI}}}BPMNLabel") is None
    gateway = root.find(f".//{{{BPMN}}}exclusiveGateway[@id='decide']")
    assert gateway is not None and gateway.get("default") == "bad"  # drawn with its slash


def test_a_long_condition_wraps_and_widens_its_gap() -> None:
    condition = "order.total > 1000 && customer.segment == 'gold' && !order.flagged"
    model = (
        Process("long")
        .start("s")
        .exclusive("g")
        .task("a")
        .task("b")
        .end("e")
        .sequence("s", "g")
        .flow("g", "a", condition=condition)
        .flow("g", "b", default=True, id="other")
        .sequence("a", "e")
        .flow("b", "e")
        .build()
    )
    placed = layout(model)
    check_labels(model, placed)
    label = placed.labels["Flow_g_a"]
    assert label.h > 14.0  # wrapped onto more lines
    without = layout(
        Process("long").start("s").exclusive("g").task("a").task("b").end("e")
        .sequence("s", "g").flow("g", "a").flow("g", "b").sequence("a", "e").flow("b", "e")
        .build()
    )  # fmt: skip
    assert placed.shapes["a"].x > without.shapes["a"].x  # the gap grew to hold it
    assert placed.shapes["g"].x == without.shapes["g"].x


def test_a_straight_flow_between_turning_siblings_keeps_its_label_clear() -> None:
    """The middle flow runs straight on from the gateway: its label starts after the bend
    where its siblings turn up and down, not across their turns."""
    model = (
        Process("three")
        .start("s")
        .exclusive("g")
        .task("low")
        .task("mid")
        .task("high")
        .end("e")
        .sequence("s", "g")
        .flow("g", "low", condition="n < 10")
        .flow("g", "mid", condition="n >= 10 && n < 100")
        .flow("g", "high", condition="n >= 100")
        .flow("low", "e")
        .flow("mid", "e")
        .flow("high", "e")
        .build()
    )
    placed = layout(model)
    assert len(placed.edges["Flow_g_mid"]) == 2  # straight on, no bend
    check_labels(model, placed)
