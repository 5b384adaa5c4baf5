"""The cockpit in real Chromium against a real ``bpm api`` process and a worker loop.

* the diagram renders with the token overlay on the waiting node;
* clicking Retry on an incident makes the instance complete, and the page shows it
  without a reload;
* a read-only key sees no action buttons, and forged action requests (a form on another
  site, a script without the session's token) are refused with nothing changed.

``BPM_SCREENSHOTS=1 pytest tests/browser`` also saves a screenshot of every page to
``docs/img/`` (the ones the docs show); without it nothing in the work tree changes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from bpm import Engine, EngineConfig, RetryPolicy
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.local import LocalLoop
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.api.conftest import ApiServer, free_port, one_task
from tests.engine_helpers import table_dump
from tests.support import eventually

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "img"
KEYS = "ops:opsecret,view:viewsecret:role=viewer"


class Site:
    """A server with an operator and a viewer key, and a worker loop in this process."""

    def __init__(self, url: str, tmp: Path) -> None:
        self.server = ApiServer(url, keys=KEYS, log=tmp / "api.log").start()
        self.base = f"http://127.0.0.1:{self.server.port}"
        self.broken = {"charge": True}
        reg = HandlerRegistry()
        reg.register("charge", self._charge, retry=RetryPolicy.none())
        reg.register("noop", lambda ctx: {"checked": True})
        # The loop sweeps Ready steps up at once: the API process publishes to no broker.
        self.engine = Engine(url, registry=reg, config=EngineConfig(redispatch_after=timedelta(0)))
        self.loop = LocalLoop(self.engine, idle_poll=timedelta(seconds=0.2))
        self.engine.deploy(
            Process("payment", name="Payment")
            .start("received", name="Order received")
            .service_task("check", handler="noop", name="Check order")
            .service_task("charge", handler="charge", name="Charge card")
            .end("paid", name="Paid")
            .sequence("received", "check", "charge", "paid")
            .build()
        )
        self.engine.deploy((ROOT / "examples" / "order.bpmn").read_text(), resource="order.bpmn")
        self.engine.deploy(
            Process("shipping", name="Shipping")
            .start("start")
            .service_task("pack", handler="noop", name="Pack")
            .parallel("fork")
            .user_task("label", name="Print label")
            .timer("wait_pickup", duration="PT2H", name="Wait for pickup")
            .parallel("join")
            .end("shipped")
            .sequence("start", "pack", "fork")
            .flow("fork", "label")
            .flow("fork", "wait_pickup")
            .flow("label", "join")
            .flow("wait_pickup", "join")
            .sequence("join", "shipped")
            .build()
        )
        self.thread = threading.Thread(target=self.loop.serve, daemon=True)
        self.thread.start()

    def _charge(self, ctx: TaskContext) -> dict[str, Any]:
        if self.broken["charge"]:
            raise RuntimeError("card declined by the bank")
        return {"charged": True}

    def state(self, instance_id: str) -> str:
        return self.engine.get_instance(instance_id).state.value

    def close(self) -> None:
        self.loop.stop()
        self.thread.join(timeout=10)
        self.engine.close()
        self.server.kill()


@pytest.fixture
def site(pg_database_url: str, tmp_path: Path) -> Iterator[Site]:
    s = Site(pg_database_url, tmp_path)
    yield s
    s.close()


def login(browser: Browser, site: Site, secret: str) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{site.base}/cockpit")
    page.get_by_test_id("secret").fill(secret)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("definitions")).to_be_visible()
    page.errors = errors  # type: ignore[attr-defined]
    return context, page


def shot(page: Page, name: str) -> None:
    if os.environ.get("BPM_SCREENSHOTS", "") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"cockpit-{name}.png"), full_page=False)


def wait_settled(site: Site, instance_id: str, state: str | None = None) -> None:
    def settled() -> bool:
        inst = site.engine.get_instance(instance_id)
        busy = [t for t in inst.tokens if t.state.value in ("ready", "executing")]
        return not busy and (state is None or inst.state.value == state)

    eventually(settled, timeout=30, what=f"instance {instance_id} to settle")


def test_diagram_overlay_and_retry_without_reload(browser: Browser, site: Site) -> None:
    waiting = site.engine.start("shipping", business_key="ship-1").id
    failing = site.engine.start("payment", {"amount": 42}, business_key="pay-1").id
    wait_settled(site, waiting)
    wait_settled(site, failing)
    assert site.engine.incidents(failing)
    context, page = login(browser, site, "opsecret")
    try:
        shot(page, "definitions")

        # the waiting instance: overlay on both waiting nodes, with the reason
        page.goto(f"{site.base}/cockpit#/instances/{waiting}")
        diagram = page.get_by_test_id("diagram")
        expect(diagram).to_have_attribute("data-loaded", "true")
        timer = page.get_by_test_id("overlay-wait_pickup")
        expect(timer).to_have_attribute("data-state", "waiting")
        expect(timer).to_contain_text("1 waiting · timer")
        expect(page.get_by_test_id("overlay-label")).to_contain_text("user task")
        assert page.locator("[data-testid^=overlay-]").count() == 2
        page.locator('[data-element-id="wait_pickup"]').first.click()
        expect(page.get_by_test_id("detail")).to_contain_text("Fire now")
        # the trail says when the timer is due (its timer_scheduled event)
        scheduled = page.get_by_test_id("trail-row").filter(has_text="timer_scheduled")
        expect(scheduled).to_contain_text("delay timer; due ")
        shot(page, "instance-waiting")

        # the failed instance: retry, and watch it complete without a reload
        page.goto(f"{site.base}/cockpit#/instances/{failing}")
        expect(page.get_by_test_id("overlay-charge")).to_have_attribute("data-state", "failed")
        expect(page.get_by_test_id("instance-state")).to_have_text("active")
        shot(page, "instance-incident")
        page.evaluate("window.__sameDocument = true")
        site.broken["charge"] = False
        (incident,) = site.engine.incidents(failing)
        page.get_by_test_id(f"retry-{incident.id}").first.click()
        expect(page.get_by_test_id("instance-state")).to_have_text("completed", timeout=20_000)
        assert page.evaluate("window.__sameDocument") is True  # no reload happened
        expect(page.locator("[data-testid^=overlay-]")).to_have_count(0)
        expect(page.get_by_test_id("trail")).to_contain_text("incident_retried")
        assert site.state(failing) == "completed"

        page.goto(f"{site.base}/cockpit#/instances")
        expect(page.get_by_test_id("instances")).to_contain_text("ship-1")
        shot(page, "instances")
        definition = site.engine.definition("shipping").id
        page.goto(f"{site.base}/cockpit#/definitions/{definition}")
        expect(page.get_by_test_id("diagram")).to_have_attribute("data-loaded", "true")
        shot(page, "definition")
        site.broken["charge"] = True
        again = site.engine.start("payment", business_key="pay-2").id
        wait_settled(site, again)
        page.goto(f"{site.base}/cockpit#/incidents")
        expect(page.get_by_test_id("group-payment-charge")).to_be_visible()
        shot(page, "incidents")
        site.engine.deploy(one_task("invoice", "billing"))
        for _ in range(3):
            site.engine.start("invoice")
        site.engine.fetch_and_lock(
            FetchRequest("billing-worker-1", 1, (TopicRequest("billing", 60_000),))
        )
        site.engine.deploy(
            Process("reminder").start("s").timer("soon", duration="PT30S").end("e")
            .sequence("s", "soon", "e").build()
        )  # fmt: skip
        site.engine.start("reminder")
        page.goto(f"{site.base}/cockpit#/work")
        expect(page.get_by_test_id("topic-billing")).to_contain_text("2")
        expect(page.get_by_test_id("ready-total")).to_be_visible()
        shot(page, "work")
        assert page.errors == []  # type: ignore[attr-defined]
    finally:
        context.close()


class EvilSite:
    """A page on another origin that posts to the cockpit's API when it opens."""

    def __init__(self, target: str) -> None:
        html = f"""<!doctype html><html><body>
<form id="f" method="POST" action="{target}"><input name="reason" value="pwned"></form>
<script>
fetch("{target}", {{method: "POST", credentials: "include", mode: "no-cors",
                    headers: {{"Content-Type": "text/plain"}}, body: "{{}}"}})
  .finally(() => document.getElementById("f").submit());
</script></body></html>""".encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(html)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_viewer_sees_no_actions_and_forged_requests_change_nothing(
    browser: Browser, site: Site
) -> None:
    failing = site.engine.start("payment", business_key="pay-9").id
    wait_settled(site, failing)
    assert site.engine.incidents(failing)

    viewer, page = login(browser, site, "viewsecret")
    try:
        page.goto(f"{site.base}/cockpit#/instances/{failing}")
        expect(page.get_by_test_id("overlay-charge")).to_have_attribute("data-state", "failed")
        expect(page.get_by_test_id("read-only")).to_be_visible()
        expect(page.get_by_test_id("actions").locator("button")).to_have_count(0)
        expect(page.locator("main button")).to_have_count(0)
        expect(page.get_by_test_id("var-save")).to_have_count(0)
        page.goto(f"{site.base}/cockpit#/incidents")
        expect(page.get_by_test_id("group-payment-charge")).to_be_visible()
        expect(page.locator("main button")).to_have_count(0)
        expect(page.get_by_test_id("who")).to_have_text("view · viewer")

        # the viewer forges the request itself, with its own session's token
        before = table_dump(site.engine)
        status = page.evaluate(
            """async (id) => {
                const s = await (await fetch('/api/session')).json();
                const r = await fetch(`/api/instances/${id}/terminate`, {method: 'POST',
                    headers: {'X-CSRF-Token': s.csrf, 'Content-Type': 'application/json'},
                    body: '{}'});
                return r.status;
            }""",
            failing,
        )
        assert status == 403
        assert table_dump(site.engine) == before
    finally:
        viewer.close()

    operator, page = login(browser, site, "opsecret")
    evil = EvilSite(f"{site.base}/api/instances/{failing}/terminate")
    try:
        before = table_dump(site.engine)
        # the operator is logged in (the cookie is set) and visits another site
        with page.expect_response(lambda r: "/terminate" in r.url and r.request.method == "POST"):
            page.goto(evil.url)
        page.wait_for_load_state("load")
        expect(page.locator("body")).to_contain_text("refused")
        # a script on a cockpit page without the session's token is refused too
        page.goto(f"{site.base}/cockpit#/instances/{failing}")
        expect(page.get_by_test_id("instance-state")).to_have_text("active")
        status = page.evaluate(
            "async (id) => (await fetch(`/api/instances/${id}/terminate`, "
            "{method: 'POST', body: '{}'})).status",
            failing,
        )
        assert status == 403
        assert table_dump(site.engine) == before
        assert site.state(failing) == "active"
        # the real button still works: the operator's session is fine
        expect(page.get_by_test_id("terminate")).to_be_visible()
    finally:
        evil.close()
        operator.close()


def test_login_page(browser: Browser, site: Site) -> None:
    context = browser.new_context(viewport={"width": 1000, "height": 600})
    page = context.new_page()
    try:
        page.goto(f"{site.base}/cockpit")
        expect(page.get_by_test_id("login")).to_be_visible()
        page.get_by_test_id("secret").fill("wrong")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_test_id("login")).to_contain_text("wrong API key secret")
        shot(page, "login")
    finally:
        context.close()
