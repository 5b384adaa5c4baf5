"""Structured logs: one JSON line per step outcome, through the observer hook
(bpm/structured_logs.py), and BPM_LOG_FORMAT checked where a process starts."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bpm import ConfigurationError, Engine, TaskContext
from bpm.observe import Observers, StepFinished, StepOutcome
from bpm.structured_logs import (
    JsonFormatter,
    StepLog,
    configure,
    configure_from_env,
    log_format,
    log_steps,
    step_message,
)
from tests.engine_helpers import drain, make_engine, order_process, order_registry

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def json_lines() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A private logger writing JSON lines into a buffer."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger(f"bpm.test.steps.{id(buffer)}")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, buffer
    logger.removeHandler(handler)


def parse(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_one_json_line_per_step_outcome_with_its_fields(
    pg_database_url: str, json_lines: tuple[logging.Logger, io.StringIO]
) -> None:
    logger, buffer = json_lines
    reg = order_registry()

    def charge(ctx: TaskContext) -> dict[str, Any]:
        if ctx.attempt < 3 and ctx.variables.get("flaky"):
            raise RuntimeError("card declined")
        return {}

    reg.register("charge-payment", charge)
    engine, q = make_engine(pg_database_url, reg)
    engine.core.observers = Observers()
    engine.core.observers.subscribe(StepLog(logger))
    engine.deploy(order_process())
    calm = engine.start("order", {"amount": 120})
    flaky = engine.start("order", {"amount": 120, "flaky": True})
    drain(engine, q)

    lines = parse(buffer)
    assert all(line["event"] == "step_finished" for line in lines)
    executed: Counter[tuple[str, str, int]] = Counter()
    for inst in (calm, flaky):
        for e in engine.history(inst.id):
            if e.type == "token_executing":
                executed[(inst.id, e.node_id or "", int(e.payload["attempt"]))] += 1
    logged = Counter((line["instance"], line["node"], line["attempt"]) for line in lines)
    assert logged == executed  # one line per attempt, for every attempt the history holds
    retried = [line for line in lines if line["outcome"] == "retried"]
    assert [(r["instance"], r["node"], r["attempt"]) for r in retried] == [
        (flaky.id, "charge", 1),
        (flaky.id, "charge", 2),
    ]
    assert {(r["level"], r["error"]) for r in retried} == {
        ("warning", "RuntimeError: card declined")
    }
    for line in lines:
        assert set(line) >= {
            "ts", "level", "logger", "message", "event", "outcome", "definition", "node",
            "instance", "token", "attempt", "duration_ms", "handler_ms", "worker", "error",
        }  # fmt: skip
        assert line["definition"] == "order" and line["logger"] == logger.name
        assert line["duration_ms"] >= line["handler_ms"] >= 0
        if line["outcome"] == "completed":
            assert line["level"] == "info" and line["error"] is None
    tokens = {e.token_id for i in (calm, flaky) for e in engine.history(i.id) if e.token_id}
    assert {line["token"] for line in lines} <= tokens


def test_a_failed_step_is_an_error_line_and_a_quiet_logger_costs_nothing(
    pg_database_url: str, json_lines: tuple[logging.Logger, io.StringIO]
) -> None:
    logger, buffer = json_lines
    reg = order_registry()
    reg.register("validate-order", lambda ctx: 1 / 0)
    engine, q = make_engine(pg_database_url, reg)
    engine.core.observers = Observers()
    engine.core.observers.subscribe(StepLog(logger))
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 50})
    drain(engine, q)
    assert [(x["outcome"], x["level"]) for x in parse(buffer)] == [
        ("retried", "warning"),
        ("retried", "warning"),
        ("failed", "error"),
    ]
    # In words too, for a text log: node, instance, attempt, reason; the incident's id.
    [incident] = engine.incidents(inst.id)
    step = f"step validate of instance {inst.id}"
    reason = "ZeroDivisionError: division by zero"
    assert [(x["message"], x["incident"]) for x in parse(buffer)] == [
        (f"{step} failed (attempt 1), it runs again: {reason}", None),
        (f"{step} failed (attempt 2), it runs again: {reason}", None),
        (
            f"incident {incident.id}: {step} failed (attempt 3, the last): {reason}; fix the "
            f"cause, then retry it (bpm retry {incident.id}, or the cockpit)",
            incident.id,
        ),
    ]
    logger.setLevel(logging.CRITICAL)  # nothing enabled: nothing formatted
    engine.start("order", {"amount": 50})
    drain(engine, q)
    assert len(parse(buffer)) == 3


def test_bad_log_formats_are_refused_and_change_nothing() -> None:
    root = logging.getLogger()
    before = list(root.handlers)
    with pytest.raises(ConfigurationError, match=r"BPM_LOG_FORMAT='xml'.*'text' or 'json'"):
        configure_from_env({"BPM_LOG_FORMAT": "xml"})
    with pytest.raises(ConfigurationError, match="'yaml' is not a log format"):
        configure("yaml")
    assert root.handlers == before
    assert log_format({}) == "text" and log_format({"BPM_LOG_FORMAT": " JSON "}) == "json"
    assert configure_from_env({"BPM_LOG_FORMAT": "text"}) is None
    assert root.handlers == before


def test_configure_json_adds_one_root_handler_and_subscribes_the_step_log_once() -> None:
    root = logging.getLogger()
    before = list(root.handlers)
    bpm_level = logging.getLogger("bpm").level
    private = Observers()
    stream = io.StringIO()
    try:
        first = configure("json", stream=stream, to=private)
        second = configure("json", stream=stream, to=private)  # replaces, never doubles
        assert first is not None and second is not None
        assert [h for h in root.handlers if h not in before] == [second]
        logging.getLogger("bpm.engine").info("hello %s", "there", extra={"bpm": {"k": 1}})
        [line] = parse(stream)
        assert (line["message"], line["k"], line["level"]) == ("hello there", 1, "info")
        assert len(private) == 1 and log_steps(private) is log_steps(private)
    finally:
        for h in [h for h in root.handlers if h not in before]:
            root.removeHandler(h)
        logging.getLogger("bpm").setLevel(bpm_level)


def test_exceptions_are_kept_in_the_json_line() -> None:
    try:
        raise KeyError("missing")
    except KeyError:
        record = logging.getLogger("x").makeRecord(
            "x", logging.ERROR, __file__, 1, "failed: %s", ("it",), sys.exc_info()
        )
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed: it" and "KeyError: 'missing'" in line["exception"]


def bpm_cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{cwd}", **env}
    return subprocess.run(
        [sys.executable, "-c", "from bpm.cli import main; main()", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


HANDLERS = textwrap.dedent(
    """
    from bpm import service_task

    for name in ("validate-order", "reserve-stock", "charge-payment", "ship-order"):
        service_task(name)(lambda ctx: {ctx.node_id: ctx.attempt})
    """
)


def test_the_cli_logs_json_step_lines_and_refuses_a_bad_format(tmp_path: Path) -> None:
    (tmp_path / "shop_handlers.py").write_text(HANDLERS)
    db = f"sqlite:///{tmp_path / 'bpm.db'}"
    order = str(ROOT / "examples" / "order.bpmn")

    bad = bpm_cli(["run", order, "--db", db], tmp_path, BPM_LOG_FORMAT="xml")
    assert bad.returncode == 2
    assert "BPM_LOG_FORMAT='xml' is not a log format" in bad.stderr
    assert not (tmp_path / "bpm.db").exists()  # nothing ran

    ran = bpm_cli(
        ["run", order, "--var", "amount=120", "--handlers", "shop_handlers", "--db", db],
        tmp_path,
        BPM_LOG_FORMAT="json",
    )
    assert ran.returncode == 0, ran.stderr
    steps = [json.loads(x) for x in ran.stderr.splitlines() if '"step_finished"' in x]
    assert sorted(s["node"] for s in steps) == ["charge", "reserve", "ship", "validate"]
    assert {(s["outcome"], s["attempt"], s["logger"]) for s in steps} == {
        ("completed", 1, "bpm.steps")
    }
    check = Engine(db)
    try:
        [inst] = check.instances(definition_key="order")
        assert {s["instance"] for s in steps} == {inst.id} and inst.ended
    finally:
        check.close()


def test_each_outcome_reads_as_words() -> None:
    def event(outcome: StepOutcome, incident: str | None = None) -> StepFinished:
        return StepFinished(
            "order", "charge", "i-1", "t-1", 2, "w@host", outcome, 0.1, 0.05, "E: x", incident
        )

    assert step_message(event(StepOutcome.COMPLETED)) == (
        "step charge of instance i-1 completed (attempt 2)"
    )
    # the last attempt failed and an error boundary (or another failure action) took over
    assert step_message(event(StepOutcome.FAILED)) == (
        "step charge of instance i-1 failed for good (attempt 2): E: x"
    )
    assert step_message(event(StepOutcome.DROPPED)) == (
        "step charge of instance i-1: the result of attempt 2 was dropped (its lease was no "
        "longer w@host's; another attempt decides)"
    )
