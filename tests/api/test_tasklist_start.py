"""Starting a process from its start form as a user (issue 23, the task list), in-process
against PostgreSQL: a user who is no admin starts only a process naming them or one of
their groups as candidate starter (``camunda:candidateStarterUsers/Groups``) and startable
in the task list, through ``submit-form`` (the form checked on the server); every refusal
starts nothing. Also the task list's diagram of a task: 404 for a task the user may not
see."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from argon2 import PasswordHasher

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.api.starters import starters_of
from bpm.identity import passwords
from tests.api.conftest import bpmn
from tests.api.inprocess import InProcess

OPS = {"Authorization": "Bearer ops-secret"}
PASSWORD = "correct horse battery"
ROOT = "http://t"


def basic(user: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


ANN, BOB, CARL = basic("ann"), basic("bob"), basic("carl")

FORM = """
    <bpmn:startEvent id="start">
      <bpmn:extensionElements><camunda:formData>
        <camunda:formField id="amount" label="Amount" type="long">
          <camunda:validation><camunda:constraint name="required"/>
            <camunda:constraint name="max" config="100"/></camunda:validation>
        </camunda:formField>
      </camunda:formData></bpmn:extensionElements>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="pay"/>
    <bpmn:userTask id="pay" name="Pay" camunda:candidateGroups="sales"/>
    <bpmn:sequenceFlow id="f2" sourceRef="pay" targetRef="end"/>
    <bpmn:endEvent id="end"/>
"""


def model(key: str, attrs: str) -> str:
    return bpmn(key, FORM).replace(f'<bpmn:process id="{key}"', f'<bpmn:process id="{key}" {attrs}')


@pytest.fixture(autouse=True)
def cheap_hashes() -> Iterator[None]:
    previous = passwords.use_parameters(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    yield
    passwords.use_parameters(previous)


@pytest.fixture
def served(pg_database_url: str) -> Iterator[tuple[InProcess, Engine]]:
    engine = Engine(pg_database_url)
    http = InProcess(create_app(engine, api_keys=parse_api_keys("ops:ops-secret")))
    for user in ("ann", "bob", "carl"):
        body = {"profile": {"id": user}, "credentials": {"password": PASSWORD}}
        assert http.post("/user/create", json=body, headers=OPS).status_code == 204
    assert http.post("/group/create", json={"id": "sales"}, headers=OPS).status_code == 204
    assert http.put("/group/sales/members/ann", headers=OPS).status_code == 204
    for key, attrs in (
        ("pay", 'name="Pay up" camunda:candidateStarterGroups="sales"'),
        ("gift", 'camunda:candidateStarterUsers="carl, bob" camunda:isStartableInTasklist="false"'),
        ("plain", ""),
    ):
        files = {"f": (f"{key}.bpmn", model(key, attrs).encode())}
        assert http.post("/deployment/create", files=files, headers=OPS).status_code == 200
    yield http, engine
    http.close()
    engine.close()


def definition(http: InProcess, key: str) -> str:
    return str(http.get(f"/process-definition/key/{key}", headers=OPS).json()["id"])


def test_candidate_starters_start_from_the_start_form_only(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    pay, gift, plain = (definition(http, k) for k in ("pay", "gift", "plain"))
    listed = http.get(f"{ROOT}/tasklist/api/start", headers=ANN).json()
    assert listed == [{"id": pay, "key": "pay", "name": "Pay up", "version": 1}]
    assert http.get(f"{ROOT}/tasklist/api/start", headers=BOB).json() == []
    assert {d["key"] for d in http.get(f"{ROOT}/tasklist/api/start", headers=OPS).json()} == {
        "pay", "plain",  # gift is not startable in the task list, not even by admins here
    }  # fmt: skip
    schema = http.get(f"{ROOT}/tasklist/api/process-definition/{pay}/form", headers=ANN).json()
    assert schema["schema"]["components"][0]["key"] == "amount"
    assert http.get(f"/process-definition/{pay}/form-variables", headers=ANN).status_code == 200

    def submit(definition_id: str, who: dict[str, str], **values: int) -> Any:
        variables = {k: {"value": v} for k, v in values.items()}
        path = f"/process-definition/{definition_id}/submit-form"
        return http.post(path, json={"variables": variables}, headers=who)

    refused = [
        (submit(pay, BOB), 403),
        (submit(plain, ANN, amount=1), 403),
        (submit(gift, CARL, amount=1), 403),  # not startable in the task list
        (submit(pay, ANN), 400),
        (submit(pay, ANN, amount=101), 400),
        (http.post(f"/process-definition/{pay}/start", json={}, headers=ANN), 403),
        (http.post("/process-definition/nope/submit-form", json={}, headers=ANN), 404),
        (http.get(f"{ROOT}/tasklist/api/process-definition/{plain}/form", headers=ANN), 403),
        (http.get(f"/process-definition/{plain}/deployed-start-form", headers=ANN), 403),
    ]
    for r, status in refused:
        assert r.status_code == status, r.text
    assert "candidate starter" in refused[0][0].json()["message"]
    assert "amount" in refused[4][0].json()["message"]
    assert engine.instances() == []
    r = http.post(f"/process-definition/{pay}/submit-form",
                  json={"variables": {"amount": {"value": 7}}}, headers=ANN)  # fmt: skip
    assert r.status_code == 200, r.text
    (inst,) = engine.instances()
    assert inst.variables["amount"] == 7 and inst.definition_key == "pay"
    # the diagram of its task: ann (sales) sees it, bob does not
    (task,) = http.get("/task", headers=ANN).json()
    seen = http.get(f"{ROOT}/tasklist/api/task/{task['id']}/diagram", headers=ANN).json()
    assert seen["activityId"] == "pay" and '<bpmn:process id="pay"' in seen["xml"]
    assert (
        http.get(f"{ROOT}/tasklist/api/task/{task['id']}/diagram", headers=BOB).status_code == 404
    )


def test_starters_are_read_from_the_process_element() -> None:
    xml = model("p", 'camunda:candidateStarterUsers=" a ,b" camunda:candidateStarterGroups="g"')
    found = starters_of(xml, "p")
    assert found.users == {"a", "b"} and found.groups == {"g"} and found.startable
    assert starters_of(xml, "other").users == frozenset()
    assert starters_of(None, "p").users == frozenset()
    assert starters_of("<not xml", "p").users == frozenset()
