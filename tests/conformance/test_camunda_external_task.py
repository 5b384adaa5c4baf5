"""Camunda 7's ExternalTaskParseTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/external/ExternalTaskParseTest.java
"""

from __future__ import annotations

import pytest

from bpm.errors import DeploymentError
from bpm.testing import BpmTest
from tests.conformance.conftest import MODELS
from tests.conformance.scopes_kit import deploy

PREFIX = "ExternalTaskParseTest"


def test_parse_external_task_without_topic(kit: BpmTest) -> None:
    # ExternalTaskParseTest.testParseExternalTaskWithoutTopic: refused, one problem, naming
    # the task; nothing deploys
    before = kit.engine.definitions()
    with pytest.raises(DeploymentError, match="topic") as caught:
        kit.deploy(MODELS / f"{PREFIX}.testParseExternalTaskWithoutTopic.bpmn20.xml")
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].element_id == "externalTask"
    assert kit.engine.definitions() == before


@pytest.mark.parametrize(
    ("method", "key", "variables", "topic"),
    [
        (
            "testParseExternalTaskWithExpressionTopic",
            "oneExternalTaskWithExpressionTopicProcess",
            {"topicName": "testTopicExpression"},
            "testTopicExpression",
        ),
        (
            "testParseExternalTaskWithStringTopic",
            "oneExternalTaskWithStringTopicProcess",
            {},
            "testTopicString",
        ),
    ],
)
def test_parse_external_task_topic(
    kit: BpmTest, method: str, key: str, variables: dict[str, object], topic: str
) -> None:
    # ExternalTaskParseTest.testParseExternalTaskWith{Expression,String}Topic
    deploy(kit, f"{PREFIX}.{method}.bpmn20.xml")
    kit.start(key, variables)
    (task,) = kit.engine.external_tasks()
    assert task.topic == topic
