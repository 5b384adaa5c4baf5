"""REST on models from other modelers: deployments of several processes with warnings,
encodings, and the user-task settings on ``/task`` (a real ``bpm api`` process)."""

from __future__ import annotations

from pathlib import Path

from tests.api.conftest import Api

DATA = Path(__file__).resolve().parents[1] / "data" / "modeler"


def upload(api: Api, *names: str, label: str = "modeler") -> dict[str, object]:
    files = [("data", (name, (DATA / name).read_bytes(), "application/xml")) for name in names]
    r = api.http.post("/deployment/create", data={"deployment-name": label}, files=files)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_deployment_returns_every_definition_and_the_warnings(api: Api) -> None:
    body = upload(api, "two_processes.bpmn", "warnings.bpmn")
    deployed = body["deployedProcessDefinitions"]
    assert isinstance(deployed, dict)
    assert sorted(d["key"] for d in deployed.values()) == ["billing", "noisy", "orders"]
    assert {d["deploymentId"] for d in deployed.values()} == {body["id"]}  # one deployment
    warnings = body["warnings"]
    assert isinstance(warnings, list)
    assert any("'customer' is not executable" in w for w in warnings)
    assert any("camunda:executionListener" in w for w in warnings)
    listed = api.http.get("/process-definition").json()
    assert sorted(d["key"] for d in listed) == ["billing", "noisy", "orders"]


def test_a_refused_file_deploys_nothing_of_the_deployment(api: Api) -> None:
    broken = (
        (DATA / "two_processes.bpmn").read_bytes().replace(b'targetRef="b_end"', b'targetRef="x"')
    )
    r = api.http.post(
        "/deployment/create",
        files=[
            ("a", ("pass_through.bpmn", (DATA / "pass_through.bpmn").read_bytes())),
            ("b", ("broken.bpmn", broken)),
        ],
    )
    assert r.status_code == 400 and r.json()["type"] == "ParseException"
    assert "broken.bpmn" in r.json()["details"]
    assert api.http.get("/process-definition").json() == []


def test_uploads_are_decoded_like_files_on_disk(api: Api) -> None:
    on_disk = api.engine.deploy(DATA / "encoding_utf8.bpmn")
    for name in ("encoding_latin1.bpmn", "encoding_utf16.bpmn"):
        body = upload(api, name)
        deployed = body["deployedProcessDefinitions"]
        assert isinstance(deployed, dict)
        [(def_id, definition)] = deployed.items()
        assert def_id == on_disk.id  # the same model: no new version
        assert definition["name"] == "Café crème à emporter"


def test_tasks_carry_their_settings(api: Api) -> None:
    upload(api, "user_tasks.bpmn")
    iid = api.start("approvals", {"approver": "statler", "urgency": 90})
    tasks = {
        t["taskDefinitionKey"]: t
        for t in api.http.get("/task", params={"processInstanceId": iid}).json()
    }
    camunda = tasks["camunda_task"]
    assert camunda["assignee"] == "statler" and camunda["priority"] == 70
    assert camunda["due"] == "2030-06-01T10:00:00.000+0000"
    assert camunda["followUp"] is not None
    assert camunda["camundaFormRef"] == {
        "key": "approve-form",
        "binding": "version",
        "version": "3",
    }
    assert camunda["candidateUsers"] == ["kermit", "piggy"]
    assert camunda["candidateGroups"] == ["management"]
    flowable = tasks["flowable_task"]
    assert (flowable["formKey"], flowable["priority"]) == ("forms/flowable.html", 90)
    # the task is assigned (fozzie): a candidate query finds it only with
    # includeAssignedTasks, as in Camunda
    assert api.http.get("/task", params={"candidateUser": "rowlf"}).json() == []
    with_assigned = {"candidateUser": "rowlf", "includeAssignedTasks": "true"}
    by_user = api.http.get("/task", params=with_assigned).json()
    assert [t["taskDefinitionKey"] for t in by_user] == ["bpmn_task"]
    one = api.http.get(f"/task/{camunda['id']}").json()
    assert one["priority"] == 70 and one["due"] == camunda["due"]
