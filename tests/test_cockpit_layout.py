"""The automatic diagram layout and the BPMN XML the cockpit draws."""

from __future__ import annotations

import itertools
from pathlib import Path
from xml.etree.ElementTree import Element

import pytest
from defusedxml import ElementTree as SafeET

from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.cockpit.diagram import BPMN, BPMNDI, DI, has_diagram_for
from bpm.cockpit.layout import Box, Layout, layout
from bpm.kinds import diagram_xml, model_to_bpmn
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.engine_helpers import order_process

ROOT = Path(__file__).resolve().parents[1]


def loop_process() -> ProcessModel:
    """A retry loop back to an earlier task, a timer boundary and a user task."""
    return (
        Process("loop")
        .start("start")
        .service_task("fetch", handler="fetch")
        .exclusive("done")
        .user_task("review")
        .end("end")
        .end("gave_up")
        .sequence("start", "fetch", "done")
        .flow("done", "end", condition="ok", id="ok")
        .flow("done", "review", default=True, id="again")
        .flow("review", "fetch", id="back")
        .boundary_timer("review_timeout", attached_to="review", duration="PT1H")
        .flow("review_timeout", "gave_up")
        .build()
    )


def overlaps(a: Box, b: Box) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def on_border(point: tuple[float, float], box: Box) -> bool:
    x, y = point
    inside_x = box.x - 0.5 <= x <= box.x + box.w + 0.5
    inside_y = box.y - 0.5 <= y <= box.y + box.h + 0.5
    on_x = abs(x - box.x) < 0.5 or abs(x - box.x - box.w) < 0.5
    on_y = abs(y - box.y) < 0.5 or abs(y - box.y - box.h) < 0.5
    return (on_x and inside_y) or (on_y and inside_x)


def check_layout(model: ProcessModel, placed: Layout) -> None:
    assert set(placed.shapes) == set(model.nodes)
    assert set(placed.edges) == {f.id for f in model.flows}
    main = [k for k, v in model.nodes.items() if not isinstance(v, n.BoundaryEvent)]
    for i, a in enumerate(main):
        for b in main[i + 1 :]:
            assert not overlaps(placed.shapes[a], placed.shapes[b]), (a, b)
    for f in model.flows:
        points = placed.edges[f.id]
        assert len(points) >= 2
        assert on_border(points[0], placed.shapes[f.source]), (f.id, points[0])
        assert on_border(points[-1], placed.shapes[f.target]), (f.id, points[-1])
        for (x1, y1), (x2, y2) in itertools.pairwise(points):
            assert x1 == x2 or y1 == y2, f"{f.id} is not orthogonal: {points}"
    for box in placed.shapes.values():
        assert box.x >= 0 and box.y >= 0
        assert box.x + box.w <= placed.width and box.y + box.h <= placed.height


def test_order_process_is_laid_out_left_to_right() -> None:
    model = order_process()
    placed = layout(model)
    check_layout(model, placed)
    s = placed.shapes
    # the longest path decides the columns: every flow goes right, except none here
    for f in model.flows:
        assert s[f.source].cx < s[f.target].cx, f.id
    # the two branches of the fork share a column, one above the other
    assert s["reserve"].x == s["charge"].x
    assert s["reserve"].y != s["charge"].y
    # a chain is straight: start, validate and the gateway share their centre line
    assert s["start"].cy == s["validate"].cy == s["amount_check"].cy


def test_loops_and_boundary_events() -> None:
    model = loop_process()
    placed = layout(model)
    check_layout(model, placed)
    s = placed.shapes
    # the back edge runs below every shape
    lowest = max(b.y + b.h for b in s.values())
    assert max(y for _, y in placed.edges["back"]) > lowest
    # the boundary timer sits on the bottom edge of its task
    timer, review = s["review_timeout"], s["review"]
    assert timer.cy == pytest.approx(review.y + review.h)
    assert review.x <= timer.cx <= review.x + review.w


def test_a_model_with_a_cycle_through_gateways_only_still_lays_out() -> None:
    model = (
        Process("spin")
        .start("s")
        .exclusive("a")
        .service_task("t", handler="h")
        .end("e")
        .flow("s", "a")
        .flow("a", "t", default=True)
        .flow("t", "a", id="again")
        .flow("a", "e", condition="done", id="out")
        .build()
    )
    check_layout(model, layout(model))


def _parse(xml: str) -> Element:
    root: Element = SafeET.fromstring(xml.encode())
    return root


def test_generated_xml_draws_every_node_and_flow() -> None:
    model = loop_process()
    xml = model_to_bpmn(model)
    root = _parse(xml)
    process = root.find(f"{{{BPMN}}}process")
    assert process is not None and process.get("id") == "loop"
    ids = {el.get("id") for el in process}
    assert ids == set(model.nodes) | {f.id for f in model.flows}
    assert process.find(f"{{{BPMN}}}userTask[@id='review']") is not None
    boundary = process.find(f"{{{BPMN}}}boundaryEvent[@id='review_timeout']")
    assert boundary is not None and boundary.get("attachedToRef") == "review"
    assert boundary.find(f"{{{BPMN}}}timerEventDefinition/{{{BPMN}}}timeDuration") is not None
    gateway = process.find(f"{{{BPMN}}}exclusiveGateway[@id='done']")
    assert gateway is not None and gateway.get("default") == "again"
    edges = list(root.iter(f"{{{BPMNDI}}}BPMNEdge"))
    assert {e.get("bpmnElement") for e in edges} == {f.id for f in model.flows}
    assert all(len(e.findall(f"{{{DI}}}waypoint")) >= 2 for e in edges)
    assert has_diagram_for(model, xml)


def test_deployed_file_with_diagram_is_served_as_it_is() -> None:
    text = (ROOT / "examples" / "order.bpmn").read_text()
    model = parse_bpmn(text)
    assert has_diagram_for(model, text)
    assert diagram_xml(model, text) == text


def test_hand_written_xml_without_diagram_is_laid_out() -> None:
    text = (ROOT / "examples" / "order.bpmn").read_text()
    without_di = text[: text.index("<bpmndi:BPMNDiagram")] + "</bpmn:definitions>\n"
    model = parse_bpmn(without_di)
    assert not has_diagram_for(model, without_di)
    drawn = diagram_xml(model, without_di)
    assert drawn != without_di and has_diagram_for(model, drawn)
    # builder models have no source at all
    assert has_diagram_for(order_process(), diagram_xml(order_process(), ""))


def test_diagram_missing_a_node_is_replaced() -> None:
    """A file whose diagram lacks a shape for one node cannot show that node's tokens."""
    text = (ROOT / "examples" / "order.bpmn").read_text()
    model = parse_bpmn(text)
    start = text.index('<bpmndi:BPMNShape id="ship_di"')
    end = text.index("</bpmndi:BPMNShape>", start) + len("</bpmndi:BPMNShape>")
    partial = text[:start] + text[end:]
    assert 'bpmnElement="ship"' not in partial.split("<bpmndi:BPMNDiagram")[1]
    assert not has_diagram_for(model, partial)
    assert diagram_xml(model, partial) != partial
