"""Task forms over REST (issue 23 item 3), in-process against PostgreSQL: the form key and
Camunda Forms reference, the deployed ``.form`` (by ``formRef`` binding and by
``camunda-forms:deployment:``), generated form variables with defaults, and ``submit-form``
checked on the server: a missing required field or a number out of range is a 400 naming
the field, and the task, the instance and its variables stay as they were."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.store import tables as t
from tests.api.conftest import bpmn
from tests.api.inprocess import InProcess

FORMS = Path(__file__).resolve().parents[1] / "data" / "forms"
OPS = {"Authorization": "Bearer ops-secret"}

KEYED = bpmn(
    "keyed",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="fill"/>
    <bpmn:userTask id="fill" camunda:formKey="camunda-forms:deployment:expense-review.form"/>
    <bpmn:sequenceFlow id="f2" sourceRef="fill" targetRef="embedded"/>
    <bpmn:userTask id="embedded" camunda:formKey="embedded:app:forms/own.html"/>
    <bpmn:sequenceFlow id="f3" sourceRef="embedded" targetRef="end"/>
    <bpmn:endEvent id="end"/>
    """,
)


@pytest.fixture
def http(pg_database_url: str) -> Iterator[InProcess]:
    engine = Engine(pg_database_url)
    client = InProcess(create_app(engine, api_keys=parse_api_keys("ops:ops-secret")))
    yield client
    client.close()
    engine.close()


def deploy(http: InProcess, *names: str, extra: tuple[str, str] | None = None) -> None:
    files = [("f", (name, (FORMS / name).read_bytes())) for name in names]
    if extra:
        files.append(("f", (extra[0], extra[1].encode())))
    r = http.post("/deployment/create", files=files, headers=OPS)
    assert r.status_code == 200, r.text


def start(http: InProcess, key: str, variables: dict[str, Any] | None = None) -> str:
    body = {"variables": {k: {"value": v} for k, v in (variables or {}).items()}}
    r = http.post(f"/process-definition/key/{key}/start", json=body, headers=OPS)
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def task(http: InProcess, instance: str) -> dict[str, Any]:
    (found,) = http.get("/task", params={"processInstanceId": instance}, headers=OPS).json()
    return dict(found)


def state(http: InProcess, instance: str) -> tuple[Any, ...]:
    """What a refused submit must leave alone: the open tasks and the variables."""
    tasks = http.get("/task", params={"processInstanceId": instance}, headers=OPS).json()
    variables = http.get(f"/process-instance/{instance}/variables", headers=OPS).json()
    return tuple(x["id"] for x in tasks), json.dumps(variables, sort_keys=True)


def refused(r: Any, field: str) -> None:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["type"] == "InvalidRequestException", body
    assert f"form field '{field}'" in body["message"], body


def test_generated_forms_show_defaults_and_are_checked_on_submit(http: InProcess) -> None:
    deploy(http, "generated.bpmn")
    inst = start(http, "leave", {"days": 3, "kind": "sick"})
    approve = task(http, inst)
    assert approve["taskDefinitionKey"] == "approve"
    values = http.get(f"/task/{approve['id']}/form-variables", headers=OPS).json()
    assert values["note"]["value"] == "sick"  # defaultValue="${kind}"
    assert values["approved"]["value"] is None and set(values) == {"approved", "note", "starts"}
    assert http.get(f"/task/{approve['id']}/form", headers=OPS).json() == {
        "key": None, "contextPath": None, "camundaFormRef": None
    }  # fmt: skip
    before = state(http, inst)
    url = f"/task/{approve['id']}/submit-form"
    for body, field in (
        ({"note": {"value": "x" * 201}}, "note"),
        ({"approved": {"value": "perhaps"}}, "approved"),
    ):
        refused(http.post(url, json={"variables": body}, headers=OPS), field)
    assert state(http, inst) == before
    ok = {"approved": {"value": "true"}, "note": {"value": "fine"}}
    assert http.post(url, json={"variables": ok}, headers=OPS).status_code == 204
    filing = task(http, inst)
    assert filing["taskDefinitionKey"] == "file"
    variables = http.get(f"/process-instance/{inst}/variables", headers=OPS).json()
    assert variables["approved"] == {"type": "Boolean", "value": True, "valueInfo": {}}
    url = f"/task/{filing['id']}/submit-form"
    before = state(http, inst)
    refused(http.post(url, json={"variables": {}}, headers=OPS), "ref")  # required="true"
    refused(
        http.post(
            url, json={"variables": {"ref": {"value": "r"}, "archive": {"value": "a"}}}, headers=OPS
        ),
        "archive",
    )  # writable="false"
    assert state(http, inst) == before
    assert (
        http.post(url, json={"variables": {"ref": {"value": "r-1"}}}, headers=OPS).status_code
        == 204
    )


