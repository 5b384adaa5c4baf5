"""What a new user sees first in the cockpit, in real Chromium against a real ``bpm api``:
a builder model's flow names and conditions drawn on its diagram."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from bpm import Engine
from tests.api.conftest import ApiServer
from tests.test_cockpit_flow_labels import loan


@pytest.fixture
def open_server(pg_database_url: str, tmp_path: Path) -> Iterator[ApiServer]:
    server = ApiServer(pg_database_url, log=tmp_path / "api.log").start()  # no keys
    yield server
    server.kill()


def test_a_builder_models_flow_labels_are_drawn(
    browser: Browser, open_server: ApiServer, pg_database_url: str
) -> None:
    engine = Engine(pg_database_url)
    try:
        definition = engine.deploy(loan())
    finally:
        engine.close()
    root = open_server.base.removesuffix("/engine-rest")
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{root}/cockpit#/definitions/{definition.id}")
        diagram = page.get_by_test_id("diagram")
        expect(diagram).to_have_attribute("data-loaded", "true")
        for flow_id, text in (
            ("good", "score >= 700"),
            ("Flow_decide_review", "borderline"),
            ("turned_down", "turned down"),
        ):
            label = diagram.locator(f'[data-element-id="{flow_id}_label"]')
            expect(label).to_have_count(1)
            expect(label).to_contain_text(text)
            expect(label).to_be_visible()
        # the default flow carries bpmn-js's slash marker, no text
        expect(diagram.locator('[data-element-id="bad_label"]')).to_have_count(0)
        assert errors == []
    finally:
        page.close()


def test_a_deep_link_by_path_opens_the_instance_page(
    browser: Browser, open_server: ApiServer, pg_database_url: str
) -> None:
    engine = Engine(pg_database_url)
    try:
        engine.deploy(loan())
        instance = engine.start("loan", {"score": 650})
    finally:
        engine.close()
    root = open_server.base.removesuffix("/engine-rest")
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{root}/cockpit/instances/{instance.id}")  # as bpm start / bpm show print it
        expect(page.get_by_test_id("instance-id")).to_have_text(instance.id)
        assert page.url == f"{root}/cockpit#/instances/{instance.id}"
        assert errors == []
    finally:
        page.close()
