"""Leases decide who may finish a step (DESIGN section 5), on PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from bpm import Engine, IllegalTransition, TaskContext
from bpm.engine.core import utcnow
from bpm.engine.execution import Claimed, Outcome, run_handler
from bpm.engine.reclaim import take_back
from bpm.engine.unit import unit_of_work
from bpm.handlers import HandlerRegistry
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.states import TRANSITIONS, TokenState, check_transition
from bpm.store import tables as t
from bpm.store import tokens as token_store
from tests.engine_helpers import claim_one, finish_one

LEASE = timedelta(seconds=30)
Handler = Callable[[TaskContext], Any]


def two_step_model() -> ProcessModel:
    """start -> work (inline) -> review (user task) -> end."""
    nodes: list[n.Node] = [
        n.StartEvent("start"),
        n.ServiceTask("work", handler="work", lease_seconds=30),
        n.UserTask("review"),
        n.EndEvent("end"),
    ]
    flows = (
        n.Flow("f1", "start", "work"),
        n.Flow("f2", "work", "review"),
        n.Flow("f3", "review", "end"),
    )
    return ProcessModel("leases", {x.id: x for x in nodes}, flows)


class Handlers:
    """A private registry whose ``work`` handler the test can swap per test."""

    def __init__(self) -> None:
        self.registry = HandlerRegistry()
        self.fn: Handler = lambda ctx: {"worked": ctx.attempt}
        self.registry.register("work", lambda ctx: self.fn(ctx))


@pytest.fixture
def handlers() -> Handlers:
    return Handlers()


@pytest.fixture
def eng(pg_database_url: str, handlers: Handlers) -> Iterator[Engine]:
    engine = Engine(pg_database_url, registry=handlers.registry)
    engine.deploy(two_step_model())
    yield engine
    engine.close()


def work_token(engine: Engine, instance_id: str) -> Any:
    (tok,) = [x for x in engine.get_instance(instance_id).tokens if x.node_id == "work"]
    return tok


def dump(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in primary-key order."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.db.connect() as conn:
        for table in t.metadata.sorted_tables:
            q = select(table).order_by(*table.primary_key.columns)
            out[table.name] = [tuple(r) for r in conn.execute(q)]
    return out


def test_a_finish_whose_lease_was_lost_is_dropped(eng: Engine) -> None:
    inst = eng.start("leases")
    tok = work_token(eng, inst.id)
    now = utcnow()
    first = claim_one(eng.core, tok.id, "worker-a", now)
    assert first is not None and first.token.lease_expires_at == now + LEASE

    # worker-a's lease runs out; the reclaimer counts a failed attempt, worker-b takes over.
    later = now + LEASE + timedelta(seconds=1)
    assert eng.reclaim_expired_leases(now=later) == 1
    second = claim_one(eng.core, tok.id, "worker-b", later)
    assert second is not None and second.token.attempt == 2

    # worker-a comes back: dropped, counted, and not a single row changes.
    before = dump(eng)
    assert finish_one(eng.core, first, Outcome(variables={"by": "a"}), "worker-a", later) == []
    assert eng.stats.finishes_dropped == 1
    assert dump(eng) == before

    # worker-b still holds the lease: its finish applies, once.
    finish_one(eng.core, second, Outcome(variables={"by": "b"}), "worker-b", later)
    assert eng.stats.finishes_dropped == 1
    assert eng.get_instance(inst.id).variables == {"by": "b"}
    history = eng.history(inst.id)
    assert [e.type for e in history if e.token_id == tok.id].count("token_completed") == 1
    assert [e.payload["attempt"] for e in history if e.type == "attempt_failed"] == [1]

    # Finishing again after completion (a duplicate) is dropped as well.
    before = dump(eng)
    assert finish_one(eng.core, second, Outcome(variables={"by": "b2"}), "worker-b", later) == []
    assert eng.stats.finishes_dropped == 2
    assert dump(eng) == before


def test_a_finish_after_the_token_went_back_to_ready_is_dropped(eng: Engine) -> None:
    inst = eng.start("leases")
    tok = work_token(eng, inst.id)
    now = utcnow()
    step = claim_one(eng.core, tok.id, "worker-a", now)
    assert step is not None
    assert eng.reclaim_expired_leases(now=now + LEASE + timedelta(seconds=1)) == 1
    before = dump(eng)
    assert finish_one(eng.core, step, Outcome(variables={"x": 1}), "worker-a", now) == []
    assert dump(eng) == before
    assert work_token(eng, inst.id).state is TokenState.READY


def test_extend_lease_keeps_a_long_handler_alive(eng: Engine, handlers: Handlers) -> None:
    inst = eng.start("leases")
    tok = work_token(eng, inst.id)
    seen: dict[str, Any] = {}

    def long_handler(ctx: TaskContext) -> dict[str, Any]:
        claimed = work_token(eng, ctx.instance_id).lease_expires_at
        assert ctx.extend_lease(timedelta(minutes=10)) is True
        extended = work_token(eng, ctx.instance_id).lease_expires_at
        seen.update(claimed=claimed, extended=extended)
        # Past the original lease, the reclaimer leaves the step alone.
        seen["reclaimed"] = eng.reclaim_expired_leases(now=claimed + timedelta(seconds=1))
        return {"long": True}

    handlers.fn = long_handler
    assert eng.run_token(tok.id) == 1
    assert seen["extended"] - seen["claimed"] >= timedelta(minutes=9)
    assert seen["reclaimed"] == 0
    assert eng.get_instance(inst.id).variables == {"long": True}
    assert eng.stats.finishes_dropped == 0


def test_extend_lease_reports_a_lost_lease(eng: Engine, handlers: Handlers) -> None:
    inst = eng.start("leases")
    tok = work_token(eng, inst.id)
    now = utcnow()
    step = claim_one(eng.core, tok.id, "worker-a", now)
    assert step is not None
    results: list[bool] = []

    def handler(ctx: TaskContext) -> dict[str, Any]:
        results.append(ctx.extend_lease())  # still ours
        eng.reclaim_expired_leases(now=utcnow() + timedelta(hours=1))
        results.append(ctx.extend_lease())  # reclaimed meanwhile: lost
        return {"late": True}

    handlers.fn = handler
    outcome = run_handler(eng.core, step, "worker-a")
    assert results == [True, False]
    assert finish_one(eng.core, step, outcome, "worker-a", utcnow()) == []
    assert eng.stats.finishes_dropped == 1
    assert "late" not in eng.get_instance(inst.id).variables


def _claim_race(eng: Engine, claimers: int) -> None:
    inst = eng.start("leases")
    tok = work_token(eng, inst.id)
    barrier = threading.Barrier(claimers)
    won: list[Claimed | None] = []
    now = utcnow()

    def race(worker: str) -> None:
        barrier.wait(timeout=30)
        won.append(claim_one(eng.core, tok.id, worker, now))

    threads = [threading.Thread(target=race, args=(f"w{i}",)) for i in range(claimers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    winners = [c for c in won if c is not None]
    assert len(won) == claimers and len(winners) == 1, won
    row = work_token(eng, inst.id)
    assert row.state is TokenState.EXECUTING and row.attempt == 1
    assert row.lease_owner == winners[0].token.lease_owner
    executing = [e for e in eng.history(inst.id) if e.type == "token_executing"]
    assert len(executing) == 1 and executing[0].payload["worker"] == row.lease_owner


def test_two_claimers_of_one_token_exactly_one_wins(eng: Engine) -> None:
    for _ in range(20):
        _claim_race(eng, claimers=8)


def test_the_transition_table_rejects_everything_else() -> None:
    table = TRANSITIONS[TokenState]
    illegal = [(a, b) for a in TokenState for b in TokenState if b not in table[a]]
    assert (TokenState.COMPLETED, TokenState.READY) in illegal
    assert (TokenState.WAITING, TokenState.EXECUTING) in illegal
    for current, target in illegal:
        with pytest.raises(IllegalTransition):
            check_transition("t", current, target)
    for current, targets in table.items():
        for target in targets:
            check_transition("t", current, target)


def test_an_illegal_transition_leaves_every_row_as_it_was(eng: Engine) -> None:
    inst = eng.start("leases")
    assert eng.run_token(work_token(eng, inst.id).id) == 1
    (review,) = [x for x in eng.get_instance(inst.id).tokens if x.node_id == "review"]
    assert review.state is TokenState.WAITING
    before = dump(eng)

    core = eng.core
    with pytest.raises(IllegalTransition), unit_of_work(core) as unit:
        work = unit.work(inst.id)
        # Legal changes first, written to the database inside the transaction ...
        work.merge_variables({"half": "applied"})
        unit.walker(work).leave(work.token(review.id))
        unit.walker(work).run()
        unit.flush()
        assert unit.conn.execute(text("select count(*) from history")).scalar_one() > len(
            before["history"]
        )
        # ... then a transition the table forbids: the review token just completed.
        assert work.token(review.id).state is TokenState.COMPLETED
        work.transition(review.id, TokenState.READY)

    assert dump(eng) == before
    with pytest.raises(IllegalTransition), unit_of_work(core) as unit:  # Waiting -> Executing
        work = unit.work(inst.id)
        work.transition(review.id, TokenState.EXECUTING)
    assert dump(eng) == before


def test_a_second_reclaimer_with_a_stale_scan_leaves_a_live_attempt_2_alone(
    eng: Engine,
) -> None:
    """Two beats reclaim at once. Both scan and find attempt 1's lease expired; the first
    takes it back, and a worker claims attempt 2 before the second gets the instance
    lock. Under the lock the second must see attempt 2's live lease and do nothing: the
    scan is a hint, the re-check under the lock decides."""
    inst = eng.start("leases")
    tok = work_token(eng, inst.id)
    now = utcnow()
    assert claim_one(eng.core, tok.id, "worker-a", now) is not None
    at = now + LEASE + timedelta(seconds=1)
    with eng.db.connect() as conn:  # both reclaimers' scans, before either acts
        first_scan = token_store.expired_leases(conn, at, 100)
        second_scan = token_store.expired_leases(conn, at, 100)
    assert first_scan == second_scan == [(inst.id, tok.id)]

    assert [take_back(eng.core, i, t, at, cause="lease_expired") for i, t in first_scan] == [True]
    attempt_2 = claim_one(eng.core, tok.id, "worker-b", at)
    assert attempt_2 is not None and attempt_2.token.attempt == 2
    before = dump(eng)

    assert [take_back(eng.core, i, t, at, cause="lease_expired") for i, t in second_scan] == [False]
    assert dump(eng) == before
    live = work_token(eng, inst.id)
    assert live.state is TokenState.EXECUTING and live.lease_owner == "worker-b"
    assert live.attempt == 2
    assert [e.payload["attempt"] for e in eng.history(inst.id) if e.type == "lease_lost"] == [1]
    # and worker-b's finish is applied
    assert finish_one(eng.core, attempt_2, Outcome(variables={"x": 2}), "worker-b", at) == []
    assert eng.get_instance(inst.id).variables == {"x": 2}


def test_two_reclaimers_racing_take_back_an_expired_lease_once(eng: Engine) -> None:
    """Real threads: two reclaimers at once, each with its own scan, ten times over."""
    for _ in range(10):
        inst = eng.start("leases")
        tok = work_token(eng, inst.id)
        now = utcnow()
        assert claim_one(eng.core, tok.id, "worker-a", now) is not None
        at = now + LEASE + timedelta(seconds=1)
        counts: list[int] = []
        barrier = threading.Barrier(2)

        def reclaim(barrier: threading.Barrier, counts: list[int], at: datetime) -> None:
            barrier.wait()
            counts.append(eng.reclaim_expired_leases(now=at))

        threads = [threading.Thread(target=reclaim, args=(barrier, counts, at)) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert sorted(counts) == [0, 1]
        lost = [e for e in eng.history(inst.id) if e.type == "lease_lost"]
        assert len(lost) == 1
        assert work_token(eng, inst.id).state is TokenState.READY
