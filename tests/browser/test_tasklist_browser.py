"""The task list in real Chromium against a real ``bpm api`` (issue 23 item 4): a user signs
in, sees a task of their group, claims it, a required field left empty is refused in the
page (form-js) and nothing is sent, the submitted values arrive in the instance; another
user cannot see or claim it; a write without the session's CSRF token is refused; names,
labels, variables and comments full of markup run no script (the page's CSP forbids inline
script). ``BPM_SCREENSHOTS=1`` also saves the screenshots to ``docs/img/``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Dialog, Page, expect

from bpm import Engine
from tests.api.conftest import ApiServer

ROOT = Path(__file__).resolve().parents[2]
OPS = {"Authorization": "Bearer opsecret"}
MARKUP = '<img src=x onerror="window.pwned=1">'
PASSWORD = "correct horse battery"

FORM = {
    "id": "review",
    "type": "default",
    "schemaVersion": 16,
    "components": [
        {"type": "text", "id": "Intro", "text": f"Please review {MARKUP}"},
        {"type": "textfield", "key": "reason", "id": "Field_reason",
         "label": f"Reason {MARKUP}", "validate": {"required": True}},
        {"type": "number", "key": "amount", "id": "Field_amount", "label": "Amount",
         "validate": {"min": 0, "max": 100}},
    ],
}  # fmt: skip

MODEL = f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="review" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="check"/>
    <bpmn:userTask id="check" name="Review {MARKUP.replace('"', "&quot;").replace("<", "&lt;")}"
        camunda:candidateGroups="sales"
        camunda:formKey="camunda-forms:deployment:review.form"/>
    <bpmn:sequenceFlow id="f2" sourceRef="check" targetRef="end"/>
    <bpmn:endEvent id="end"/>
  </bpmn:process>
</bpmn:definitions>
"""


ESCAPED = MARKUP.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")

# A process ann (sales) may start from its start form (bob, finance, may not), drawn (DI)
# so that the task list shows where its task stands.
ORDER = f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI"
    xmlns:dc="http://www.omg.org/spec/DD/20100524/DC"
    xmlns:di="http://www.omg.org/spec/DD/20100524/DI"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="o" targetNamespace="t">
  <bpmn:process id="order" name="Order {ESCAPED}" isExecutable="true"
      camunda:candidateStarterGroups="sales">
    <bpmn:startEvent id="start" name="Wanted {ESCAPED}">
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="item" label="Item {ESCAPED}" type="string">
            <camunda:validation><camunda:constraint name="required"/></camunda:validation>
          </camunda:formField>
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="pack"/>
    <bpmn:userTask id="pack" name="Pack {ESCAPED}" camunda:candidateGroups="sales"/>
    <bpmn:sequenceFlow id="f2" sourceRef="pack" targetRef="end"/>
    <bpmn:endEvent id="end"/>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="dia">
    <bpmndi:BPMNPlane id="plane" bpmnElement="order">
      <bpmndi:BPMNShape id="s_start" bpmnElement="start">
        <dc:Bounds x="100" y="100" width="36" height="36"/></bpmndi:BPMNShape>
      <bpmndi:BPMNShape id="s_pack" bpmnElement="pack">
        <dc:Bounds x="200" y="78" width="100" height="80"/></bpmndi:BPMNShape>
      <bpmndi:BPMNShape id="s_end" bpmnElement="end">
        <dc:Bounds x="370" y="100" width="36" height="36"/></bpmndi:BPMNShape>
      <bpmndi:BPMNEdge id="e1" bpmnElement="f1">
        <di:waypoint x="136" y="118"/><di:waypoint x="200" y="118"/></bpmndi:BPMNEdge>
      <bpmndi:BPMNEdge id="e2" bpmnElement="f2">
        <di:waypoint x="300" y="118"/><di:waypoint x="370" y="118"/></bpmndi:BPMNEdge>
    </bpmndi:BPMNPlane>
  </bpmndi:BPMNDiagram>
