"""Decision table evaluations/s: ``bpm.dmn`` against SpiffWorkflow 3.2's DMN engine.

    pip install 'spiffworkflow==3.2.*'      # the bench alone needs it (extra: bpm-celery[bench])
    python -m bench.dmn [--evaluations 20000] [--quick]

One 100-rule table with five inputs (number, number, number, string, boolean), generated
from a fixed seed, written twice: in FEEL for ``bpm.dmn`` and with Python cells for
SpiffWorkflow (whose DMN engine evaluates cells as Python expressions); the cells mean the
same. Two hit policies: FIRST (SpiffWorkflow's UNIQUE stops at the first match, which is
FIRST) and COLLECT SUM (SpiffWorkflow has no aggregation: its COLLECT list is summed in
Python, which this bench counts in its time). Both engines must give the same answer for
every generated input before anything is timed. Printed: evaluations/s of each, the ratio,
and the load average (other load moves the figures).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from types import SimpleNamespace
from typing import Any
from xml.sax.saxutils import escape

from bpm import dmn

NS = "https://www.omg.org/spec/DMN/20191111/MODEL/"  # DMN 1.3: both engines read it
Table = list[list[tuple[str, Any] | None]]
Evaluator = Callable[[dict[str, Any]], Any]
REGIONS = ("north", "south", "east", "west")
INPUTS = (("age", "number"), ("income", "number"), ("score", "number"), ("region", "string"),
          ("member", "boolean"))  # fmt: skip


def rules(seed: int) -> list[list[tuple[str, Any] | None]]:
    """100 rules; each cell a (operator, value) test or None (``-``); the last matches all."""
    rng = random.Random(seed)
    table: list[list[tuple[str, Any] | None]] = []
    for _ in range(99):
        row: list[tuple[str, Any] | None] = []
        for name, _kind in INPUTS:
            if rng.random() < 0.45:
                row.append(None)
            elif name == "age":
                row.append((rng.choice(("<", ">=")), rng.randrange(18, 80)))
            elif name == "income":
                row.append((rng.choice(("<", ">")), rng.randrange(1000, 9000, 250)))
            elif name == "score":
                row.append((rng.choice(("<=", ">")), rng.randrange(300, 850, 10)))
            elif name == "region":
                row.append(("=", rng.choice(REGIONS)))
            else:
                row.append(("=", rng.random() < 0.5))
        table.append(row)
    table.append([None] * len(INPUTS))
    return table


def cell(test: tuple[str, Any] | None, python: bool) -> str:
    if test is None:
        return "-"
    op, value = test
    if isinstance(value, bool):
        return ("True" if value else "False") if python else ("true" if value else "false")
    if isinstance(value, str):
        return f'"{value}"'
    return f"{op} {value}"


def table_xml(table: list[list[tuple[str, Any] | None]], policy: str, python: bool) -> str:
    hit = 'hitPolicy="COLLECT" aggregation="SUM"' if policy == "sum" else 'hitPolicy="FIRST"'
    if python:  # SpiffWorkflow knows UNIQUE (first match) and COLLECT, without aggregation
        hit = 'hitPolicy="COLLECT"' if policy == "sum" else 'hitPolicy="UNIQUE"'
    parts = [
        f'<?xml version="1.0" encoding="UTF-8"?><definitions xmlns="{NS}" id="bench" '
        'name="bench" namespace="urn:bench"><decision id="discount" name="discount">'
    ]
    parts.extend(
        f'<informationRequirement id="req_{name}"><requiredInput href="#{name}"/>'
        "</informationRequirement>"
        for name, _ in INPUTS
    )
    parts.append(f'<decisionTable id="table" {hit}>')  # fmt: skip
    for i, (name, kind) in enumerate(INPUTS):
        parts.append(f'<input id="in{i}" label="{name}"><inputExpression id="ie{i}" '
                     f'typeRef="{kind}"><text>{name}</text></inputExpression></input>')  # fmt: skip
    parts.append('<output id="out" name="discount" typeRef="number"/>')
    for n, row in enumerate(table):
        parts.append(f'<rule id="r{n}">')
        parts.extend(
            f'<inputEntry id="r{n}i{i}"><text>{escape(cell(c, python))}</text></inputEntry>'
            for i, c in enumerate(row)
        )
        parts.append(f'<outputEntry id="r{n}o"><text>{n % 7}</text></outputEntry></rule>')
    parts.append("</decisionTable></decision>")
    parts.extend(f'<inputData id="{name}" name="{name}"><variable name="{name}" '
                 f'typeRef="{kind}"/></inputData>' for name, kind in INPUTS)  # fmt: skip
    parts.append("</definitions>")
    return "".join(parts)


def inputs(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed + 1)
    return [
        {
            "age": rng.randrange(16, 90),
            "income": rng.randrange(500, 10000),
            "score": rng.randrange(300, 850),
            "region": rng.choice(REGIONS),
            "member": rng.random() < 0.5,
        }
        for _ in range(count)
    ]


def ours(policy: str, table: Table) -> Evaluator:
    model = dmn.load(table_xml(table, policy, python=False))
    return lambda values: model.evaluate("discount", values)


def spiff(
    policy: str, table: list[list[tuple[str, Any] | None]]
) -> Callable[[dict[str, Any]], Any]:
    try:  # the bench's own extra, not a dependency of the engine
        from SpiffWorkflow.bpmn.script_engine import PythonScriptEngine
        from SpiffWorkflow.dmn.parser.BpmnDmnParser import BpmnDmnParser
    except ImportError:
        sys.exit("bench.dmn needs SpiffWorkflow: pip install 'bpm-celery[bench]'")

    parser = BpmnDmnParser()
    parser.add_dmn_str(table_xml(table, policy, python=True).encode())
    engine = parser.get_engine("discount", None)
    workflow = SimpleNamespace(script_engine=PythonScriptEngine())

    def evaluate(values: dict[str, Any]) -> Any:
        result = engine.result(SimpleNamespace(data=values, workflow=workflow))
        if policy == "sum":
            hits = result.get("discount", [])
            return sum(hits) if hits else None
        return result.get("discount")

    return evaluate


def rate(evaluate: Callable[[dict[str, Any]], Any], data: list[dict[str, Any]], n: int) -> float:
    for values in data[:200]:  # warm-up
        evaluate(values)
    started = time.perf_counter()
    for i in range(n):
        evaluate(data[i % len(data)])
    return n / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.dmn", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--evaluations", type=int, default=20_000, help="per engine and policy")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--quick", action="store_true", help="2,000 evaluations")
    args = parser.parse_args(argv)
    n = 2_000 if args.quick else args.evaluations
    table = rules(args.seed)
    data = inputs(args.seed, 1000)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for policy, label in (("first", "FIRST"), ("sum", "COLLECT SUM")):
        mine, theirs = ours(policy, table), spiff(policy, table)
        for values in data:
            a, b = mine(values), theirs(values)
            if a != (Decimal(b) if b is not None else None):
                print(f"{label}: the engines disagree on {values}: {a} vs {b}")
                return 1
        ours_rate = rate(mine, data, n)
        spiff_rate = rate(theirs, data, n)
        ratio = ours_rate / spiff_rate
        print(
            f"{label:12} results agree on {len(data)} inputs; bpm.dmn {ours_rate:,.0f}/s, "
            f"SpiffWorkflow {spiff_rate:,.0f}/s, ratio {ratio:.1f}x"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
