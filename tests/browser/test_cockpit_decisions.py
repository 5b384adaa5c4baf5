"""The cockpit's decisions in real Chromium against a real ``bpm api`` process: the list of
evaluations, and one evaluation drawn by dmn-js with the matched rule highlighted.

``BPM_SCREENSHOTS=1`` also saves the page to ``docs/img/cockpit-decision.png``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from bpm import Engine
from tests.api.conftest import ApiServer

ROOT = Path(__file__).resolve().parents[2]
PRICING = (ROOT / "tests" / "data" / "dmn" / "pricing.dmn").read_bytes()
KEYS = "ops:opsecret"


@pytest.fixture
def site(pg_database_url: str, tmp_path: Path) -> Iterator[tuple[str, Engine]]:
    server = ApiServer(pg_database_url, keys=KEYS, log=tmp_path / "api.log").start()
    engine = Engine(pg_database_url)
    yield f"http://127.0.0.1:{server.port}", engine
    engine.close()
    server.kill()


def test_an_evaluation_is_drawn_with_its_matched_rule(
    browser: Browser, site: tuple[str, Engine], tmp_path: Path
) -> None:
    base, engine = site
    engine.create_deployment(("pricing.dmn", PRICING))
    result = engine.decisions.evaluate(
        key="d_Discount", variables={"Amount": 250, "Customer": "gold"}
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{base}/cockpit")
        page.get_by_test_id("secret").fill("opsecret")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_test_id("definitions")).to_be_visible()
        page.get_by_role("link", name="Decisions").click()
        row = page.get_by_test_id(f"decision-{result.instance_id}")
        expect(row).to_contain_text("d_Discount")
        row.get_by_role("link", name="Discount").click()
        view = page.get_by_test_id("dmn")
        expect(view).to_have_attribute("data-loaded", "true")
        expect(view).to_have_attribute("data-highlighted", "1")
        matched = page.locator('[data-row-id="r2"].ck-matched')
        assert matched.count() > 0
        assert page.locator('[data-row-id="r1"].ck-matched').count() == 0
        expect(view).to_contain_text('"gold"')
        expect(page.get_by_test_id("decision-inputs")).to_contain_text("250")
        expect(page.get_by_test_id("decision-outputs")).to_contain_text("0.2")
        page.screenshot(path=str(tmp_path / "decision.png"))
        if os.environ.get("BPM_SCREENSHOTS", "") == "1":
            page.screenshot(path=str(ROOT / "docs" / "img" / "cockpit-decision.png"))
        assert errors == []
    finally:
        context.close()
