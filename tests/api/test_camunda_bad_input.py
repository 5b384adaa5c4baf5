"""Bad input to every endpoint of the task, variable and history surface (unknown ids,
malformed filters, wrong variable types, oversized values) answers Camunda's 4xx shape and
changes nothing: every table is dumped before and after."""

from __future__ import annotations

from typing import Any

from tests.api.camunda_helpers import assert_error, review, task_of
from tests.api.conftest import Api
from tests.engine_helpers import table_dump

BIG = "x" * 300_000
LISTS = (
    "/task",
    "/task/count",
    "/variable-instance",
    "/variable-instance/count",
    "/history/process-instance",
    "/history/process-instance/count",
    "/history/activity-instance",
    "/history/activity-instance/count",
    "/history/incident",
    "/history/incident/count",
    "/history/variable-instance",
    "/history/variable-instance/count",
    "/history/task",
    "/history/task/count",
)
BAD_QUERIES: list[dict[str, Any]] = [
    {"sortBy": "nonsense"},
    {"sortBy": "created", "sortOrder": "sideways"},
    {"sortOrder": "desc"},
    {"maxResults": "ten"},
    {"maxResults": 5000},
    {"firstResult": -3},
]
FILTERS: dict[str, list[dict[str, Any]]] = {
    "/task": [
        {"dueBefore": "tomorrow"},
        {"priority": "high"},
        {"unassigned": "maybe"},
        {"processVariables": "a_eq_1"},
    ],
    "/variable-instance": [{"variableValues": "a_is_1"}, {"caseInstanceIdIn": "c"}],
    "/history/process-instance": [{"startedAfter": "2026-13-45"}, {"finished": "yes"}],
    "/history/activity-instance": [{"finished": "x"}],
    "/history/incident": [{"createTimeBefore": "noon"}, {"open": "1"}],
    "/history/task": [{"unfinished": "0"}, {"taskPriority": "x"}],
}
BAD_BODIES: list[Any] = [
    [1, 2],
    {"sorting": "created"},
    {"sorting": [{"sortBy": "nope"}]},
    {"sorting": [{"sortBy": "startTime", "sortOrder": "up"}]},
    {"processInstanceId": {"a": 1}},
]
POST_LISTS = (
    "/task",
    "/task/count",
    "/variable-instance",
    "/variable-instance/count",
    "/history/process-instance",
    "/history/process-instance/count",
    "/history/variable-instance",
    "/history/variable-instance/count",
    "/history/task",
    "/history/task/count",
)


def test_bad_input_to_every_endpoint_answers_4xx_and_changes_nothing(api: Api) -> None:
    inst, _ = review(api, 2)
    http = api.http
    task = task_of(api, inst)["id"]
    before = table_dump(api.engine)
    bad_request = "InvalidRequestException"

    for path in LISTS:
        for params in BAD_QUERIES:
            if "count" in path and any(k in params for k in ("maxResults", "firstResult")):
                continue  # counts do not page
            assert_error(http.get(path, params=params), 400, bad_request)
        for params in FILTERS.get(path.removesuffix("/count"), []):
            assert_error(http.get(path, params=params), 400, bad_request)
    for path in POST_LISTS:
        for body in BAD_BODIES:
            assert_error(http.post(path, json=body), 400, bad_request)
        assert_error(http.post(path, content=b"{not json"), 400, bad_request)

    unknown = [
        ("get", "/task/nope", None),
        ("put", "/task/nope", {"name": "x"}),
        ("post", "/task/nope/claim", {"userId": "ann"}),
        ("post", "/task/nope/unclaim", None),
        ("post", "/task/nope/assignee", {"userId": "ann"}),
        ("post", "/task/nope/complete", {}),
        ("post", "/task/nope/submit-form", {}),
        ("get", "/task/nope/identity-links", None),
        ("get", "/task/nope/variables", None),
        ("get", "/task/nope/form-variables", None),
        ("get", "/task/nope/variables/amount", None),
        ("put", "/task/nope/variables/amount", {"value": 1}),
        ("delete", "/task/nope/variables/amount", None),
        ("post", "/task/nope/variables", {"modifications": {}}),
        ("get", "/variable-instance/nope:amount", None),
        ("post", "/process-instance/nope/variables", {"modifications": {}}),
        ("get", "/process-instance/nope/variables/amount", None),
        ("put", "/process-instance/nope/variables/amount", {"value": 1}),
        ("delete", "/process-instance/nope/variables/amount", None),
        ("get", "/history/process-instance/nope", None),
    ]
    for method, path, body in unknown:
        res = http.request(method, path, json=body)
        assert_error(res, 404, bad_request, "nope")

    wrong = [
        ("put", f"/task/{task}", {"due": "soon"}),
        ("put", f"/task/{task}", {"priority": "high"}),
        ("put", f"/task/{task}", {"name": BIG[:300]}),
        ("post", f"/task/{task}/claim", {}),
        ("post", f"/task/{task}/claim", {"userId": BIG[:300]}),
        ("post", f"/task/{task}/assignee", {"userId": ""}),
        ("post", f"/task/{task}/complete", {"variables": {"a": {"value": "x", "type": "Long"}}}),
        ("post", f"/task/{task}/submit-form", {"variables": {"a": {"value": BIG}}}),
        ("put", f"/task/{task}/variables/a", {"value": "2026-99-99", "type": "Date"}),
        ("put", f"/task/{task}/variables/a", {"value": BIG, "type": "String"}),
        ("post", f"/task/{task}/variables", {"deletions": [1]}),
        ("get", f"/task/{task}/identity-links?type=boss", None),
        ("get", f"/task/{task}/variables?deserializeValues=perhaps", None),
        ("put", f"/process-instance/{inst}/variables/a", {"value": True, "type": "Double"}),
        ("put", f"/process-instance/{inst}/variables/a", {"value": 1, "type": "Unknown"}),
        ("post", f"/process-instance/{inst}/variables", {"modifications": {"a": {"value": BIG}}}),
        ("post", f"/process-instance/{inst}/variables", {"modifications": [1]}),
    ]
    for method, path, body in wrong:
        res = http.request(method, path, json=body)
        assert 400 <= res.status_code < 500, (method, path, res.text)
        assert res.headers["content-type"] == "application/json"
        assert set(res.json()) >= {"type", "message"} and "detail" not in res.json()

    assert table_dump(api.engine) == before
    assert task_of(api, inst)["assignee"] is None


#: Flags that contradict each other: nothing matches both (Camunda ANDs them), so the
#: list is empty (a valid request per /openapi.json), not a 400.
CONTRADICTIONS = {
    "/task": {"assigned": "true", "unassigned": "true"},
    "/history/activity-instance": {"finished": "true", "unfinished": "true"},
    "/history/task": {"finished": "true", "unfinished": "true"},
}


def test_contradictory_flags_list_nothing(api: Api) -> None:
    review(api, 2)
    before = table_dump(api.engine)
    for path, params in CONTRADICTIONS.items():
        every = api.http.get(path).json()
        assert every, path  # there is something the flags could have listed
        res = api.http.get(path, params=params)
        assert res.status_code == 200 and res.json() == [], (path, res.text)
        assert api.http.get(path + "/count", params=params).json() == {"count": 0}
    assert (
        api.http.get(
            "/task", params={"withCandidateGroups": "true", "withoutCandidateGroups": "true"}
        ).json()
        == []
    )
    assert table_dump(api.engine) == before
