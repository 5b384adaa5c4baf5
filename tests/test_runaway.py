"""Runaway models: a loop that never waits is refused at deploy; what slips through is
stopped by the step bound of one transaction; ``bpm run --timeout`` honours its bound."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bpm import Engine, EngineConfig, service_task
from bpm.builder import Process
from bpm.cli import app as cli_app
from bpm.errors import DeploymentError
from bpm.handlers import TaskContext
from bpm.local import LocalLoop
from bpm.model.validate import check_model
from bpm.runtime.states import InstanceState, TokenState
from bpm.runtime.walker import RUNAWAY_INCIDENT
from tests.support import eventually

GATEWAY_LOOP = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    id="d" targetNamespace="t">
  <bpmn:process id="spin" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:exclusiveGateway id="again" default="back"/>
    <bpmn:intermediateThrowEvent id="note"/>
    <bpmn:endEvent id="end"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="again"/>
    <bpmn:sequenceFlow id="out" sourceRef="again" targetRef="end">
      <bpmn:conditionExpression>done == true</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="back" sourceRef="again" targetRef="note"/>
    <bpmn:sequenceFlow id="f3" sourceRef="note" targetRef="again"/>
  </bpmn:process>
</bpmn:definitions>
"""


def spin_model(*, with_task: bool = False) -> Process:
    p = Process("spin").start("start").exclusive("again", default="back").end("end")
    p.flow("start", "again").flow("again", "end", "done == true")
    if with_task:
        p.service_task("work", handler="noop").flow("again", "work", id="back")
        return p.flow("work", "again")
    return p.task("pause").flow("again", "pause", id="back").flow("pause", "again")


def test_a_loop_of_gateways_and_events_is_refused_at_deploy(engine: Engine) -> None:
    with pytest.raises(DeploymentError) as caught:
        engine.deploy(GATEWAY_LOOP)
    text = str(caught.value)
    assert "'again', 'note'" in text and "no task and no wait" in text
    assert engine.definitions() == []  # nothing deployed
    with pytest.raises(DeploymentError, match="'again', 'pause'"):
        spin_model().build()


def test_a_gateway_that_loops_to_itself_is_refused() -> None:
    p = Process("self").start("s").exclusive("g", default="again").end("e")
    p.flow("s", "g").flow("g", "e", "x > 1").flow("g", "g", id="again")
    with pytest.raises(DeploymentError, match="the loop through 'g'"):
        p.build()


def test_loops_that_can_change_something_deploy() -> None:
    spin_model(with_task=True).build()  # a handler runs on each pass
    counted = (
        Process("count")
        .start("s")
        .exclusive("g", default="more")
        .task("inc", outputs={"n": "n + 1"})  # a mapping changes a variable
        .end("e")
    )
    counted.flow("s", "g").flow("g", "e", "n >= 3").flow("g", "inc", id="more").flow("inc", "g")
    counted.build()
    timed = Process("timed").start("s").exclusive("g", default="wait").timer("t", duration="PT1M")
    timed.end("e").flow("s", "g").flow("g", "e", "done").flow("g", "t", id="wait")
    timed.flow("t", "g").build()


def test_a_parallel_join_on_the_loop_waits() -> None:
    # The join waits for its second branch: not an endless loop at deploy.
    p = Process("j").start("s").exclusive("m").parallel("fork").parallel("join")
    p.exclusive("g", default="back").end("e").service_task("w", handler="noop")
    p.flow("s", "m").flow("m", "fork").flow("fork", "join").flow("fork", "w").flow("w", "join")
    p.flow("join", "g").flow("g", "e", "x").flow("g", "m", id="back")
    problems, _ = check_model(p.build())
    assert problems == []


def counting_loop(limit: int) -> Process:
    p = Process("count").start("s").exclusive("g", default="more").end("e")
    p.task("inc", outputs={"n": "n + 1"})
    return (
        p.flow("s", "g")
        .flow("g", "e", f"n >= {limit}")
        .flow("g", "inc", id="more")
        .flow("inc", "g")
    )


@pytest.mark.parametrize("config", [EngineConfig(max_steps_per_transaction=200)])
def test_the_step_bound_stops_a_loop_with_an_incident_naming_it(engine: Engine) -> None:
    engine.deploy(counting_loop(1_000_000).build())
    inst = engine.start("count", {"n": 0})  # returns: the bound stopped the token

    inst = engine.get_instance(inst.id)
    assert inst.state is InstanceState.ACTIVE
    (failed,) = [t for t in inst.tokens if t.state is not TokenState.COMPLETED]
    assert failed.state is TokenState.FAILED and failed.node_id in ("g", "inc")
    (incident,) = engine.incidents(inst.id)
    assert incident.type == RUNAWAY_INCIDENT
    assert "more than 200 steps" in incident.message
    assert "'g'" in incident.message and "'inc'" in incident.message
    # About 200 steps were taken, two per pass: n is no more than 100.
    assert 90 <= inst.variables["n"] <= 100
    trail = [e.type for e in engine.history(inst.id)]
    assert "incident_opened" in trail


