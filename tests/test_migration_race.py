"""A migration racing a worker that finishes a step of the same instance (issue 22, must
hold): one wins, the other sees the new state or fails cleanly; nothing is doubled or
lost. Threads on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bpm import Engine, TaskContext
from bpm.builder import Process
from bpm.engine.migration import MigrationError
from bpm.handlers import HandlerRegistry
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import InstanceState
from tests.engine_helpers import QueueDispatcher
from tests.scopes_helpers import engine_on

DEADLINE = 30.0


class Gate:
    """Lets a test hold a handler while the migration runs."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.hold = False


def line(*, work: bool = True, check: bool = False, external: bool = False) -> Any:
    """s -> work (inline, or external on topic 'pay') -> [check ->] after -> e"""
    p = Process("race").start("s").user_task("after").end("e")
    steps = ["s"]
    if work:
        p = (
            p.service_task("work", topic="pay")
            if external
            else p.service_task("work", handler="step")
        )
        steps.append("work")
    if check:
        p = p.user_task("check")
        steps.append("check")
    return p.sequence(*steps, "after", "e")


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def pg(pg_database_url: str, gate: Gate) -> Iterator[tuple[Engine, QueueDispatcher]]:
    reg = HandlerRegistry()

    def step(ctx: TaskContext) -> dict[str, Any]:
        gate.entered.set()
        if gate.hold:
            assert gate.release.wait(DEADLINE)
        return {"stepped": ctx.variables.get("stepped", 0) + 1}

    reg.register("step", step)
    eng, q = engine_on(pg_database_url, reg)
    yield eng, q
    eng.close()


def _tasks(engine: Engine, instance_id: str) -> list[str]:
    return sorted(t.node_id for t in engine.user_tasks(instance_id))


def test_a_step_running_while_its_instance_migrates_finishes_on_the_new_version(
    pg: tuple[Engine, QueueDispatcher], gate: Gate
) -> None:
    engine, q = pg
    v1 = engine.deploy(line())
    inst = engine.start("race")
    (token,) = list(q.queue)
    v2 = engine.deploy(line(check=True))
    gate.hold = True
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            engine.run_token(token, worker_id="w1")
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    assert gate.entered.wait(DEADLINE)  # the worker claimed the step and runs it
    engine.migration.execute(engine.migration.generate(v1.id, v2.id), [inst.id], by="ops")
    gate.release.set()
    thread.join(DEADLINE)
    assert not thread.is_alive() and errors == []
    # the worker's lease survived the migration; its finish continued on v2
    assert _tasks(engine, inst.id) == ["check"]
    assert engine.get_instance(inst.id).variables["stepped"] == 1


@pytest.mark.parametrize("external", [False, True])
@pytest.mark.parametrize("round_", range(6))
def test_a_free_race_has_exactly_one_outcome(
    pg: tuple[Engine, QueueDispatcher], round_: int, external: bool
) -> None:
    """v2 drops the step: a migration that comes first is refused (naming it); one that
    comes after the step finished moves the instance. Either way the step ran once and
    exactly one task waits."""
    engine, _ = pg
    v1 = engine.deploy(line(external=external))
    inst = engine.start("race")
    task_id = ""
    if external:
        (task,) = engine.fetch_and_lock(FetchRequest("w1", 1, (TopicRequest("pay", 600_000),)))
        task_id = task.id
    (token,) = [t.id for t in engine.get_instance(inst.id).tokens if t.node_id == "work"]
    v2 = engine.deploy(line(work=False))
    plan = engine.migration.generate(v1.id, v2.id)
    start = threading.Barrier(2)
    results: dict[str, Any] = {}

    def worker() -> None:
        start.wait(DEADLINE)
        try:
            if external:
                engine.complete_external_task(task_id, "w1", {"stepped": 1})
            else:
                engine.run_token(token, worker_id="w1")
            results["worker"] = "ran"
        except BaseException as exc:  # reported by the test
            results["worker"] = exc

    def operator() -> None:
        start.wait(DEADLINE)
        try:
            engine.migration.execute(plan, [inst.id])
            results["migrate"] = "applied"
        except MigrationError as exc:
            results["migrate"] = exc

    threads = [threading.Thread(target=worker), threading.Thread(target=operator)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert results["worker"] == "ran", results
    after = engine.get_instance(inst.id)
    assert _tasks(engine, inst.id) == ["after"]  # never two, never none
    assert after.variables["stepped"] == 1
    assert after.state is InstanceState.ACTIVE
    if results["migrate"] == "applied":
        assert after.definition_id == v2.id
    else:
        assert after.definition_id == v1.id
        assert "'work'" in str(results["migrate"])


def test_a_migration_that_would_drop_a_running_step_is_refused_and_the_step_finishes(
    pg: tuple[Engine, QueueDispatcher], gate: Gate
) -> None:
    engine, q = pg
    v1 = engine.deploy(line())
    inst = engine.start("race")
    (token,) = list(q.queue)
    v2 = engine.deploy(line(work=False))
    gate.hold = True
    thread = threading.Thread(target=lambda: engine.run_token(token, worker_id="w1"))
    thread.start()
    assert gate.entered.wait(DEADLINE)
    with pytest.raises(MigrationError, match="'work'"):
        engine.migration.execute(engine.migration.generate(v1.id, v2.id), [inst.id])
    gate.release.set()
    thread.join(DEADLINE)
    assert not thread.is_alive()
    assert _tasks(engine, inst.id) == ["after"]
    assert engine.get_instance(inst.id).definition_id == v1.id
    # now that the step is done, the same plan moves it
    engine.migration.execute(engine.migration.generate(v1.id, v2.id), [inst.id])
    assert engine.get_instance(inst.id).definition_id == v2.id


_COMPLETER = """
import sys
from bpm import Engine
engine = Engine(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for task_id in sys.argv[2:]:
    engine.complete_external_task(task_id, "w1", {"stepped": 1})
engine.close()
"""


def test_a_worker_process_completing_tasks_while_they_migrate(pg_database_url: str) -> None:
    """A real worker process completes external tasks while this process migrates their
    instances one by one: each instance ends on v2 with its task completed once and one
    user task (v2's check when the migration came first, else after)."""
    engine, _ = engine_on(pg_database_url)
    try:
        v1 = engine.deploy(line(external=True))
        ids = [engine.start("race").id for _ in range(20)]
        tasks = engine.fetch_and_lock(FetchRequest("w1", 20, (TopicRequest("pay", 600_000),)))
        assert len(tasks) == 20
        v2 = engine.deploy(line(external=True, check=True))
        plan = engine.migration.generate(v1.id, v2.id)
        with subprocess.Popen(
            [sys.executable, "-c", _COMPLETER, pg_database_url, *[t.id for t in tasks]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        ) as worker:
            try:
                assert worker.stdout is not None and worker.stdin is not None
                assert worker.stdout.readline().strip() == "ready"
                worker.stdin.write("go\n")
                worker.stdin.flush()
                for iid in ids:
                    engine.migration.execute(plan, [iid])
                assert worker.wait(DEADLINE * 2) == 0
            finally:
                if worker.poll() is None:
                    worker.kill()
        outcomes = set()
        for iid in ids:
            inst = engine.get_instance(iid)
            assert inst.definition_id == v2.id and inst.variables == {"stepped": 1}
            (one,) = _tasks(engine, iid)  # never two, never none
            outcomes.add(one)
        assert outcomes <= {"check", "after"}
        assert engine.external_tasks(topic="pay") == []  # every one completed
    finally:
        engine.close()
