"""``/deployment`` and ``/process-definition/{id}`` over real HTTP: every file kept and read
back, listing and paging, resource downloads that a browser never renders, deleting with
and without cascade, the XML, the start form and starting a version by its id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api.conftest import Api
from tests.engine_helpers import table_dump

FORMS = Path(__file__).resolve().parents[1] / "data" / "forms"
BPMN = (FORMS / "approval.bpmn").read_bytes()
REVIEW = (FORMS / "expense-review.form").read_bytes()


def create(api: Api, *files: tuple[str, bytes], **fields: str) -> dict[str, Any]:
    r = api.http.post(
        "/deployment/create",
        data=fields,
        files=[(name, (name, data)) for name, data in files],
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_every_file_is_kept_and_can_be_read_back(api: Api) -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    body = create(
        api,
        ("approval.bpmn", BPMN),
        ("expense-review.form", REVIEW),
        ("diagram.svg", svg),
        **{"deployment-name": "approval", "deployment-source": "tests", "tenant-id": "acme"},
    )
    assert (body["name"], body["source"], body["tenantId"]) == ("approval", "tests", "acme")
    [definition] = body["deployedProcessDefinitions"].values()
    assert definition["tenantId"] == "acme"
    assert body["links"][0]["href"].endswith(f"/engine-rest/deployment/{body['id']}")
    listed = api.http.get(f"/deployment/{body['id']}/resources").json()
    by_name = {r["name"]: r for r in listed}
    assert sorted(by_name) == ["approval.bpmn", "diagram.svg", "expense-review.form"]
    form = by_name["expense-review.form"]
    assert form == api.http.get(f"/deployment/{body['id']}/resources/{form['id']}").json()
    data = api.http.get(f"/deployment/{body['id']}/resources/{form['id']}/data")
    assert data.content == REVIEW and data.headers["content-type"] == "application/json"
    assert data.headers["content-disposition"] == 'attachment; filename="expense-review.form"'
    image = api.http.get(f"/deployment/{body['id']}/resources/{by_name['diagram.svg']['id']}/data")
    # an SVG (or HTML) someone deployed is a download, sandboxed: it never runs here
    assert image.headers["content-type"] == "application/octet-stream"
    assert "sandbox" in image.headers["content-security-policy"]
    assert image.headers["x-content-type-options"] == "nosniff"
    xml = api.http.get(f"/deployment/{body['id']}/resources/{by_name['approval.bpmn']['id']}/data")
    assert xml.content == BPMN and xml.headers["content-type"] == "application/xml"
    missing = api.http.get(f"/deployment/{body['id']}/resources/nope/data")
    assert missing.status_code == 404 and missing.json()["type"] == "InvalidRequestException"


def test_list_count_and_filters(api: Api) -> None:
    first = create(api, ("a.txt", b"a"), **{"deployment-name": "docs-a"})
    second = create(api, ("b.txt", b"b"), **{"deployment-name": "docs-b", "tenant-id": "t1"})
    assert api.http.get("/deployment", params={"maxResults": 0}).json() == []
    everything = api.http.get("/deployment").json()
    assert [d["id"] for d in everything] == [first["id"], second["id"]]
    assert set(everything[0]) == {"id", "name", "source", "deploymentTime", "tenantId", "links"}
    newest = api.http.get("/deployment", params={"sortBy": "deploymentTime", "sortOrder": "desc"})
    assert [d["id"] for d in newest.json()] == [second["id"], first["id"]]
    assert api.http.get("/deployment/count", params={"tenantIdIn": "t1"}).json() == {"count": 1}
    by_name = api.http.get("/deployment", params={"nameLike": "docs-%", "firstResult": 1})
    assert [d["id"] for d in by_name.json()] == [second["id"]]
    assert api.http.get("/deployment", params={"sortBy": "nope"}).status_code == 400
    one = api.http.get(f"/deployment/{first['id']}").json()
    assert one["name"] == "docs-a" and one["deploymentTime"] == first["deploymentTime"]
    missing = api.http.get("/deployment/nope")
    assert missing.status_code == 404
    assert missing.json()["message"] == "Deployment with id 'nope' does not exist"


def test_bad_settings_are_refused_and_nothing_is_stored(api: Api) -> None:
    before = table_dump(api.engine)
    r = api.http.post(
        "/deployment/create",
        data={"enable-duplicate-filtering": "maybe"},
        files=[("approval.bpmn", ("approval.bpmn", BPMN))],
    )
    assert r.status_code == 400 and "enable-duplicate-filtering" in r.json()["message"]
    r = api.http.post(
        "/deployment/create",
        data={"tenant-id": "x" * 65},
        files=[("approval.bpmn", ("approval.bpmn", BPMN))],
    )
    assert r.status_code == 400 and "tenant id" in r.json()["message"]
    twice = api.http.post(
        "/deployment/create",
        files=[("a", ("x.form", REVIEW)), ("b", ("x.form", REVIEW))],
    )
    assert twice.status_code == 400 and "twice" in twice.json()["message"]
    assert table_dump(api.engine) == before


def test_delete_refuses_with_instances_and_cascades(api: Api) -> None:
    body = create(api, ("approval.bpmn", BPMN), ("expense-review.form", REVIEW))
    instance = api.start("approval")
    before = table_dump(api.engine)
    refused = api.http.delete(f"/deployment/{body['id']}")
    assert refused.status_code == 400
    assert "There are 1 dependent process instances" in refused.json()["message"]
    assert table_dump(api.engine) == before
    cascade = api.http.delete(f"/deployment/{body['id']}", params={"cascade": "true"})
    assert cascade.status_code == 204
    assert api.http.get(f"/process-instance/{instance}").status_code == 404
    assert api.http.get(f"/history/process-instance/{instance}").status_code == 404
    assert api.http.get("/deployment/count").json() == {"count": 0}
    assert api.http.get("/process-definition").json() == []
    assert api.http.delete(f"/deployment/{body['id']}").status_code == 404


def test_a_definition_by_id_its_xml_start_form_and_start(api: Api) -> None:
    body = create(api, ("approval.bpmn", BPMN), ("expense-review.form", REVIEW))
    [def_id] = body["deployedProcessDefinitions"]
    one = api.http.get(f"/process-definition/{def_id}").json()
    assert one["key"] == "approval" and one["deploymentId"] == body["id"]
    xml = api.http.get(f"/process-definition/{def_id}/xml").json()
    assert xml["id"] == def_id and xml["bpmn20Xml"] == BPMN.decode()
    assert api.http.get("/process-definition/key/approval/xml").json() == xml
    form = api.http.get(f"/process-definition/{def_id}/startForm").json()
    assert form == {
        "key": None,
        "contextPath": None,
        "camundaFormRef": {"key": "expense-request", "binding": "deployment"},
    }
    assert api.http.get("/process-definition/key/approval/startForm").json() == form
    # a second version: the first can still be started by its id
    create(api, ("approval.bpmn", BPMN.replace(b"Approve an expense", b"Approve")))
    started = api.http.post(
        f"/process-definition/{def_id}/start", json={"businessKey": None, "variables": None}
    )
    assert started.status_code == 200, started.text
    assert started.json()["definitionId"] == def_id
    for path in ("", "/xml", "/startForm"):
        missing = api.http.get(f"/process-definition/nope:1:x{path}")
        assert missing.status_code == 404, path
    assert api.http.post("/process-definition/nope/start", json={}).status_code == 404
