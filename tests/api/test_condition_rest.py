"""``POST /condition`` (Camunda 7's conditional start evaluation) over real HTTP: Camunda's
body and answer (a list of ProcessInstanceDto), and bad input answering Camunda's 400
shape with nothing changed."""

from __future__ import annotations

from tests.api.camunda_helpers import assert_error
from tests.api.conftest import Api, bpmn
from tests.engine_helpers import table_dump

STARTED = bpmn(
    "when_big",
    """
  <bpmn:startEvent id="cs">
    <bpmn:conditionalEventDefinition>
      <bpmn:condition>${amount &gt; 100}</bpmn:condition>
    </bpmn:conditionalEventDefinition>
  </bpmn:startEvent>
  <bpmn:sequenceFlow id="g1" sourceRef="cs" targetRef="handle" />
  <bpmn:userTask id="handle" />
""",
)


def test_condition_starts_instances_over_rest(api: Api) -> None:
    api.deploy(STARTED, "when_big.bpmn")
    r = api.http.post("/condition", json={"variables": {"amount": {"value": 5}}})
    assert r.status_code == 200 and r.json() == [], r.text
    r = api.http.post(
        "/condition",
        json={"variables": {"amount": {"value": 500, "type": "Integer"}}, "businessKey": "o-9"},
    )
    assert r.status_code == 200, r.text
    (dto,) = r.json()
    assert dto["businessKey"] == "o-9" and dto["ended"] is False
    assert set(dto) >= {"id", "definitionId", "links", "suspended", "tenantId"}
    assert api.engine.get_instance(dto["id"]).variables == {"amount": 500}


def test_bad_conditions_answer_400_and_change_nothing(api: Api) -> None:
    r = api.http.post("/condition", json={"variables": {"amount": {"value": 500}}})
    assert_error(r, 400, "InvalidRequestException", "no subscriptions were found")
    api.deploy(STARTED, "when_big.bpmn")
    before = table_dump(api.engine)
    r = api.http.post("/condition", json={"processDefinitionId": "nope"})
    assert_error(r, 400, "InvalidRequestException", "no deployed process definition")
    r = api.http.post("/condition", json={"tenantId": "t1"})
    assert_error(r, 400, "InvalidRequestException")
    r = api.http.post("/condition", json={"variables": "not a map"})
    assert_error(r, 400, "InvalidRequestException")
    assert table_dump(api.engine) == before