def test_complete_does_not_check_forms_as_camundas(
    http: InProcess,
) -> None:
    deploy(http, "generated.bpmn")
    inst = start(http, "leave", {"days": 3})
    approve = task(http, inst)
    # complete does not check forms (as Camunda's): only submit-form does
    r = http.post(
        f"/task/{approve['id']}/complete",
        json={"variables": {"note": {"value": "y" * 300}}},
        headers=OPS,
    )
    assert r.status_code == 204


def test_camunda_forms_are_found_by_reference_and_key_and_checked(http: InProcess) -> None:
    deploy(http, "approval.bpmn", "expense-request.form", "expense-review.form")
    inst = start(http, "approval", {"amount": 50})
    review = task(http, inst)
    assert http.get(f"/task/{review['id']}/form", headers=OPS).json() == {
        "key": None,
        "contextPath": None,
        "camundaFormRef": {"key": "expense-review", "binding": "deployment"},
    }
    doc = http.get(f"/task/{review['id']}/deployed-form", headers=OPS).json()
    assert doc["id"] == "expense-review"
    defs = http.get("/process-definition", params={"key": "approval"}, headers=OPS).json()
    start_form = http.get(f"/process-definition/{defs[0]['id']}/deployed-start-form", headers=OPS)
    assert start_form.json()["id"] == "expense-request"
    before = state(http, inst)
    url = f"/task/{review['id']}/submit-form"
    for variables, field in (
        ({}, "amount"),  # required
        ({"amount": {"value": 20000}}, "amount"),  # max 10000
        ({"amount": {"value": -1}}, "amount"),  # min 0
        ({"amount": {"value": 5}, "approved": {"value": "yes"}}, "approved"),  # a checkbox
        ({"amount": {"value": 5}, "comment": {"value": "c" * 501}}, "comment"),  # maxLength
    ):
        refused(http.post(url, json={"variables": variables}, headers=OPS), field)
    assert state(http, inst) == before
    done = {"amount": {"value": 70}, "approved": {"value": True}, "comment": {"value": "<b>ok</b>"}}
    r = http.post(url, json={"variables": done, "withVariablesInReturn": True}, headers=OPS)
    assert r.status_code == 200, r.text
    assert r.json()["comment"]["value"] == "<b>ok</b>"


def test_a_form_key_names_the_deployed_form_and_embedded_keys_pass_through(http: InProcess) -> None:
    deploy(http, "expense-review.form", extra=("keyed.bpmn", KEYED))
    inst = start(http, "keyed")
    fill = task(http, inst)
    assert fill["formKey"] == "camunda-forms:deployment:expense-review.form"
    assert (
        http.get(f"/task/{fill['id']}/deployed-form", headers=OPS).json()["id"] == "expense-review"
    )
    refused(http.post(f"/task/{fill['id']}/submit-form", json={}, headers=OPS), "amount")
    r = http.post(
        f"/task/{fill['id']}/submit-form", json={"variables": {"amount": {"value": 1}}}, headers=OPS
    )
    assert r.status_code == 204
    embedded = task(http, inst)
    assert (
        http.get(f"/task/{embedded['id']}/form", headers=OPS).json()["key"]
        == "embedded:app:forms/own.html"
    )
    r = http.get(f"/task/{embedded['id']}/deployed-form", headers=OPS)
    assert r.status_code == 404 and r.json()["type"] == "InvalidRequestException"
    assert http.post(f"/task/{embedded['id']}/submit-form", json={}, headers=OPS).status_code == 204


