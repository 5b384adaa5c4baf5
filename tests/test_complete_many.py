"""Completes committed together: one transaction, each refusal its own."""

from __future__ import annotations

from typing import Any

from bpm import Engine
from bpm.builder import Process
from bpm.engine.external_reports import Completion
from bpm.errors import LeaseLost, NotFound, VariableError
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.engine_helpers import table_dump


def two_branches() -> Any:
    return (
        Process("pair")
        .start("s")
        .parallel("fork")
        .service_task("left", topic="pay")
        .service_task("right", topic="pay")
        .parallel("join")
        .end("e")
        .sequence("s", "fork")
        .flow("fork", "left")
        .flow("fork", "right")
        .flow("left", "join")
        .flow("right", "join")
        .sequence("join", "e")
        .build()
    )


def test_completes_of_several_instances_commit_together_and_refusals_stay_apart(
    engine: Engine,
) -> None:
    engine.deploy(two_branches())
    ids = [engine.start("pair").id for _ in range(3)]
    mine = engine.fetch_and_lock(
        FetchRequest(worker_id="w1", max_tasks=4, topics=(TopicRequest("pay", 60_000),))
    )
    theirs = engine.fetch_and_lock(
        FetchRequest(worker_id="w2", max_tasks=10, topics=(TopicRequest("pay", 60_000),))
    )
    assert len(mine) == 4 and len(theirs) == 2
    done_before = mine[0]
    engine.complete_external_task(done_before.id, "w1", {"early": 1})
    commits = engine.stats.commits
    batch = [
        *(Completion(t.id, "w1", {t.node_id: t.instance_id}) for t in mine[1:]),
        Completion(done_before.id, "w1"),  # a repeat of its own complete: fine
        Completion(theirs[0].id, "w1"),  # held by w2: refused
        Completion("no-such-task", "w1"),  # refused
        Completion(theirs[1].id, "w2", {"bad": object()}),  # not JSON: refused up front
    ]
    results = engine.complete_external_tasks(batch)
    assert engine.stats.commits - commits == 1  # one transaction for all of them
    assert results[:4] == [None, None, None, None]
    assert isinstance(results[4], LeaseLost) and "locked by worker 'w2'" in str(results[4])
    assert isinstance(results[5], NotFound)
    assert isinstance(results[6], VariableError)
    # w2 still holds its tasks and can complete them; nothing of the refused ones applied
    for t in theirs:
        engine.complete_external_task(t.id, "w2")
    for i in ids:
        inst = engine.get_instance(i)
        assert inst.state.value == "completed", i
        assert [e.type for e in engine.history(i)].count("join_fired") == 1


def test_a_batch_of_only_refused_completes_changes_nothing(engine: Engine) -> None:
    engine.deploy(two_branches())
    engine.start("pair")
    engine.fetch_and_lock(
        FetchRequest(worker_id="w1", max_tasks=2, topics=(TopicRequest("pay", 60_000),))
    )
    before = table_dump(engine)
    results = engine.complete_external_tasks(
        [Completion("nope", "w1"), Completion("nope-2", "w1", {"x": object()})]
    )
    assert isinstance(results[0], NotFound) and isinstance(results[1], VariableError)
    assert table_dump(engine) == before
