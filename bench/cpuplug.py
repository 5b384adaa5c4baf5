"""A pytest plugin: the CPU seconds each test costs (its process plus reaped children).

Wall time on a shared 2-core machine moves with whatever else runs; the CPU a test consumes
barely does. Load it with ``-p bench.cpuplug`` and name a file with ``BPM_CPU_JSON``
(each xdist worker writes ``<file>.<worker>``, the controller nothing)::

    BPM_CPU_JSON=/tmp/cpu.json pytest -p bench.cpuplug -n 2 tests/api/test_rest.py
    python -m bench.cpuplug /tmp/cpu.json*          # per file, slowest first

A test's figure is ``getrusage(RUSAGE_SELF)`` + ``getrusage(RUSAGE_CHILDREN)`` (user +
system) around its setup, call and teardown: a subprocess counts once it is waited for (an
API server killed in the teardown counts; its own children count when it waited for them),
and so do the commands ``tests/forked.py``'s zygote forked and reaped (it is asked; its own
start-up is charged to the test that first needed it).
PostgreSQL's backends are not children, so the server side of a query is not in it. A
module-scoped fixture is charged to the module's first test (setup) and last (teardown).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_results: dict[str, dict[str, float]] = {}


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    # tests/forked.py's zygote forks commands and reaps them itself: count what it used
    forked = sys.modules.get("tests.forked")
    extra = forked.zygote_cpu() if forked is not None else 0.0
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + extra


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    cpu, wall = _cpu(), time.monotonic()
    yield
    _results[item.nodeid] = {"cpu": _cpu() - cpu, "wall": time.monotonic() - wall}


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("BPM_CPU_JSON")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not out or (worker is None and not _results):
        return
    path = Path(f"{out}.{worker}" if worker else out)
    path.write_text(json.dumps(_results, indent=1))


def summary(paths: list[str]) -> str:
    """Per file: tests, CPU seconds and summed wall seconds, slowest CPU first."""
    tests: dict[str, dict[str, float]] = {}
    for p in paths:
        tests.update(json.loads(Path(p).read_text()))
    files: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for nodeid, r in tests.items():
        f = files[nodeid.split("::")[0]]
        f[0] += 1
        f[1] += r["cpu"]
        f[2] += r["wall"]
    lines = [f"{'file':60} {'tests':>5} {'cpu-s':>8} {'wall-s':>8}"]
    for name, (n, cpu, wall) in sorted(files.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"{name:60} {int(n):5} {cpu:8.1f} {wall:8.1f}")
    total_cpu = sum(f[1] for f in files.values())
    total_wall = sum(f[2] for f in files.values())
    lines.append(f"{'total':60} {len(tests):5} {total_cpu:8.1f} {total_wall:8.1f}")
    slow: list[tuple[str, Any]] = sorted(tests.items(), key=lambda kv: -kv[1]["cpu"])[:15]
    lines.append("slowest tests (cpu-s, wall-s):")
    lines.extend(f"  {r['cpu']:6.1f} {r['wall']:6.1f}  {nodeid}" for nodeid, r in slow)
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1:]))