def test_a_formref_with_binding_latest_and_version(http: InProcess, pg_database_url: str) -> None:
    latest = bpmn(
        "latest",
        """
        <bpmn:startEvent id="start"/>
        <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="a"/>
        <bpmn:userTask id="a" camunda:formRef="expense-review" camunda:formRefBinding="latest"/>
        <bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="b"/>
        <bpmn:userTask id="b" camunda:formRef="expense-review" camunda:formRefBinding="version"
            camunda:formRefVersion="1"/>
        <bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="end"/>
        <bpmn:endEvent id="end"/>
        """,
    )
    deploy(http, "expense-review.form")
    changed = json.loads((FORMS / "expense-review.form").read_text())
    changed["components"][0]["validate"]["max"] = 5
    r = http.post(
        "/deployment/create",
        files=[
            ("f", ("expense-review.form", json.dumps(changed).encode())),
            ("g", ("latest.bpmn", latest.encode())),
        ],
        headers=OPS,
    )
    assert r.status_code == 200, r.text
    inst = start(http, "latest")
    a = task(http, inst)
    assert (
        http.get(f"/task/{a['id']}/deployed-form", headers=OPS).json()["components"][0]["validate"][
            "max"
        ]
        == 5
    )
    refused(
        http.post(
            f"/task/{a['id']}/submit-form",
            json={"variables": {"amount": {"value": 6}}},
            headers=OPS,
        ),
        "amount",
    )
    assert (
        http.post(
            f"/task/{a['id']}/submit-form",
            json={"variables": {"amount": {"value": 5}}},
            headers=OPS,
        ).status_code
        == 204
    )
    b = task(http, inst)
    assert (
        http.get(f"/task/{b['id']}/deployed-form", headers=OPS).json()["components"][0]["validate"][
            "max"
        ]
        == 10000
    )
    with Engine(pg_database_url).db.connect() as conn:
        assert (
            conn.execute(select(t.user_task.c.state).where(t.user_task.c.id == a["id"])).scalar()
            == "completed"
        )


def test_a_start_form_is_checked_before_an_instance_starts(http: InProcess) -> None:
    deploy(http, "generated.bpmn")
    (definition,) = http.get("/process-definition", params={"key": "leave"}, headers=OPS).json()
    url = f"/process-definition/{definition['id']}"
    defaults = http.get(f"{url}/form-variables", headers=OPS).json()
    assert defaults["days"]["value"] == 1 and defaults["kind"]["value"] == "holiday"
    for variables, field in (
        ({}, "days"),  # required
        ({"days": {"value": 31}}, "days"),  # max 30
        ({"days": {"value": 0}}, "days"),  # min 1
        ({"days": {"value": 3}, "kind": {"value": "party"}}, "kind"),  # not an enum value
    ):
        r = http.post(f"{url}/submit-form", json={"variables": variables}, headers=OPS)
        assert r.status_code == 400 and f"form field '{field}'" in r.json()["message"], r.text
    assert http.get("/history/process-instance/count", headers=OPS).json() == {"count": 0}
    body = {
        "variables": {"days": {"value": "4"}, "kind": {"value": "holiday"}},
        "businessKey": "l-1",
    }
    r = http.post(f"{url}/submit-form", json=body, headers=OPS)
    assert r.status_code == 200, r.text
    inst = r.json()
    assert inst["businessKey"] == "l-1"
    variables = http.get(f"/process-instance/{inst['id']}/variables", headers=OPS).json()
    assert variables["days"]["value"] == 4  # typed as the field's long
    r = http.post("/process-definition/nope/submit-form", json={}, headers=OPS)
    assert r.status_code == 404
