"""docs/testing.md's code is run: its excerpts are in the example's file, its tests pass."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bpm.testing import BpmTest, export_case

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"
BLOCK = re.compile(r"<!-- (excerpt|file): (\S+) -->\n```python\n(.*?)```", re.S)


def blocks() -> list[tuple[str, str, str]]:
    found = BLOCK.findall(DOC.read_text())
    assert found, "docs/testing.md has no marked code blocks"
    return found


def test_every_excerpt_is_in_its_file() -> None:
    excerpts = [(name, code) for kind, name, code in blocks() if kind == "excerpt"]
    assert excerpts
    for name, code in excerpts:
        assert code in (ROOT / name).read_text(), f"docs/testing.md differs from {name}"


def declined_card_case() -> dict[str, object]:
    """What `bpm trail export` writes for an order whose card was declined."""
    from examples.order_approval import order_approval

    kit = BpmTest.create()
    try:
        kit.deploy(order_approval)
        order = kit.start(
            "order_approval", {"amount": 40, "card": "4000000000000000"}, business_key="o-17"
        )
        return export_case(kit.engine, order.id)
    finally:
        kit.close()


def test_the_tests_of_the_page_pass(pytester: pytest.Pytester) -> None:
    files: dict[str, str] = {}
    for kind, name, code in blocks():
        if kind == "file":
            files[name] = files.get(name, "") + code
    for name, code in files.items():
        (pytester.path / name).write_text(code)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "declined-card.json").write_text(json.dumps(declined_card_case()))
    quiet = ("no:cacheprovider", "no:schemathesis", "no:hypothesispytest", "no:anyio")
    args = [a for name in quiet for a in ("-p", name)]
    result = pytester.runpytest_inprocess("-p", "bpm.testing.plugin", *args)
    result.assert_outcomes(passed=8)
    assert re.search(r"order_approval\s+\d+/\d+\s+\d+/\d+", result.stdout.str())
