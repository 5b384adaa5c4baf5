"""The /task surface over real HTTP: lists and counts by query and by body, Camunda's
filters and sorting, update, assignee, identity links, task variables, form variables,
complete and submit-form with variables in return."""

from __future__ import annotations

from typing import Any

from tests.api.camunda_helpers import assert_error, review, task_of
from tests.api.conftest import Api


def _ids(res: Any) -> list[str]:
    assert res.status_code == 200, res.text
    return [t["processInstanceId"] for t in res.json()]


def test_task_lists_filter_sort_and_count_by_query_and_body(api: Api) -> None:
    a, b, c = review(api)
    http = api.http
    assert _ids(http.get("/task")) == [a, b, c]
    assert _ids(http.get("/task", params={"processInstanceBusinessKey": "o-1"})) == [b]
    assert _ids(http.get("/task", params={"processDefinitionKey": "review"})) == [a, b, c]
    assert _ids(http.get("/task", params={"taskDefinitionKey": "approve"})) == [a, b, c]
    assert _ids(http.get("/task", params={"candidateGroups": "hr,finance"})) == [a, b, c]
    assert _ids(http.get("/task", params={"candidateUser": "bob"})) == [a, b, c]
    assert _ids(http.get("/task", params={"nameLike": "Approve%"})) == [a, b, c]
    assert _ids(http.get("/task", params={"sortBy": "created", "sortOrder": "desc"})) == [c, b, a]
    assert _ids(http.get("/task", params={"firstResult": 1, "maxResults": 1})) == [b]
    task_b = task_of(api, b)
    assert http.post(f"/task/{task_b['id']}/claim", json={"userId": "ann"}).status_code == 204
    assert _ids(http.get("/task", params={"candidateGroup": "sales"})) == [a, c]
    with_assigned = {"candidateGroup": "sales", "includeAssignedTasks": "true"}
    assert _ids(http.get("/task", params=with_assigned)) == [a, b, c]
    assert _ids(http.get("/task", params={"unassigned": "true"})) == [a, c]
    assert _ids(http.get("/task", params={"assignee": "ann"})) == [b]
    body = {
        "processDefinitionKey": "review",
        "unassigned": True,
        "sorting": [{"sortBy": "created", "sortOrder": "desc"}],
        "tenantIdIn": None,  # nulls are ignored, like unknown fields
        "someFutureField": 1,
    }
    assert _ids(http.post("/task", json=body, params={"maxResults": 1})) == [c]
    assert http.post("/task/count", json=body).json() == {"count": 2}
    assert http.get("/task/count", params={"assignee": "ann"}).json() == {"count": 1}
    one = {"sorting": {"sortBy": "priority", "sortOrder": "desc"}}  # an object, not a list
    assert len(_ids(http.post("/task", json=one))) == 3
    assert http.post("/task", content=b"", params={"maxResults": 2}).status_code == 200
    due = http.get("/task", params={"dueBefore": "2030-01-01T00:00:00.000+0000"})
    assert _ids(due) == []


def test_update_assign_identity_links_and_variables(api: Api) -> None:
    (inst,) = review(api, 1)
    http = api.http
    task = task_of(api, inst)
    assert (task["priority"], task["owner"], task["description"]) == (70, None, None)
    update = {
        "name": "Approve the big order",
        "description": "check stock first",
        "assignee": "carl",
        "owner": "olga",
        "due": "2026-12-24T18:00:00.000+0000",
        "followUp": "2026-12-20T09:30:00.000+0100",
        "priority": 90,
    }
    assert http.put(f"/task/{task['id']}", json=update).status_code == 204
    got = http.get(f"/task/{task['id']}").json()
    assert got["name"] == "Approve the big order" and got["description"] == "check stock first"
    assert (got["assignee"], got["owner"], got["priority"]) == ("carl", "olga", 90)
    assert got["due"] == "2026-12-24T18:00:00.000+0000"
    assert got["followUp"] == "2026-12-20T08:30:00.000+0000"
    assert http.post(f"/task/{task['id']}/assignee", json={"userId": "dora"}).status_code == 204
    links = http.get(f"/task/{task['id']}/identity-links").json()
    assert {(x["type"], x["userId"], x["groupId"]) for x in links} == {
        ("assignee", "dora", None),
        ("owner", "olga", None),
        ("candidate", "ann", None),
        ("candidate", "bob", None),
        ("candidate", None, "sales"),
        ("candidate", None, "finance"),
    }
    only = http.get(f"/task/{task['id']}/identity-links", params={"type": "owner"}).json()
    assert only == [{"userId": "olga", "groupId": None, "type": "owner"}]

    variables = http.get(f"/task/{task['id']}/variables").json()
    assert variables["amount"] == {"type": "Integer", "value": 100, "valueInfo": {}}
    assert variables["reviewers"] == {"type": "Json", "value": '["ann","bob"]', "valueInfo": {}}
    when = {"value": "2026-11-29T10:00:00.000+0000", "type": "Date"}
    assert http.put(f"/task/{task['id']}/variables/when", json=when).status_code == 204
    assert http.get(f"/task/{task['id']}/variables/when").json() == {**when, "valueInfo": {}}
    form = http.get(f"/task/{task['id']}/form-variables", params={"variableNames": "amount"})
    assert form.json() == {"amount": {"type": "Integer", "value": 100, "valueInfo": {}}}
    assert http.delete(f"/task/{task['id']}/variables/when").status_code == 204
    assert_error(
        http.get(f"/task/{task['id']}/variables/when"), 404, "InvalidRequestException", "when"
    )
    patch = {"modifications": {"note": {"value": "ok", "type": "String"}}, "deletions": ["amount"]}
    assert http.post(f"/task/{task['id']}/variables", json=patch).status_code == 204
    assert set(http.get(f"/task/{task['id']}/variables").json()) == {"reviewers", "note"}

    done = http.post(
        f"/task/{task['id']}/submit-form",
        json={"variables": {"approved": {"value": True}}, "withVariablesInReturn": True},
    )
    assert done.status_code == 200, done.text
    assert done.json()["approved"] == {"type": "Boolean", "value": True, "valueInfo": {}}
    ship = task_of(api, inst)
    assert ship["taskDefinitionKey"] == "ship"
    assert http.post(f"/task/{ship['id']}/complete", json={}).status_code == 204
    assert api.engine.get_instance(inst).state.value == "completed"
    assert_error(http.get(f"/task/{ship['id']}"), 404, "InvalidRequestException", ship["id"])
