"""The pytest plugin of :mod:`bpm.testing` (entry point ``pytest11``): the ``bpm``
fixture and the BPMN coverage summary and report.

Options:

``--bpm-database URL`` (or ``BPM_TEST_DATABASE_URL``)
    run the tests on this PostgreSQL database instead of in-memory SQLite; **every table
    is emptied before each test**, so give it a database of its own.
``--bpm-coverage-html DIR`` (or the ini option ``bpm_coverage_html``)
    write the HTML coverage report (diagrams) into DIR.
``--bpm-no-coverage``
    no coverage summary.

Under pytest-xdist each worker sends what it covered to the controller, which reports.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bpm.testing.coverage import Coverage
from bpm.testing.kit import BpmTest
from bpm.testing.report import write_html

__all__ = ["bpm"]

COVERAGE = pytest.StashKey[Coverage]()
DATABASE_ENV = "BPM_TEST_DATABASE_URL"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bpm", "BPMN process tests (bpm.testing)")
    group.addoption(
        "--bpm-database",
        default=None,
        metavar="URL",
        help=f"a PostgreSQL database for the bpm fixture, emptied before each test "
        f"(default: ${DATABASE_ENV}, else in-memory SQLite)",
    )
    group.addoption(
        "--bpm-coverage-html",
        default=None,
        metavar="DIR",
        help="write the BPMN coverage report (diagrams, HTML) into DIR",
    )
    group.addoption(
        "--bpm-no-coverage",
        action="store_true",
        default=False,
        help="do not print the BPMN coverage summary",
    )
    parser.addini("bpm_coverage_html", "directory of the BPMN coverage report", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[COVERAGE] = Coverage()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistCoverage(config), "bpm-testing-xdist")


@pytest.fixture
def bpm(request: pytest.FixtureRequest) -> Iterator[BpmTest]:
    """An engine on its own database with a standing clock: deploy, start, run, advance
    time, mock handlers, complete tasks, correlate messages (see ``docs/testing.md``)."""
    url = request.config.getoption("--bpm-database") or os.environ.get(DATABASE_ENV) or None
    kit = BpmTest.create(url)
    undo = kit.activate()
    try:
        yield kit
    finally:
        undo()
        try:
            request.config.stash[COVERAGE].record(kit.engine, request.node.nodeid)
        finally:
            kit.close()


def _html_dir(config: pytest.Config) -> Path | None:
    given = config.getoption("--bpm-coverage-html")
    base = Path(config.invocation_params.dir)  # as --junitxml: from where pytest ran
    if not given:
        given = config.getini("bpm_coverage_html")
        base = Path(config.rootpath)  # an ini setting: from the ini file's directory
    if not given:
        return None
    path = Path(str(given))
    return path if path.is_absolute() else base / path


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller reports
    coverage = config.stash[COVERAGE]
    if not coverage:
        return
    if not config.getoption("--bpm-no-coverage"):
        terminalreporter.section("BPMN coverage")
        for line in coverage.lines(width=terminalreporter._tw.fullwidth):
            terminalreporter.write_line(line)
    directory = _html_dir(config)
    if directory is not None:
        index = write_html(coverage, directory)
        terminalreporter.write_line(f"BPMN coverage report: {index}")


class _XdistCoverage:
    """Workers hand their coverage to the controller through xdist's ``workeroutput``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(self.config, "workeroutput", None)
        if output is not None:
            output["bpm_coverage"] = self.config.stash[COVERAGE].to_json()

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = getattr(node, "workeroutput", {}).get("bpm_coverage")
        if data:
            self.config.stash[COVERAGE].merge(Coverage.from_json(data))
