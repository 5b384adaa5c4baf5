"""Camunda 7's LinkEventTest, ported (issue 21, item 2): each test deploys the original's
BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts what the
original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/link/LinkEventTest.java.
``runtimeService.signal`` on a receive task without a message is the message named after
it (docs/events.md); the historic activity instances are ``queries.activity_instances``.
"""

from __future__ import annotations

import pytest

from bpm.engine.queries import ActivityQuery
from bpm.errors import DeploymentError
from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS


def model(method: str) -> str:
    return str(MODELS / f"LinkEventTest.{method}.bpmn20.xml")


def history(kit: BpmTest, instance_id: str) -> list[str]:
    """The historic activity instances' activity ids, sorted, without the link events'
    (this engine's history lists the link throw and catch events too; Camunda's does not)."""
    views = kit.engine.queries.activity_instances(ActivityQuery(instance_ids=(instance_id,)))
    ids = sorted(v.activity.node_id for v in views)
    links = {"IntermediateThrowEvent_1", "IntermediateThrowEvent_2", "IntermediateCatchEvent_1"}
    links |= {"IntermediateCatchEvent_2"}
    assert links & set(ids)  # they are there: filtered, not missing
    return [i for i in ids if i not in links]


def test_valid_event_link(kit: BpmTest) -> None:
    # LinkEventTest.testValidEventLink
    kit.deploy(model("testValidEventLink"))
    inst = kit.start("linkEventValid")
    assert kit.waiting_at(inst) == ["waitAfterLink1"]
    kit.correlate("waitAfterLink1", instance=inst)
    assert kit.waiting_at(inst) == ["waitAfterLink2"]
    kit.correlate("waitAfterLink2", instance=inst)
    assert_that(inst).is_completed()
    assert history(kit, inst.id) == [
        "EndEvent_1",
        "StartEvent_1",
        "waitAfterLink1",
        "waitAfterLink2",
    ]


def test_event_link_multiple_sources(kit: BpmTest) -> None:
    # LinkEventTest.testEventLinkMultipleSources: two throws of one link, two tokens after
    # its catch
    kit.deploy(model("testEventLinkMultipleSources"))
    inst = kit.start("linkEventValid")
    assert kit.waiting_at(inst) == ["WaitAfterLink", "WaitAfterLink"]
    kit.engine.terminate(inst.id, reason="test done")
    assert history(kit, inst.id) == [
        "ManualTask_1",
        "ParallelGateway_1",
        "StartEvent_1",
        "WaitAfterLink",
        "WaitAfterLink",
    ]


@pytest.mark.parametrize(
    ("method", "fragment"),
    [
        # "Multiple Intermediate Catch Events with the same link event name ('LinkA')"
        ("testInvalidEventLinkMultipleTargets", "has link name 'LinkA'"),
        # "IntermediateCatchLinkEvent is not allowed after an EventBasedGateway."
        ("testCatchLinkEventAfterEventBasedGatewayNotAllowed", "has incoming flows"),
    ],
)
def test_invalid_link_events_are_refused(kit: BpmTest, method: str, fragment: str) -> None:
    # LinkEventTest.{method}: refused, on IntermediateCatchEvent_2; nothing deploys
    with pytest.raises(DeploymentError) as refused:
        kit.deploy(model(method))
    on_catch = [
        p.message for p in refused.value.problems if p.element_id == "IntermediateCatchEvent_2"
    ]
    assert any(fragment in m for m in on_catch), on_catch
    assert kit.engine.definitions() == []
