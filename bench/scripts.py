"""What a sandboxed Python script costs per run (``python -m bench.scripts``).

Three figures, each the mean of ``--runs`` runs of ``total = price * quantity``:

* ``sandbox``: :func:`bpm.scripts.run_in_sandbox` from a process that imported the engine
  (a worker): a request to the sandbox process, a fork there, the answer;
* ``fork here``: forking the worker itself per run instead (the design not taken);
* ``step``: an instance (start, the step, end; SQLite in memory, the test kit) whose step
  is a Python script task, against the same with an inline no-op handler, and with that
  handler and two no-op execution listeners.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from bpm.builder import Process
from bpm.handlers import HandlerRegistry
from bpm.scripts import Limits, compile_python, run, run_in_sandbox
from bpm.testing import BpmTest

SCRIPT = "total = price * quantity"
VARIABLES = {"price": 3, "quantity": 4}


def per_run(fn: Callable[[], object], runs: int) -> float:
    fn()  # the first run starts the sandbox process
    started = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - started) / runs * 1000


def step_ms(language: str, runs: int) -> float:
    registry = HandlerRegistry()
    registry.register("noop", lambda ctx: {"total": 12})
    kit = BpmTest.create(registry=registry)
    try:
        proc = Process("p").start("s")
        if language == "python":
            proc = proc.script_task("t", SCRIPT, language="python")
        elif language == "listeners":
            listeners = [("start", "noop"), ("end", "noop")]
            proc = proc.service_task("t", handler="noop", listeners=listeners)
        else:
            proc = proc.service_task("t", handler="noop")
        kit.deploy(proc.end("e").sequence("s", "t", "e"))
        kit.start("p", VARIABLES)
        started = time.perf_counter()
        for _ in range(runs):
            kit.start("p", VARIABLES)
        return (time.perf_counter() - started) / runs * 1000
    finally:
        kit.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    limits = Limits()
    compiled = compile_python(SCRIPT)
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, {args.runs} runs")
    sandbox = per_run(lambda: run_in_sandbox(SCRIPT, VARIABLES, limits), args.runs)
    print(f"sandbox   {sandbox:6.2f} ms per run")
    forked = per_run(lambda: run(compiled, VARIABLES, limits), args.runs)
    print(f"fork here {forked:6.2f} ms per run")
    noop, python = step_ms("noop", args.runs), step_ms("python", args.runs)
    listened = step_ms("listeners", args.runs)
    print(f"step      {python:6.2f} ms per instance with a Python script task")
    print(f"          {noop:6.2f} ms per instance with a no-op inline handler")
    print(f"          {listened:6.2f} ms per instance with it and a start and an end listener")


if __name__ == "__main__":
    main()