@pytest.mark.parametrize("config", [EngineConfig(max_steps_per_transaction=200)])
def test_a_loop_within_the_bound_completes(engine: Engine) -> None:
    engine.deploy(counting_loop(50).build())
    inst = engine.get_instance(engine.start("count", {"n": 0}).id)
    assert inst.state is InstanceState.COMPLETED and inst.variables["n"] == 50
    assert engine.incidents(inst.id) == []


def test_the_bound_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPM_MAX_STEPS_PER_TRANSACTION", "123")
    assert EngineConfig.from_env().max_steps_per_transaction == 123
    assert EngineConfig().max_steps_per_transaction == 50_000


RUNS: list[int] = []


@service_task("runaway.again")
def again(ctx: TaskContext) -> dict[str, int]:
    RUNS.append(ctx.attempt)
    return {"passes": len(RUNS)}


def self_loop() -> Process:
    p = Process("self-loop").start("s").service_task("work", handler="runaway.again")
    p.exclusive("g", default="back").end("e")
    return (
        p.flow("s", "work")
        .flow("work", "g")
        .flow("g", "e", "passes < 0")
        .flow("g", "work", id="back")
    )


def test_the_local_loop_returns_at_its_timeout_from_a_step_that_loops(
    sqlite_engine: Engine,
) -> None:
    loop = LocalLoop(sqlite_engine, tick_budget=timedelta(milliseconds=200))
    sqlite_engine.deploy(self_loop().build())
    RUNS.clear()
    inst = sqlite_engine.start("self-loop")
    started = time.monotonic()
    settled = loop.run_instance(inst.id, timeout=timedelta(seconds=1))
    took = time.monotonic() - started
    # The bound plus at most one run_token drain (EngineConfig.drain_for, 2 s).
    assert took < 1 + 2 + 1, took
    assert settled.waiting_on[0] == "timeout"
    assert not settled.ended and len(RUNS) > 10


@pytest.fixture
def sqlite_engine(sqlite_database_url: str) -> Engine:
    from bpm.store import db as bpm_db
    from bpm.store import migrate

    eng = bpm_db.connect(sqlite_database_url)
    migrate.upgrade(eng)
    eng.dispose()
    return Engine(sqlite_database_url)


def test_bpm_run_timeout_ends_a_step_that_loops(tmp_path: Path) -> None:
    model_file = tmp_path / "self-loop.bpmn"
    model_file.write_text(SELF_LOOP_XML)
    started = time.monotonic()
    result = CliRunner().invoke(
        cli_app,
        [
            "run",
            str(model_file),
            "--handlers",
            "tests.test_runaway",
            "--timeout",
            "1",
            "--db",
            f"sqlite:///{tmp_path / 'bpm.db'}",
        ],
    )
    # ended by its 1 s timeout, not by the test's (a loop runs until pytest-timeout's 300 s);
    # a loaded CI machine took 13 s here, so the bound only tells the two apart
    assert time.monotonic() - started < 60
    assert result.exit_code == 1, result.output
    assert "gave up after --timeout 1 s" in result.output
    assert "work" in result.output


SELF_LOOP_XML = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="self-loop" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="work" camunda:delegateExpression="${runaway.again}"/>
    <bpmn:exclusiveGateway id="g" default="back"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="g"/>
    <bpmn:sequenceFlow id="out" sourceRef="g" targetRef="e">
      <bpmn:conditionExpression>passes &lt; 0</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="back" sourceRef="g" targetRef="work"/>
  </bpmn:process>
</bpmn:definitions>
"""


def test_the_dev_loop_stops_promptly_while_a_step_loops(sqlite_engine: Engine) -> None:
    loop = LocalLoop(sqlite_engine, tick_budget=timedelta(milliseconds=200))
    sqlite_engine.deploy(self_loop().build())
    RUNS.clear()
    sqlite_engine.start("self-loop")
    server = threading.Thread(target=loop.serve, daemon=True)
    server.start()
    eventually(lambda: len(RUNS) > 5, timeout=10, what="the loop to run the step")
    stopped = time.monotonic()
    loop.stop()  # what Ctrl-C / SIGTERM does in `bpm dev`
    server.join(timeout=5)
    assert not server.is_alive()
    assert time.monotonic() - stopped < 3  # one tick's budget plus one step, not for ever
