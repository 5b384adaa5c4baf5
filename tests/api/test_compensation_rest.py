"""The saga with Camunda-style external workers over real HTTP: the worker counts the
retries, the model says what running out means (``bpm:onFailure="compensate"``)."""

from __future__ import annotations

from tests.api.conftest import Api

SAGA = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
    xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn"
    id="defs_trip" targetNamespace="http://example.com/bpmn">
  <bpmn:process id="trip" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="book" />
    <bpmn:serviceTask id="book" camunda:type="external" camunda:topic="book" />
    <bpmn:boundaryEvent id="book_comp" attachedToRef="book">
      <bpmn:compensateEventDefinition />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="cancel" isForCompensation="true" camunda:type="external"
        camunda:topic="cancel" />
    <bpmn:association id="a1" sourceRef="book_comp" targetRef="cancel" />
    <bpmn:sequenceFlow id="f2" sourceRef="book" targetRef="pay" />
    <bpmn:serviceTask id="pay" camunda:type="external" camunda:topic="pay"
        bpm:onFailure="compensate" />
    <bpmn:sequenceFlow id="f3" sourceRef="pay" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_an_external_saga_over_rest_ends_compensated(api: Api) -> None:
    api.deploy(SAGA, "trip.bpmn")
    inst = api.start("trip")
    (book,) = api.fetch("w", "book")
    assert api.post(book["id"], "complete", {"workerId": "w"}).status_code == 204
    (pay,) = api.fetch("w", "pay")
    failure = {"workerId": "w", "errorMessage": "declined", "retries": 0, "retryTimeout": 0}
    assert api.post(pay["id"], "failure", failure).status_code == 204

    running = api.http.get(f"/history/process-instance/{inst}").json()
    assert running["state"] == "ACTIVE" and running["endTime"] is None  # compensating
    assert api.http.get("/incident", params={"processInstanceId": inst}).json() == []
    (cancel,) = api.fetch("w", "cancel")
    assert cancel["activityId"] == "cancel" and cancel["processInstanceId"] == inst
    assert api.post(cancel["id"], "complete", {"workerId": "w"}).status_code == 204

    done = api.http.get(f"/history/process-instance/{inst}").json()
    assert done["state"] == "INTERNALLY_TERMINATED" and done["deleteReason"] == "compensated"
    assert api.engine.get_instance(inst).state.value == "compensated"
    finished = api.http.get("/history/process-instance/count", params={"finished": "true"})
    assert finished.json() == {"count": 1}
