"""Camunda 7's MessageStartEventTest, in part (issue 21, item 3): the deploy-time refusal of
two message start events of one name. The test deploys the original's BPMN file unchanged
(``models/camunda``, Apache-2.0, see PROVENANCE), on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/message/MessageStartEventTest.java. The rest of the class: LEFT_OUT.md.
"""

from __future__ import annotations

import pytest

from bpm.errors import DeploymentError
from bpm.testing import BpmTest
from tests.conformance.conftest import MODELS


def test_same_message_name_in_same_process_fails(kit: BpmTest) -> None:
    # MessageStartEventTest.testSameMessageNameInSameProcessFails: refused, naming the
    # message; nothing deploys
    before = kit.engine.deployments(), kit.engine.definitions()
    with pytest.raises(DeploymentError, match="message 'newInvoiceMessage'") as caught:
        kit.deploy(
            MODELS / "MessageStartEventTest.testSameMessageNameInSameProcessFails.bpmn20.xml"
        )
    assert [p.element_id for p in caught.value.problems] == ["theStart2"]
    assert (kit.engine.deployments(), kit.engine.definitions()) == before
