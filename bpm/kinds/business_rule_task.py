"""Business rule tasks that evaluate a deployed DMN decision in the step's transaction."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.business_rules import parse_business_rule
from bpm.cockpit.diagram import CAMUNDA, Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.decisions import decision_task


def draw(parent: Element, node: n.DecisionTask, attrs: dict[str, str], d: Drawing) -> Element:
    attrs[f"{{{CAMUNDA}}}decisionRef"] = node.decision
    return d.element(parent, "businessRuleTask", attrs)


KIND = ElementKind(
    node=n.DecisionTask,
    parse={"businessRuleTask": parse_business_rule},
    behave=decision_task,
    activity_type=lambda node: "businessRuleTask",
    draw=draw,
    build=("business_rule_task",),
)
