"""The pytest plugin of bpm.testing, run on test files of its own (pytester, in process)."""

from __future__ import annotations

import json
import re

import pytest

from bpm.builder import Process
from bpm.testing import BpmTest
from bpm.testing.coverage import Coverage
from bpm.testing.plugin import _XdistCoverage

pytest_plugins = ["pytester"]

TESTS = """
from bpm.builder import Process
from bpm.testing import assert_that


def model():
    return (
        Process("choice")
        .start("start")
        .exclusive("which")
        .service_task("left", handler="t.left")
        .service_task("right", handler="t.right")
        .end("end")
        .sequence("start", "which")
        .flow("which", "left", condition="go_left", id="to_left")
        .flow("which", "right", id="to_right", default=True)
        .flow("left", "end", id="left_end")
        .flow("right", "end", id="right_end")
    )


def test_left(bpm):
    bpm.deploy(model())
    bpm.mock("t.left", returns={"went": "left"})
    inst = bpm.start("choice", {"go_left": True})
    assert_that(inst).is_completed().has_passed("left").has_variables(went="left")
"""

RIGHT = """

def test_right(bpm):
    bpm.deploy(model())
    bpm.mock("t.right")
    assert_that(bpm.start("choice", {"go_left": False})).is_completed().has_passed("right")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # The other plugins of this environment are left out: each inner session would set
    # them up again (schemathesis and hypothesis take most of an inner run's time).
    quiet = ("no:cacheprovider", "no:schemathesis", "no:hypothesispytest", "no:anyio")
    plugins = [arg for name in quiet for arg in ("-p", name)]
    return pytester.runpytest_inprocess("-p", "bpm.testing.plugin", *plugins, *args)


def test_the_summary_counts_what_the_session_took(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_choice=TESTS)
    result = run(pytester)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "BPMN coverage" in out
    # 4 of 5 elements (right not taken), 3 of 5 flows (to_right, right_end not taken)
    assert re.search(r"choice\s+4/5\s+3/5\s+70%", out), out
    assert "choice not taken: right, to_right, right_end" in out


def test_coverage_adds_up_across_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_choice=TESTS + RIGHT)
    result = run(pytester)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert re.search(r"choice\s+5/5\s+5/5\s+100%", out), out
    assert "not taken" not in out


def test_no_summary_when_no_test_used_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "BPMN coverage" not in result.stdout.str()


def test_no_summary_when_asked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_choice=TESTS)
    result = run(pytester, "--bpm-no-coverage")
    result.assert_outcomes(passed=1)
    assert "BPMN coverage" not in result.stdout.str()


def test_a_failing_assertion_shows_the_trail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_choice=TESTS.replace('is_completed().has_passed("left")', 'has_passed("right")')
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "expected the instance to have passed right" in out
    assert "instance_completed" in out or "active -> completed" in out


def test_the_html_report_holds_diagrams_and_the_viewer(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_choice=TESTS)
    result = run(pytester, "--bpm-coverage-html", "cov")
    result.assert_outcomes(passed=1)
    index = pytester.path / "cov" / "index.html"
    assert f"BPMN coverage report: {index}" in result.stdout.str()
    page = index.read_text()
    viewer = pytester.path / "cov" / "bpmn-js" / "bpmn-navigated-viewer.production.min.js"
    assert viewer.stat().st_size > 100_000
    assert (
        pytester.path / "cov" / "bpmn-js" / "assets" / "bpmn-font" / "font" / "bpmn.woff2"
    ).is_file()
    assert "http://" not in page.replace("http://www.omg.org", "").replace("http://www.w3.org", "")
    data = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    assert data[0]["label"] == "choice"
    assert data[0]["covered_flows"] == ["Flow_start_which", "left_end", "to_left"]
    assert "bpmndi:BPMNShape" in data[0]["diagram"] or "BPMNShape" in data[0]["diagram"]


def test_the_ini_option_names_the_report_directory(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nbpm_coverage_html = reports/bpmn\n")
    pytester.makepyfile(test_choice=TESTS)
    run(pytester).assert_outcomes(passed=1)
    assert (pytester.path / "reports" / "bpmn" / "index.html").is_file()


def test_xdist_workers_hand_their_coverage_to_the_controller(pytester: pytest.Pytester) -> None:
    from bpm.testing.plugin import COVERAGE

    worker_cov = Coverage()
    config = pytester.parseconfig("-p", "bpm.testing.plugin")
    config.stash[COVERAGE] = worker_cov
    hooks = _XdistCoverage(config)

    kit = BpmTest.create()
    try:
        kit.deploy(Process("p").start("s").end("e").sequence("s", "e"))
        kit.start("p")
        worker_cov.record(kit.engine, "t::a")
    finally:
        kit.close()
    config.workeroutput = {}  # type: ignore[attr-defined]
    hooks.pytest_sessionfinish(session=None)  # type: ignore[arg-type]
    sent = json.loads(json.dumps(config.workeroutput))  # type: ignore[attr-defined]

    controller = pytester.parseconfig("-p", "bpm.testing.plugin")
    controller.stash[COVERAGE] = Coverage()
    node = type("Node", (), {"workeroutput": sent})()
    _XdistCoverage(controller).pytest_testnodedown(node, None)
    ((label, entry),) = controller.stash[COVERAGE].entries()
    assert (label, entry.covered_nodes, entry.covered_flows, entry.tests) == (
        "p",
        {"s", "e"},
        {"Flow_s_e"},
        {"t::a"},
    )
