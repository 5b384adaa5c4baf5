"""A modification racing a worker that finishes a step of the same instance (issue 22,
must hold): one wins, the other sees the new state or fails cleanly; nothing is doubled
or lost. Threads on PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from bpm import Engine, TaskContext
from bpm.builder import Process
from bpm.engine.modification import Cancel, ModificationError, StartBefore
from bpm.handlers import HandlerRegistry
from bpm.runtime.states import InstanceState
from tests.engine_helpers import QueueDispatcher
from tests.scopes_helpers import engine_on

DEADLINE = 30.0


class Gate:
    """Lets a test hold a handler while the modification runs."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.hold = False


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
        return {"stepped": True}

    reg.register("step", step)
    eng, q = engine_on(pg_database_url, reg)
    eng.deploy(
        Process("race")
        .start("s")
        .service_task("work", handler="step")
        .user_task("after")
        .end("e")
        .sequence("s", "work", "after", "e")
    )
    yield eng, q
    eng.close()


def _outcome(engine: Engine, instance_id: str) -> tuple[list[str], bool]:
    tasks = sorted(t.node_id for t in engine.user_tasks(instance_id))
    return tasks, bool(engine.get_instance(instance_id).variables.get("stepped"))


def test_a_step_finishing_after_its_token_was_cancelled_is_dropped(
    pg: tuple[Engine, QueueDispatcher], gate: Gate
) -> None:
    engine, q = pg
    inst = engine.start("race")
    (token,) = list(q.queue)
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
    engine.modify(inst.id, [Cancel(activity_id="work"), StartBefore("after")], by="ops")
    gate.release.set()
    thread.join(DEADLINE)
    assert not thread.is_alive() and errors == []
    # the modification won: the worker's finish was dropped (its lease was taken away)
    assert _outcome(engine, inst.id) == (["after"], False)


def test_a_modification_after_the_step_finished_sees_the_new_state(
    pg: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = pg
    inst = engine.start("race")
    (token,) = list(q.queue)
    engine.run_token(token, worker_id="w1")
    with pytest.raises(ModificationError, match="no token is at activity 'work'"):
        engine.modify(inst.id, [Cancel(activity_id="work"), StartBefore("after")])
    assert _outcome(engine, inst.id) == (["after"], True)


@pytest.mark.parametrize("round_", range(8))
def test_a_free_race_has_exactly_one_winner(
    pg: tuple[Engine, QueueDispatcher], round_: int
) -> None:
    engine, q = pg
    inst = engine.start("race")
    (token,) = list(q.queue)
    start = threading.Barrier(2)
    results: dict[str, Any] = {}

    def worker() -> None:
        start.wait(DEADLINE)
        try:
            engine.run_token(token, worker_id="w1")
            results["worker"] = "ran"
        except BaseException as exc:  # reported by the test
            results["worker"] = exc

    def operator() -> None:
        start.wait(DEADLINE)
        try:
            engine.modify(inst.id, [Cancel(activity_id="work"), StartBefore("after")])
            results["modify"] = "applied"
        except ModificationError as exc:
            results["modify"] = exc

    threads = [threading.Thread(target=worker), threading.Thread(target=operator)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert results["worker"] == "ran", results
    tasks, stepped = _outcome(engine, inst.id)
    assert tasks == ["after"]  # never two, never none
    if results["modify"] == "applied":
        assert not stepped
    else:
        assert stepped and "no token is at activity 'work'" in str(results["modify"])
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
