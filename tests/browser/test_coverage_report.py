"""The BPMN coverage report (bpm.testing) in a real browser, opened from disk offline."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Request

from bpm.builder import Process
from bpm.testing import BpmTest, Coverage
from bpm.testing.report import write_html

ROOT = Path(__file__).resolve().parents[2]


def test_the_report_draws_taken_and_missed_elements_offline(
    browser: Browser, tmp_path: Path
) -> None:
    import examples.order_handlers  # noqa: F401  (registers the handlers)

    coverage = Coverage()
    kit = BpmTest.create()
    try:
        kit.deploy(ROOT / "examples" / "order.bpmn")  # drawn from its own diagram
        kit.deploy(  # a builder model: drawn from a generated layout
            Process("choice", name="Choice")
            .start("start")
            .exclusive("which")
            .task("left")
            .task("right")
            .end("end")
            .sequence("start", "which")
            .flow("which", "left", condition="go_left", id="to_left")
            .flow("which", "right", id="to_right", default=True)
            .sequence("left", "end")
            .sequence("right", "end")
        )
        kit.start("order", {"amount": 250})
        kit.start("choice", {"go_left": True})
        coverage.record(kit.engine, "test")
    finally:
        kit.close()
    index = write_html(coverage, tmp_path / "report")

    page = browser.new_page(viewport={"width": 1200, "height": 1100})
    outside: list[str] = []

    def refuse(request: Request) -> None:
        if not request.url.startswith("file://"):
            outside.append(request.url)

    page.on("request", refuse)
    page.goto(index.as_uri())
    page.wait_for_selector("body[data-loaded='true']", timeout=20_000)

    def marker(diagram: int, element: str) -> str:
        css = f"#diagram-{diagram} [data-element-id='{element}']"
        return page.locator(css).first.get_attribute("class") or ""

    # choice sorts first (0), order second (1)
    assert "bpm-covered" in marker(0, "left") and "bpm-covered" in marker(0, "to_left")
    assert "bpm-missed" in marker(0, "right") and "bpm-missed" in marker(0, "to_right")
    assert "bpm-covered" in marker(1, "reserve") and "bpm-covered" in marker(1, "big")
    assert "bpm-missed" in marker(1, "small")
    assert page.locator("tr[data-process='order'] .percent").inner_text() == "95%"
    # the builder's unnamed tasks are labelled with their ids; named ones are not
    labels = page.locator("#diagram-0 .bpm-id").all_inner_texts()
    assert {"left", "right"} <= set(labels) and "Validate order" not in labels
    assert sorted(page.locator("#diagram-1 .bpm-id").all_inner_texts()) == ["fork", "join"]
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    page.close()
    assert outside == []
