"""Run the DMN TCK (github dmn-tck/tck) against ``bpm.dmn``.

    python -m bench.dmn_tck /path/to/tck/TestCases [--out tck_results.csv] [--quiet]

DIR is the TCK's ``TestCases`` folder, one compliance level in it, or one test folder.
Every ``*-test-*.xml`` file is run against the model it names; other ``.dmn`` files beside
it are its imports. Prints PASS/FAIL per test case, totals per folder level, and writes the
TCK's results CSV (``"folder","test file","case id","SUCCESS|ERROR","detail"``).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from defusedxml.ElementTree import parse as parse_xml

from bpm import dmn
from bpm.errors import BpmError
from bpm.feel import temporal
from bpm.feel.builtins_text import to_string
from bpm.feel.values import DECIMAL, Function, YearsMonths

TC = "{http://www.omg.org/spec/DMN/20160719/testcase}"
XSI = "{http://www.w3.org/2001/XMLSchema-instance}"
NUMBER_TOLERANCE = Decimal("0.00000001")


@dataclass(frozen=True)
class Outcome:
    folder: str
    test_file: str
    case_id: str
    passed: bool
    detail: str


# --- values -----------------------------------------------------------------------------

_MISSING = object()


def read_value(node: Element) -> Any:
    """A TCK ``valueType`` element (value, component list or list) as a FEEL value."""
    value = node.find(f"{TC}value")
    if value is not None:
        return _simple(value)
    items = node.find(f"{TC}list")
    if items is not None:
        if items.get(f"{XSI}nil") == "true":
            return None
        return [read_value(i) for i in items.findall(f"{TC}item")]
    components = node.findall(f"{TC}component")
    if components:
        return {c.get("name", ""): read_value(c) for c in components}
    if node.get(f"{XSI}nil") == "true":
        return None
    return _MISSING


def _simple(node: Element) -> Any:
    if node.get(f"{XSI}nil") == "true":
        return None
    kind = (node.get(f"{XSI}type") or "").split(":")[-1]
    text = node.text or ""
    if kind in ("decimal", "double", "float", "int", "integer", "long", "short"):
        if text.strip() in ("NaN", "INF", "-INF"):
            return None
        return DECIMAL.create_decimal(text.strip())
    if kind == "boolean":
        return text.strip() == "true"
    if kind == "date":
        return temporal.parse_date(text.strip())
    if kind == "time":
        return temporal.parse_time(text.strip())
    if kind == "dateTime":
        return temporal.parse_date_time(text.strip())
    if kind in ("duration", "dayTimeDuration", "yearMonthDuration"):
        return temporal.parse_duration(text.strip())
    return text


def same(expected: Any, actual: Any) -> bool:
    """Whether a result matches the TCK's expected value."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, Decimal):
        if not isinstance(actual, Decimal):
            return False
        # The tolerance the TCK's own runners use (Drools, Camunda FEEL-Scala, QuantumDMN):
        # many expected figures were computed in binary floating point.
        return abs(expected - actual) < NUMBER_TOLERANCE
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(same(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(same(expected[k], actual[k]) for k in expected)
        )
    if isinstance(expected, dt.datetime | dt.date | dt.time):
        return type(expected) is type(actual) and to_string(expected) == to_string(actual)
    if isinstance(expected, dt.timedelta | YearsMonths):
        return type(expected) is type(actual) and expected == actual
    return bool(expected == actual) and type(expected) is type(actual)


def show(value: Any) -> str:
    if isinstance(value, Function):
        return repr(value)
    text = to_string(value, nested=True)
    return "null" if text is None else text


# --- running ----------------------------------------------------------------------------


def test_files(root: Path) -> Iterator[Path]:
    yield from sorted(root.rglob("*-test-*.xml"))


def run_file(path: Path, base: Path) -> list[Outcome]:
    tree = parse_xml(path, forbid_dtd=True)
    top = tree.getroot()
    assert top is not None
    folder = path.parent.relative_to(base).as_posix() if path.parent != base else path.parent.name
    name = path.stem
    model_name = (top.findtext(f"{TC}modelName") or "").strip()
    model_path = path.parent / model_name
    others = [p for p in sorted(path.parent.glob("*.dmn")) if p != model_path]
    cases = top.findall(f"{TC}testCase")
    try:
        model = dmn.load(model_path, imports=others, strict=False)
    except (BpmError, OSError) as exc:
        return [
            Outcome(folder, name, c.get("id", ""), False, f"model not loaded: {exc}") for c in cases
        ]
    return [run_case(model, case, folder, name) for case in cases]


def run_case(model: dmn.DecisionModel, case: Element, folder: str, name: str) -> Outcome:
    case_id = case.get("id", "")
    inputs: dict[str, Any] = {}
    by_namespace: dict[str, dict[str, Any]] = {}
    for node in case.findall(f"{TC}inputNode"):
        value = read_value(node)
        if value is _MISSING:
            value = None
        ns = node.get("namespace")
        if ns and ns != model.namespace:
            by_namespace.setdefault(ns, {})[node.get("name", "")] = value
        else:
            inputs[node.get("name", "")] = value
    kind = case.get("type", "decision")
    failures = []
    try:
        service_result: Any = _MISSING
        if kind in ("decisionService", "bkm"):
            service_result = model.invoke(case.get("invocableName", ""), inputs, inputs=inputs)
        for result in case.findall(f"{TC}resultNode"):
            expected_node = result.find(f"{TC}expected")
            expected = read_value(expected_node) if expected_node is not None else None
            if expected is _MISSING:
                expected = None
            target = result.get("name", "")
            if service_result is not _MISSING:
                actual = service_result
                if (
                    isinstance(actual, dict) and target in actual and not isinstance(expected, dict)
                ) or (
                    isinstance(actual, dict)
                    and isinstance(expected, dict)
                    and target in actual
                    and expected.keys() != actual.keys()
                ):
                    actual = actual[target]
            else:
                actual = model.evaluate_detailed(target, inputs, by_namespace=by_namespace).value
            if not same(expected, actual):
                failures.append(
                    f"'{target}' expected='{show(expected)}' but found='{show(actual)}'"
                )
    except BpmError as exc:
        failures.append(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a bug in the engine: report it, keep running the TCK
        failures.append(f"crash {type(exc).__name__}: {exc}")
    detail = "FAILURE: " + "; ".join(failures) if failures else ""
    return Outcome(folder, name, case_id, not failures, detail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.dmn_tck", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "dir", type=Path, help="the TCK's TestCases folder, a level or a test folder"
    )
    parser.add_argument("--out", type=Path, default=Path("tck_results.csv"), help="results CSV")
    parser.add_argument("--quiet", action="store_true", help="print failures and totals only")
    args = parser.parse_args(argv)
    root: Path = args.dir.resolve()
    base = root
    while base.name != "TestCases" and base.parent != base:
        base = base.parent
    if base.name != "TestCases":
        base = root.parent
    started = time.perf_counter()
    outcomes: list[Outcome] = []
    for path in test_files(root):
        for outcome in run_file(path, base):
            outcomes.append(outcome)
            if not outcome.passed or not args.quiet:
                mark = "PASS" if outcome.passed else "FAIL"
                line = f"{mark} {outcome.folder} {outcome.test_file} {outcome.case_id}"
                print(line + (f"  {outcome.detail}" if outcome.detail else ""))
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for o in outcomes:
            writer.writerow(
                [o.folder, o.test_file, o.case_id, "SUCCESS" if o.passed else "ERROR", o.detail]
            )
    levels: dict[str, list[Outcome]] = {}
    for o in outcomes:
        levels.setdefault(o.folder.split("/")[0], []).append(o)
    print()
    for level, items in sorted(levels.items()):
        passed = sum(o.passed for o in items)
        print(f"{level}: {passed} of {len(items)} passed")
    total = sum(o.passed for o in outcomes)
    elapsed = time.perf_counter() - started
    print(
        f"total: {total} passed, {len(outcomes) - total} failed ({elapsed:.1f} s); wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
