"""Stored script, and the API docs pages, in real Chromium (issue 18 items 2 and 10).

* A BPMN file with a ``<script>`` in the XHTML namespace, deployed like any model: when an
  operator logged into the cockpit opened its definition-XML URL, the script ran in the
  API's origin, read the session's CSRF token and terminated every active instance. Now
  the XML is a download, and inert if a browser renders it anyway (CSP ``default-src
  'none'; sandbox``).
* Every answer carries a CSP; the cockpit still works under its own.
* ``/docs`` and ``/redoc`` need a key and load nothing from another site.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Error, Page, expect

from bpm import Engine
from tests.api.conftest import ApiServer, one_task
from tests.support import eventually

ROOT = Path(__file__).resolve().parents[2]
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
KEYS = "ops:opsecret,worker:wsecret:jobs"

# Runs when a browser renders the file as XML: marks the document at once (so a test can
# tell it ran), then does what an attacker would: read the CSRF token, terminate all.
ATTACK = """<html:script xmlns:html="http://www.w3.org/1999/xhtml"><![CDATA[
document.documentElement.setAttribute("data-pwned", "1");
fetch("/api/session").then(r => r.json()).then(s =>
  fetch("/api/instances?limit=200").then(r => r.json()).then(p =>
    Promise.all(p.items.map(i => fetch("/api/instances/" + i.id + "/terminate", {
      method: "POST",
      headers: {"X-CSRF-Token": s.csrf, "Content-Type": "application/json"},
      body: JSON.stringify({reason: "pwned"})})))));
]]></html:script>"""


class Served:
    def __init__(self, url: str, tmp: Path) -> None:
        self.server = ApiServer(url, keys=KEYS, log=tmp / "api.log").start()
        self.base = f"http://127.0.0.1:{self.server.port}"
        self.engine = Engine(url)

    def close(self) -> None:
        self.engine.close()
        self.server.kill()


@pytest.fixture
def served(pg_database_url: str, tmp_path: Path) -> Iterator[Served]:
    s = Served(pg_database_url, tmp_path)
    yield s
    s.close()


def _login(page: Page, served: Served) -> None:
    page.goto(f"{served.base}/cockpit")
    page.get_by_test_id("secret").fill("opsecret")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("definitions")).to_be_visible()


def test_a_script_inside_a_deployed_bpmn_does_not_run_in_the_apis_origin(
    browser: Browser, served: Served
) -> None:
    source = (ROOT / "examples" / "order.bpmn").read_text()
    head_end = source.index(">", source.index("<bpmn:definitions")) + 1
    evil = source[:head_end] + ATTACK + source[head_end:]
    definition = served.engine.deploy(evil, resource="order.bpmn")
    served.engine.deploy(one_task("victim", "jobs"))
    victim = served.engine.start("victim").id
    url = f"{served.base}/api/definitions/{definition.id}/xml"

    context = browser.new_context()
    page = context.new_page()
    try:
        _login(page, served)
        try:
            page.goto(url)
            rendered = True
        except Error as exc:  # a download: no document was made of it
            assert "Download is starting" in str(exc) or "ERR_ABORTED" in str(exc), exc
            rendered = False
        ran = rendered and page.evaluate(
            "document.documentElement.getAttribute('data-pwned') === '1'"
        )
        if ran:  # let the attack finish, to show what it did
            eventually(
                lambda: served.engine.get_instance(victim).state.value != "active",
                timeout=10,
                what="the script's terminate",
            )
        state = served.engine.get_instance(victim).state.value
        assert not ran, f"the script in the deployed file ran; the victim instance is {state}"
        # the cockpit itself still draws that diagram (it fetches the XML)
        page.goto(f"{served.base}/cockpit#/definitions/{definition.id}")
        expect(page.get_by_test_id("diagram")).to_have_attribute("data-loaded", "true")
        assert served.engine.get_instance(victim).state.value == "active"
    finally:
        context.close()
    r = httpx.get(url, headers={"Authorization": "Bearer opsecret"})
    assert r.status_code == 200 and "data-pwned" in r.text  # the file is served as stored
    assert r.headers["content-security-policy"] == "default-src 'none'; sandbox"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-disposition"].startswith("attachment;")


def test_every_answer_carries_a_csp_and_nosniff(served: Served) -> None:
    answers = [
        httpx.get(f"{served.base}/health/live"),
        httpx.get(f"{served.base}/openapi.json"),
        httpx.get(f"{served.base}/engine-rest/engine"),  # 401
        httpx.get(f"{served.base}/no/such/page"),
        httpx.get(f"{served.base}/cockpit/static/css/cockpit.css"),
        httpx.get(f"{served.base}/engine-rest/engine", auth=("ops", "opsecret")),
    ]
    for r in answers:
        assert r.headers["x-content-type-options"] == "nosniff", r.url
        assert "default-src 'none'" in r.headers["content-security-policy"], r.url
    page = httpx.get(f"{served.base}/cockpit")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "script-src" not in page.headers["content-security-policy"]  # no inline script


def test_the_api_docs_need_a_key_and_load_nothing_from_another_site(
    browser: Browser, served: Served
) -> None:
    for path in ("/docs", "/redoc", "/docs/static/docs.js"):
        r = httpx.get(f"{served.base}{path}")
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"].startswith("Basic")
    for key, secret in (("ops", "opsecret"), ("worker", "wsecret")):
        r = httpx.get(f"{served.base}/docs", auth=(key, secret))
        assert r.status_code == 200
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert "'unsafe-inline'" not in r.headers["content-security-policy"].split("style-src")[0]
    assert (
        httpx.get(f"{served.base}/docs/static/../VERSION.md", auth=("ops", "opsecret")).status_code
        == 404
    )

    context = browser.new_context(http_credentials={"username": "ops", "password": "opsecret"})
    page = context.new_page()
    hosts: set[str] = set()
    problems: list[str] = []
    page.on("response", lambda resp: hosts.add(urlsplit(resp.url).netloc))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on(
        "console",
        # the one URL of another site in Redoc's bundle, its logo (the menu drops it when
        # it does not load): the CSP stops it
        lambda m: (
            problems.append(m.text)
            if "Content Security Policy" in m.text and REDOC_LOGO not in m.text
            else None
        ),
    )
    try:
        page.goto(f"{served.base}/docs")
        title = page.locator(".swagger-ui .info .title")
        expect(title).to_contain_text("bpm engine REST API", timeout=60_000)
        expect(page.locator(".opblock-tag").first).to_be_visible()
        page.goto(f"{served.base}/redoc")
        # Redoc draws its menu first, then the page: wait for either as long as a busy
        # machine needs
        menu = page.get_by_role("menuitem", name="Fetch And Lock")
        expect(menu.first).to_be_visible(timeout=60_000)
        expect(page.locator("h1").first).to_contain_text("bpm engine REST API", timeout=60_000)
        expect(page.get_by_text("fetchAndLock").first).to_be_attached()
    finally:
        context.close()
    assert hosts <= {f"127.0.0.1:{served.server.port}"}, hosts
    assert problems == [], problems
