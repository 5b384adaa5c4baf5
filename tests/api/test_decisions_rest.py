"""Camunda 7's decision endpoints over real HTTP: a ``.dmn`` deployed with
``/deployment/create``, ``/decision-definition`` (list, count, key, id, xml, evaluate with
typed variables), ``/decision-requirements-definition`` and ``/history/decision-instance``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api.conftest import Api
from tests.engine_helpers import table_dump

DATA = Path(__file__).resolve().parents[1] / "data"
PRICING = (DATA / "dmn" / "pricing.dmn").read_bytes()
BPMN = (DATA / "forms" / "approval.bpmn").read_bytes()


def deploy(api: Api, *files: tuple[str, bytes]) -> dict[str, Any]:
    r = api.http.post(
        "/deployment/create",
        data={"deployment-name": "rules"},
        files=[(name, (name, data)) for name, data in files],
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_definitions_are_listed_counted_and_read(api: Api) -> None:
    body = deploy(api, ("approval.bpmn", BPMN), ("pricing.dmn", PRICING))
    deployed = body["deployedDecisionDefinitions"]
    assert sorted(d["key"] for d in deployed.values()) == ["d_Discount", "d_Price"]
    (drd,) = body["deployedDecisionRequirementsDefinitions"].values()
    assert (drd["key"], drd["version"], drd["resource"]) == ("pricing", 1, "pricing.dmn")
    listed = api.http.get("/decision-definition", params={"sortBy": "key", "sortOrder": "asc"})
    assert [d["key"] for d in listed.json()] == ["d_Discount", "d_Price"]
    assert api.http.get("/decision-definition/count").json() == {"count": 2}
    one = api.http.get("/decision-definition/key/d_Price").json()
    assert one["decisionRequirementsDefinitionKey"] == "pricing" and one["version"] == 1
    assert api.http.get(f"/decision-definition/{one['id']}").json() == one
    xml = api.http.get("/decision-definition/key/d_Price/xml").json()
    assert xml["id"] == one["id"] and 'id="d_Price"' in xml["dmnXml"]
    by_drd = api.http.get(
        "/decision-definition", params={"decisionRequirementsDefinitionKey": "pricing"}
    )
    assert len(by_drd.json()) == 2
    assert api.http.get("/decision-requirements-definition/count").json() == {"count": 1}
    got = api.http.get(f"/decision-requirements-definition/{drd['id']}").json()
    assert got == drd
    assert (
        'id="pricing"'
        in api.http.get(f"/decision-requirements-definition/{drd['id']}/xml").json()["dmnXml"]
    )
    missing = api.http.get("/decision-definition/key/nope")
    assert missing.status_code == 404 and missing.json()["type"] == "RestException"
    # edited and redeployed: version 2 is the latest, version 1 stays
    deploy(api, ("pricing.dmn", PRICING.replace(b"<text>0.2</text>", b"<text>0.3</text>")))
    latest = api.http.get(
        "/decision-definition", params={"key": "d_Price", "latestVersion": "true"}
    )
    assert [d["version"] for d in latest.json()] == [2]
    assert (
        api.http.get("/decision-definition/count", params={"key": "d_Price"}).json()["count"] == 2
    )


def test_evaluate_by_key_and_id_with_typed_variables_then_read_the_history(api: Api) -> None:
    deploy(api, ("pricing.dmn", PRICING))
    variables = {"Amount": {"value": 250, "type": "Integer"}, "Customer": {"value": "gold"}}
    r = api.http.post("/decision-definition/key/d_Discount/evaluate", json={"variables": variables})
    assert r.status_code == 200, r.text
    assert r.json() == [{"rate": {"type": "Double", "value": 0.2, "valueInfo": {}}}]
    one = api.http.get("/decision-definition/key/d_Price").json()
    r = api.http.post(f"/decision-definition/{one['id']}/evaluate", json={"variables": variables})
    assert r.json() == [{"Price": {"type": "Integer", "value": 200, "valueInfo": {}}}]
    history = api.http.get(
        "/history/decision-instance",
        params={
            "decisionDefinitionKey": "d_Discount",
            "includeInputs": "true",
            "includeOutputs": "true",
        },
    ).json()
    first = history[0]  # the direct evaluation (the other is a required decision of d_Price)
    assert first["rootDecisionInstanceId"] is None
    assert [(i["clauseName"], i["value"]) for i in first["inputs"]] == [
        ("Amount", 250),
        ("Customer", "gold"),
    ]
    (out,) = first["outputs"]
    assert (out["ruleId"], out["ruleOrder"], out["variableName"], out["value"]) == (
        "r2",
        2,
        "rate",
        0.2,
    )
    child = history[1]
    root = api.http.get(f"/history/decision-instance/{child['rootDecisionInstanceId']}").json()
    assert root["decisionDefinitionKey"] == "d_Price" and root["inputs"] is None
    count = api.http.get(
        "/history/decision-instance/count", params={"rootDecisionInstancesOnly": "true"}
    )
    assert count.json() == {"count": 2}


def test_bad_requests_change_nothing(api: Api) -> None:
    deploy(api, ("pricing.dmn", PRICING))
    before = table_dump(api.engine)
    missing = api.http.post("/decision-definition/key/nope/evaluate", json={"variables": {}})
    assert missing.status_code == 404
    bad = api.http.post(
        "/decision-definition/key/d_Discount/evaluate", json={"variables": {"Amount": 5}}
    )
    assert bad.status_code == 400 and bad.json()["type"] == "InvalidRequestException"
    paged = api.http.get("/decision-definition", params={"maxResults": "5000"})
    assert paged.status_code == 400
    unknown = api.http.get("/history/decision-instance/nope")
    assert unknown.status_code == 404
    broken = api.http.post(
        "/deployment/create",
        files=[("pricing.dmn", ("pricing.dmn", PRICING.replace(b"(1 - Discount)", b"(1 -")))],
    )
    assert broken.status_code == 400 and "FEEL syntax error" in broken.json()["message"]
    assert table_dump(api.engine) == before