</bpmn:definitions>
"""


class Site:
    def __init__(self, url: str, tmp: Path) -> None:
        self.server = ApiServer(url, keys="ops:opsecret", log=tmp / "api.log").start()
        self.base = f"http://127.0.0.1:{self.server.port}"
        self.engine = Engine(url)
        self.http = httpx.Client(base_url=self.base + "/engine-rest", headers=OPS, timeout=60)
        for user in ("ann", "bob"):
            body = {
                "profile": {"id": user, "firstName": MARKUP},
                "credentials": {"password": PASSWORD},
            }
            assert self.http.post("/user/create", json=body).status_code == 204
        for group, user in (("sales", "ann"), ("finance", "bob")):
            assert self.http.post("/group/create", json={"id": group}).status_code == 204
            assert self.http.put(f"/group/{group}/members/{user}").status_code == 204
        files = [
            ("a", ("review.bpmn", MODEL.encode())),
            ("b", ("review.form", json.dumps(FORM).encode())),
            ("c", ("order.bpmn", ORDER.encode())),
        ]
        assert self.http.post("/deployment/create", files=files).status_code == 200
        start = {"variables": {"note": {"value": MARKUP}}}
        r = self.http.post("/process-definition/key/review/start", json=start)
        assert r.status_code == 200, r.text
        self.instance = r.json()["id"]
        (task,) = self.http.get("/task", params={"processInstanceId": self.instance}).json()
        self.task = task["id"]
        comment = {"message": f"<script>window.pwned=2</script>{MARKUP}"}
        assert self.http.post(f"/task/{self.task}/comment/create", json=comment).status_code == 200

    def close(self) -> None:
        self.http.close()
        self.engine.close()
        self.server.kill()


@pytest.fixture
def site(pg_database_url: str, tmp_path: Path) -> Iterator[Site]:
    s = Site(pg_database_url, tmp_path)
    yield s
    s.close()


def shot(page: Page, name: str, tmp: Path) -> None:
    page.screenshot(path=str(tmp / f"{name}.png"), full_page=True)
    if os.environ.get("BPM_SCREENSHOTS"):
        page.screenshot(path=str(ROOT / "docs" / "img" / f"{name}.png"), full_page=True)


def sign_in(page: Page, site: Site, user: str) -> list[str]:
    dialogs: list[str] = []

    def seen(dialog: Dialog) -> None:  # an alert() a script of the page would have run
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", seen)
    page.goto(site.base + "/tasklist")
    page.get_by_label("User").fill(user)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_have_text(user, timeout=30_000)
    return dialogs


def pwned(page: Page) -> Any:
    return page.evaluate("() => window.pwned")


def test_a_user_claims_and_completes_a_task_of_their_group(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    resp = httpx.get(site.base + "/tasklist")
    csp = resp.headers["content-security-policy"]
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )
    ann = browser.new_context(viewport={"width": 1000, "height": 800}).new_page()
    dialogs = sign_in(ann, site, "ann")
    ann.get_by_role("button", name="My groups' tasks").click()
    task_button = ann.locator("#tasks button.open")
    expect(task_button).to_have_text(f"Review {MARKUP}")  # shown as text, not markup
    task_button.click()
    expect(ann.locator("#task-name")).to_have_text(f"Review {MARKUP}")
    expect(ann.locator("#comments li")).to_have_text(
        "ops: <script>window.pwned=2</script>" + MARKUP
    )
    ann.locator("#claim").click()
    ann.get_by_role("button", name="My tasks").click()
    ann.locator("#tasks button.open").click()
    expect(ann.get_by_label("Reason", exact=False)).to_be_visible(timeout=30_000)
    shot(ann, "tasklist-form", tmp_path)
    # a required field left empty: form-js refuses it in the page, nothing is sent
    ann.locator("#complete").click()
    expect(ann.locator("#form-error")).to_have_text("Please correct the marked fields.")
    assert site.engine.user_tasks(site.instance)[0].state.value == "open"
    ann.get_by_label("Reason", exact=False).fill(f"fine {MARKUP}")
    ann.get_by_label("Amount").fill("42")
    ann.locator("#complete").click()
    expect(ann.locator("#done")).to_be_visible(timeout=30_000)
    shot(ann, "tasklist-done", tmp_path)
    variables = site.engine.get_instance(site.instance).variables
    assert variables["reason"] == f"fine {MARKUP}" and variables["amount"] == 42
    assert site.engine.get_instance(site.instance).state.value == "completed"
    assert pwned(ann) is None and dialogs == []


def test_another_user_cannot_see_or_claim_it_and_forged_writes_are_refused(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    bob = browser.new_context().new_page()
    dialogs = sign_in(bob, site, "bob")
    bob.get_by_role("button", name="My groups' tasks").click()
    expect(bob.locator("#tasks li.empty")).to_be_visible()
    shot(bob, "tasklist-empty", tmp_path)
    # bob's own session, his CSRF token: the task is not his to see, let alone claim
    status = bob.evaluate(
        """async (id) => {
            const me = await (await fetch('/tasklist/api/session')).json();
            const r = await fetch(`/engine-rest/task/${id}/claim`, {method: 'POST',
              headers: {'Content-Type': 'application/json', 'X-CSRF-Token': me.csrf},
              body: JSON.stringify({userId: 'bob'})});
            return r.status;
        }""",
        site.task,
    )
    assert status == 404
    ann = browser.new_context().new_page()
    sign_in(ann, site, "ann")
    # ann's session without its CSRF token (what a script of another page could send)
    forged = ann.evaluate(
        """async (id) => (await fetch(`/engine-rest/task/${id}/claim`, {method: 'POST',
            headers: {'Content-Type': 'application/json'},
            body: JSON.stringify({userId: 'ann'})})).status""",
        site.task,
    )
    assert forged == 403
    (task,) = site.engine.user_tasks(site.instance)
    assert task.assignee is None and task.state.value == "open"
    assert pwned(bob) is None and dialogs == []


def test_a_wrong_password_is_refused_and_sign_ins_are_slowed(site: Site, browser: Browser) -> None:
    page = browser.new_context().new_page()
    page.goto(site.base + "/tasklist")
    for _ in range(5):
        page.get_by_label("User").fill("ann")
        page.get_by_label("Password").fill("wrong password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#sign-in-error")).to_have_text("Wrong user or password")
        page.locator("#sign-in-error").evaluate("e => e.textContent = ''")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#sign-in-error")).to_contain_text("too many failed sign-ins")


def test_filters_a_start_form_and_where_the_task_stands(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    ann = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    dialogs = sign_in(ann, site, "ann")
    # start a process from its start form: a required field left empty is refused in the page
    ann.get_by_role("button", name="Start a process").click()
    ann.locator("#startable button").filter(has_text="Order").click()
    expect(ann.locator("#start-name")).to_have_text(f"Order {MARKUP}")
    expect(ann.get_by_label("Item", exact=False)).to_be_visible(timeout=30_000)
    ann.locator("#start-submit").click()
    expect(ann.locator("#form-error")).to_have_text("Please correct the marked fields.")
    assert site.engine.instances(definition_key="order") == []
    shot(ann, "tasklist-start", tmp_path)
    ann.get_by_label("Item", exact=False).fill(f"boots {MARKUP}")
    ann.locator("#start-submit").click()
    expect(ann.locator("#started")).to_contain_text(f"Started Order {MARKUP}")
    (order,) = site.engine.instances(definition_key="order")
    assert order.variables["item"] == f"boots {MARKUP}"
    # the new task, its diagram with the task marked
    ann.get_by_role("button", name="My groups' tasks").click()
    ann.locator("#tasks button.open").filter(has_text="Pack").click()
    expect(ann.locator("#diagram")).to_have_attribute("data-loaded", "true", timeout=30_000)
    expect(ann.locator("#diagram")).to_have_attribute("data-current", "pack")
    expect(ann.locator('#diagram [data-element-id="pack"].tl-current')).to_have_count(1)
    shot(ann, "tasklist-diagram", tmp_path)
    ann.set_viewport_size({"width": 390, "height": 844})  # a phone: one column
    shot(ann, "tasklist-phone", tmp_path)
    ann.set_viewport_size({"width": 1100, "height": 900})
    # save the view (My groups' tasks, names containing "Pack") as a filter
    ann.get_by_label("Name contains").fill("Pack")
    expect(ann.locator("#tasks button.open")).to_have_count(1)
    ann.get_by_label("Save this view as").fill(f"Packing {MARKUP}")
    ann.get_by_role("button", name="Save filter").click()
    saved = ann.locator("#filters button")
    expect(saved).to_have_text(f"Packing {MARKUP}")
    expect(saved).to_have_attribute("aria-pressed", "true")
    expect(ann.locator("#tasks button.open")).to_have_text(f"Pack {MARKUP}")
    shot(ann, "tasklist-filter", tmp_path)
    ann.get_by_role("button", name="My tasks").click()
    expect(ann.locator("#tasks li.empty")).to_be_visible()
    saved.click()
    expect(ann.locator("#tasks button.open")).to_have_count(1)
    filters = site.http.get("/filter").json()
    assert [(f["name"], f["owner"]) for f in filters] == [(f"Packing {MARKUP}", "ann")]
    assert filters[0]["query"]["candidateUserExpression"] == "${currentUser()}"
    fid = filters[0]["id"]
    # bob: no filter of ann's, no process to start, and the server refuses both
    bob = browser.new_context().new_page()
    bob_dialogs = sign_in(bob, site, "bob")
    expect(bob.locator("#filters button")).to_have_count(0)
    bob.get_by_role("button", name="Start a process").click()
    expect(bob.locator("#task .empty")).to_have_text("There is no process you may start.")
    order_id = site.http.get("/process-definition/key/order").json()["id"]
    answers = bob.evaluate(
        """async ([fid, did]) => {
            const me = await (await fetch('/tasklist/api/session')).json();
            const h = {'Content-Type': 'application/json', 'X-CSRF-Token': me.csrf};
            const one = await fetch(`/engine-rest/filter/${fid}`);
            const run = await fetch(`/engine-rest/filter/${fid}/list`);
            const del = await fetch(`/engine-rest/filter/${fid}`, {method: 'DELETE', headers: h});
            const body = JSON.stringify({variables: {item: {value: 'x'}}});
            const start = await fetch(`/engine-rest/process-definition/${did}/submit-form`,
              {method: 'POST', headers: h, body});
            return [one.status, run.status, del.status, start.status];
        }""",
        [fid, order_id],
    )
    assert answers == [404, 404, 404, 403]
    assert len(site.http.get("/filter").json()) == 1
    assert len(site.engine.instances(definition_key="order")) == 1
    # ann deletes her filter
    saved.click()
    ann.get_by_role("button", name="Delete this filter").click()
    expect(ann.locator("#filters button")).to_have_count(0)
    assert site.http.get("/filter").json() == []
    assert pwned(ann) is None and pwned(bob) is None and dialogs == [] and bob_dialogs == []
