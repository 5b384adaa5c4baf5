"""``POST /message`` and ``POST /signal`` over real HTTP, with a Camunda Modeler file:
Camunda's bodies and answers, and bad input answering Camunda's 400 shape with nothing
changed."""

from __future__ import annotations

from tests.api.camunda_helpers import assert_error
from tests.api.conftest import Api, bpmn, instance_state
from tests.engine_helpers import table_dump

DEFS = """
<bpmn:message id="Message_paid" name="payment-received" />
<bpmn:message id="Message_order" name="order-placed" />
<bpmn:signal id="Signal_stop" name="stop-all" />
"""
WAIT = bpmn(
    "pay",
    """
  <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
  <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="paid" />
  <bpmn:intermediateCatchEvent id="paid">
    <bpmn:messageEventDefinition messageRef="Message_paid" />
  </bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="stop" />
  <bpmn:intermediateCatchEvent id="stop">
    <bpmn:signalEventDefinition signalRef="Signal_stop" />
  </bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f3" sourceRef="stop" targetRef="end" />
  <bpmn:endEvent id="end" />
""",
    DEFS,
)
STARTED = bpmn(
    "placed",
    """
  <bpmn:startEvent id="ms"><bpmn:messageEventDefinition messageRef="Message_order" />
  </bpmn:startEvent>
  <bpmn:sequenceFlow id="g1" sourceRef="ms" targetRef="handle" />
  <bpmn:userTask id="handle" />
""",
    DEFS,
)


def typed(**values: object) -> dict[str, dict[str, object]]:
    return {k: {"value": v} for k, v in values.items()}


def test_message_and_signal_over_rest(api: Api) -> None:
    api.deploy(WAIT, "pay.bpmn")
    api.deploy(STARTED, "placed.bpmn")
    a = api.start("pay", {"customer": "c-1"}, business_key="o-1")
    b = api.start("pay", {"customer": "c-2"}, business_key="o-2")

    r = api.http.post(
        "/message",
        json={
            "messageName": "payment-received",
            "businessKey": "o-1",
            "processVariables": typed(amount=12),
            "resultEnabled": True,
            "variablesInResultEnabled": True,
        },
    )
    assert r.status_code == 200, r.text
    (result,) = r.json()
    assert result["resultType"] == "Execution"
    assert result["execution"]["processInstanceId"] == a
    assert result["variables"]["amount"]["value"] == 12

    r = api.http.post(
        "/message",
        json={"messageName": "payment-received", "correlationKeys": typed(customer="c-2")},
    )
    assert r.status_code == 204, r.text

    r = api.http.post(
        "/message",
        json={"messageName": "order-placed", "businessKey": "n-1", "resultEnabled": True},
    )
    assert r.status_code == 200, r.text
    (started,) = r.json()
    assert started["resultType"] == "ProcessDefinition"
    assert started["processInstance"]["businessKey"] == "n-1"

    r = api.http.post("/signal", json={"name": "stop-all", "variables": typed(why="done")})
    assert r.status_code == 204, r.text
    assert instance_state(api.engine, a) == "completed"
    assert instance_state(api.engine, b) == "completed"
    assert api.engine.get_instance(a).variables["why"] == "done"
    # no receiver is not an error for a signal
    assert api.http.post("/signal", json={"name": "nobody-listens"}).status_code == 204


def test_a_message_with_time_to_live_is_buffered(api: Api) -> None:
    api.deploy(WAIT, "pay.bpmn")
    r = api.http.post(
        "/message",
        json={
            "messageName": "payment-received",
            "businessKey": "later",
            "timeToLive": "PT1H",
            "resultEnabled": True,
        },
    )
    assert r.status_code == 200, r.text
    assert r.json()[0]["resultType"] == "Buffered"
    inst = api.start("pay", business_key="later")
    waits = [t.node_id for t in api.engine.get_instance(inst).tokens]
    assert waits == ["stop"]  # the buffered message was consumed when the wait opened


def test_bad_messages_answer_400_and_change_nothing(api: Api) -> None:
    api.deploy(WAIT, "pay.bpmn")
    api.start("pay", business_key="o-1")
    api.start("pay", business_key="o-2")
    before = table_dump(api.engine)

    r = api.http.post("/message", json={"messageName": "unknown"})
    assert_error(r, 400, "RestException", "MismatchingMessageCorrelationException")
    r = api.http.post("/message", json={"messageName": "payment-received"})
    assert_error(r, 400, "RestException", "matches 2 waiting process instances")
    r = api.http.post(
        "/message",
        json={
            "messageName": "payment-received",
            "businessKey": "o-1",
            "processVariables": {"x": {"value": "nope", "type": "Integer"}},
        },
    )
    assert_error(r, 400, "InvalidRequestException")
    assert_error(api.http.post("/message", json={}), 400, "InvalidRequestException")
    assert_error(api.http.post("/signal", json={"name": ""}), 400, "InvalidRequestException")
    r = api.http.post("/message", json={"messageName": "payment-received", "timeToLive": "soon"})
    assert_error(r, 400, "InvalidRequestException", "timeToLive")
    assert table_dump(api.engine) == before


def test_a_buffered_message_keeps_typed_values(api: Api) -> None:
    """Typed values (Long, Date, Json) in a buffered message were a 500: the buffer holds
    plain JSON, so they keep their value (not their Camunda type) until delivered."""
    api.deploy(WAIT, "pay.bpmn")
    r = api.http.post(
        "/message",
        json={
            "messageName": "payment-received",
            "businessKey": "typed",
            "timeToLive": 60_000,
            "processVariables": {
                "amount": {"value": 12345678901, "type": "Long"},
                "paidAt": {"value": "2026-11-30T10:15:00.000+0000", "type": "Date"},
            },
            "correlationKeys": {"order": {"value": 7, "type": "Long"}},
        },
    )
    assert r.status_code == 204, r.text
    inst = api.start("pay", business_key="typed", variables={"order": 7})
    assert [t.node_id for t in api.engine.get_instance(inst).tokens] == ["stop"]
    values = api.http.get(f"/process-instance/{inst}/variables").json()
    assert values["amount"]["value"] == 12345678901
    assert values["paidAt"]["value"] == "2026-11-30T10:15:00.000+0000"
