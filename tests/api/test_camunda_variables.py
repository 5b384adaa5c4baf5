"""Variables over real HTTP: every Camunda type round-trips exactly as written, instance
variables are modified and deleted in one call, and /variable-instance lists and counts
them with Camunda's filters."""

from __future__ import annotations

from typing import Any

from tests.api.camunda_helpers import assert_error, review
from tests.api.conftest import Api
from tests.engine_helpers import table_dump

TYPED: dict[str, dict[str, Any]] = {
    "s": {"value": "text", "type": "String", "valueInfo": {}},
    "i": {"value": 42, "type": "Integer", "valueInfo": {}},
    "l": {"value": 7, "type": "Long", "valueInfo": {}},
    "big": {"value": 9_000_000_000, "type": "Long", "valueInfo": {}},
    "d": {"value": 2.5, "type": "Double", "valueInfo": {}},
    "whole": {"value": 3.0, "type": "Double", "valueInfo": {}},
    "b": {"value": False, "type": "Boolean", "valueInfo": {}},
    "when": {"value": "2026-11-29T10:00:00.000+0000", "type": "Date", "valueInfo": {}},
    "doc": {"value": '{"a":[1,2],"b":null}', "type": "Json", "valueInfo": {}},
    "nothing": {"value": None, "type": "Null", "valueInfo": {}},
}


def test_every_type_round_trips_as_camunda_writes_it(api: Api) -> None:
    (inst,) = review(api, 1)
    http = api.http
    r = http.post(f"/process-instance/{inst}/variables", json={"modifications": TYPED})
    assert r.status_code == 204, r.text
    got = http.get(f"/process-instance/{inst}/variables").json()
    for name, value in TYPED.items():
        assert got[name] == value, name
        assert http.get(f"/process-instance/{inst}/variables/{name}").json() == value
    # lower-case type names as the JS client sends; a Date with another offset is normalised
    one = {"value": "2026-11-29T12:00:00.000+0200", "type": "date"}
    assert http.put(f"/process-instance/{inst}/variables/when", json=one).status_code == 204
    assert http.get(f"/process-instance/{inst}/variables/when").json()["value"] == (
        "2026-11-29T10:00:00.000+0000"
    )
    # the engine sees plain JSON
    stored = api.engine.get_instance(inst)
    assert stored.variables["doc"] == {"a": [1, 2], "b": None} and stored.variables["l"] == 7
    listed = http.get("/variable-instance", params={"variableName": "doc"}).json()
    assert [(v["processInstanceId"], v["type"], v["value"]) for v in listed] == [
        (inst, "Json", '{"a":[1,2],"b":null}')
    ]
    assert listed[0]["id"] == f"{inst}:doc"
    assert http.get(f"/variable-instance/{inst}:doc").json()["value"] == listed[0]["value"]


def test_modifications_and_deletions_in_one_call(api: Api) -> None:
    (inst,) = review(api, 1)
    http = api.http
    body = {
        "modifications": {"x": {"value": 1}, "y": {"value": "keep"}, "amount": {"value": 5}},
        "deletions": ["x", "reviewers"],
    }
    assert http.post(f"/process-instance/{inst}/variables", json=body).status_code == 204
    assert api.engine.get_instance(inst).variables == {"y": "keep", "amount": 5}
    assert http.delete(f"/process-instance/{inst}/variables/y").status_code == 204
    assert http.delete(f"/process-instance/{inst}/variables/never").status_code == 204
    assert api.engine.get_instance(inst).variables == {"amount": 5}
    types = [e.type for e in api.engine.history(inst)]
    assert types.count("variables_deleted") == 2


def test_variable_instances_filters_paging_and_counts(api: Api) -> None:
    a, b, c = review(api)
    http = api.http
    amounts = http.get("/variable-instance", params={"variableName": "amount"}).json()
    assert [(v["processInstanceId"], v["value"]) for v in amounts] == [(a, 100), (b, 200), (c, 300)]
    big = http.get("/variable-instance", params={"variableValues": "amount_gt_150"}).json()
    assert [v["processInstanceId"] for v in big] == [b, c]
    # like compares with text: a query value of digits stays the pattern "100" (it was 400)
    like = http.get("/variable-instance", params={"variableValues": "amount_like_100"})
    cond = [{"name": "amount", "operator": "like", "value": "100"}]
    same = http.post("/variable-instance", json={"variableValues": cond})
    assert like.status_code == 200 and like.json() == same.json(), like.text
    body = {
        "processInstanceIdIn": [a, c],
        "variableValues": [{"name": "amount", "operator": "lteq", "value": 300}],
        "sorting": [{"sortBy": "variableName", "sortOrder": "asc"}],
    }
    posted = http.post("/variable-instance", json=body, params={"maxResults": 1}).json()
    assert [(v["processInstanceId"], v["name"]) for v in posted] == [(a, "amount")]
    assert http.post("/variable-instance/count", json=body).json() == {"count": 2}
    assert http.get("/variable-instance/count").json() == {"count": 6}
    names = {"variableNameIn": "reviewers", "processInstanceIdIn": b}
    (rev,) = http.get("/variable-instance", params=names).json()
    assert rev["type"] == "Json" and rev["value"] == '["ann","bob"]'
    assert http.get("/variable-instance", params={"taskIdIn": "t1"}).json() == []


def test_bad_variable_input_changes_nothing(api: Api) -> None:
    (inst,) = review(api, 1)
    http = api.http
    before = table_dump(api.engine)
    bad = [
        ({"modifications": {"x": {"value": "abc", "type": "Integer"}}}, "Integer"),
        ({"modifications": {"x": {"value": 2**40, "type": "Integer"}}}, "Integer"),
        ({"modifications": {"x": {"value": "yesterday", "type": "Date"}}}, "Date"),
        ({"modifications": {"x": {"value": "{not json", "type": "Json"}}}, "JSON"),
        ({"modifications": {"x": {"value": 1, "type": "Nope"}}}, "Nope"),
        ({"modifications": {"x": {"value": "x" * 300_000}}}, "over the limit"),
        ({"modifications": {"x": 5}}, "must be an object"),
        ({"deletions": "amount"}, "deletions"),
        ({"modifications": {"x": {"value": "a\u0000b"}}}, "NUL"),
    ]
    for body, fragment in bad:
        r = http.post(f"/process-instance/{inst}/variables", json=body)
        assert_error(r, 400, r.json().get("type", "?"), fragment)
        assert r.json()["type"] in ("InvalidRequestException", "RestException"), r.text
    assert_error(
        http.put(f"/process-instance/{inst}/variables/x", json={"value": 1, "type": "Boolean"}),
        400,
        "InvalidRequestException",
        "Boolean",
    )
    assert_error(
        http.post("/process-instance/nope/variables", json={"modifications": {}}),
        404,
        "InvalidRequestException",
        "nope",
    )
    assert_error(
        http.get(f"/process-instance/{inst}/variables/missing"), 404, "InvalidRequestException"
    )
    assert_error(http.get("/variable-instance/nope:x"), 404, "InvalidRequestException")
    for params in (
        {"variableValues": "amount_bigger_1"},
        {"variableValues": "amount"},
        {"maxResults": "many"},
        {"maxResults": 100_000},
        {"firstResult": -1},
        {"sortBy": "color"},
        {"sortBy": "variableName", "sortOrder": "up"},
        {"tenantIdIn": "t1"},
    ):
        assert_error(http.get("/variable-instance", params=params), 400, "InvalidRequestException")
    assert table_dump(api.engine) == before
