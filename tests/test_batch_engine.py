"""Batches in the engine (issue 22, item 5): chunks claimed with a lease, one transaction
each, failures per item, suspend/resume/delete; on PostgreSQL and SQLite."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from bpm import Engine, EngineConfig, InstanceState
from bpm.builder import Process
from bpm.engine import batch_types
from bpm.engine.batch_types import BatchItem, BatchType
from bpm.engine.modification import Cancel, StartBefore
from bpm.errors import InvalidOperation, NotFound
from bpm.local import LocalLoop
from bpm.store import batches as store
from bpm.store.batches import BatchQuery
from bpm.store.operation_log import OperationLogQuery
from tests.engine_helpers import make_engine, table_dump

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


class ChunkRecorder:
    """A dispatcher that also takes batch chunks (as the Celery publisher does)."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.tokens: list[str] = []

    def dispatch(self, token_ids: Sequence[str]) -> None:
        self.tokens.extend(token_ids)

    def dispatch_chunks(self, chunk_ids: Sequence[str]) -> None:
        self.chunks.extend(chunk_ids)


def two_tasks() -> object:
    return (
        Process("two").start("s").user_task("a").user_task("b").end("e")
        .sequence("s", "a", "b", "e").build()
    )  # fmt: skip


def waiting(engine: Engine, n: int) -> list[str]:
    engine.deploy(two_tasks())
    return [engine.start("two", now=T0).id for _ in range(n)]


def test_a_batch_applies_every_item_once_in_chunks(database_url: str) -> None:
    engine, _ = make_engine(database_url)
    ids = waiting(engine, 7)
    batch = engine.batches.suspend_instances(ids, chunk_size=3, by="alice", now=T0)
    assert (batch.total_items, batch.total_jobs, batch.chunk_size) == (7, 3, 3)
    assert batch.state == "active" and batch.completed_jobs == 0
    assert all(engine.get_instance(i).state is InstanceState.ACTIVE for i in ids)

    assert engine.batches.run_ready(now=T0) == 7
    assert all(engine.get_instance(i).state is InstanceState.SUSPENDED for i in ids)
    done = engine.batches.get(batch.id)
    assert (done.state, done.completed_jobs, done.completed_items, done.ended_at) == (
        "completed", 3, 7, T0,
    )  # fmt: skip
    # the running batches no longer list it; the history does
    assert engine.batches.query() == []
    assert [b.id for b in engine.batches.query(BatchQuery(ended=True))] == [batch.id]
    # every chunk is done once: running them again applies nothing
    for chunk in engine.batches.chunks(batch.id):
        assert (chunk.state, chunk.attempts) == ("done", 1)
        assert engine.batches.run_chunk(chunk.id, now=T0) == 0


def test_a_failed_item_is_reported_with_its_reason_and_the_others_apply(
    database_url: str,
) -> None:
    engine, _ = make_engine(database_url)
    ids = waiting(engine, 3)
    engine.terminate(ids[1], now=T0)
    batch = engine.batches.modify(
        [*ids, "no-such-instance"], [StartBefore("b"), Cancel(activity_id="a")],
        chunk_size=10, by="bob", annotation="skip a", now=T0,
    )  # fmt: skip
    assert engine.batches.run_ready(now=T0) == 2
    failures = {f.item: f.reason for f in engine.batches.failures(batch.id)}
    assert set(failures) == {ids[1], "no-such-instance"}
    assert "terminated" in failures[ids[1]]
    assert "does not exist" in failures["no-such-instance"]
    for iid in (ids[0], ids[2]):
        assert [t.node_id for t in engine.user_tasks(iid)] == ["b"]
    done = engine.batches.get(batch.id)
    assert (done.completed_items, done.failed_items, done.failed_jobs) == (2, 2, 1)
    # each modification is in the operation log with the batch's author and id
    entries = engine.operation_log(OperationLogQuery(batch_id=batch.id))
    modified = [e.instance_id for e in entries if e.instance_id is not None]
    assert sorted(modified) == sorted([ids[0], ids[2]])
    assert {e.user_id for e in entries} == {"bob"}
    assert {e.annotation for e in entries} == {"skip a"}


def test_a_chunk_taken_over_after_its_lease_expired_commits_only_once(
    database_url: str,
) -> None:
    cfg = EngineConfig(batch_lease=timedelta(seconds=10))
    engine, _ = make_engine(database_url, config=cfg)
    ids = waiting(engine, 2)
    batch = engine.batches.set_variables(ids, {"x": 1}, chunk_size=5, now=T0)
    (chunk,) = engine.batches.chunks(batch.id)
    # a first worker claims the chunk, then dies before it commits anything
    with engine.db.begin() as conn:
        assert store.claim(conn, chunk.id, "dead", T0, cfg.batch_lease) is not None
    # a duplicate message while the lease lives: nothing
    assert engine.batches.run_chunk(chunk.id, worker_id="w2", now=T0 + timedelta(seconds=5)) == 0
    # after the lease expired another worker takes it over
    later = T0 + timedelta(seconds=11)
    assert engine.batches.run_chunk(chunk.id, worker_id="w2", now=later) == 2
    (after,) = engine.batches.chunks(batch.id)
    assert (after.state, after.attempts, after.lease_owner) == ("done", 2, "w2")
    # the dead worker's late finish matches no row
    with engine.db.begin() as conn:
        assert not store.finish(conn, chunk.id, "dead", 1, later, {})
    trails = [e for i in ids for e in engine.history(i) if e.type == "variables_updated"]
    assert len(trails) == 2


def test_suspend_resume_and_delete_a_batch(database_url: str) -> None:
    rec = ChunkRecorder()
    engine = Engine(database_url, dispatcher=rec)
    try:
        ids = waiting(engine, 4)
        batch = engine.batches.delete_instances(ids, chunk_size=2, reason="cleanup", now=T0)
        assert len(rec.chunks) == 2  # published after the commit
        engine.batches.suspend(batch.id, by="carol", now=T0)
        assert engine.batches.get(batch.id).state == "suspended"
        assert engine.batches.run_ready(now=T0) == 0  # a suspended batch's chunks wait
        assert engine.batches.run_chunk(rec.chunks[0], now=T0) == 0
        engine.batches.resume(batch.id, by="carol", now=T0)
        assert len(rec.chunks) == 4  # published again on resume
        assert engine.batches.run_chunk(rec.chunks[0], now=T0) == 2
        engine.batches.delete(batch.id, by="carol", now=T0)
        assert engine.batches.run_chunk(rec.chunks[1], now=T0) == 0
        states = [engine.get_instance(i).state for i in ids]
        assert states.count(InstanceState.TERMINATED) == 2
        assert states.count(InstanceState.ACTIVE) == 2
        gone = engine.batches.get(batch.id)
        assert gone.state == "deleted" and gone.ended_at == T0
        with pytest.raises(NotFound):
            engine.batches.suspend(batch.id)
        engine.batches.delete_history(batch.id)
        with pytest.raises(NotFound):
            engine.batches.get(batch.id)
        types = [e.operation_type for e in engine.operation_log() if e.entity_type == "Batch"]
        assert sorted(types) == ["ActivateBatch", "Delete", "Delete", "SuspendBatch"]
    finally:
        engine.close()


def test_the_sweeper_publishes_stalled_chunks_again(database_url: str) -> None:
    rec = ChunkRecorder()
    cfg = EngineConfig(batch_redispatch_after=timedelta(seconds=10))
    engine = Engine(database_url, dispatcher=rec, config=cfg)
    try:
        ids = waiting(engine, 3)
        batch = engine.batches.suspend_instances(ids, chunk_size=1, now=T0)
        assert engine.batches.redispatch_stalled(now=T0 + timedelta(seconds=5)) == 0
        # the messages were lost: ten seconds later every chunk is published again
        assert engine.batches.redispatch_stalled(now=T0 + timedelta(seconds=11)) == 3
        assert engine.batches.redispatch_stalled(now=T0 + timedelta(seconds=12)) == 0
        assert sorted(rec.chunks[3:]) == sorted(c.id for c in engine.batches.chunks(batch.id))
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e, ids: e.batches.create("no-such-type", ids), "unknown batch type"),
        (lambda e, ids: e.batches.create("set-variables", []), "at least one item"),
        (lambda e, ids: e.batches.set_variables(ids, {}), "at least one variable"),
        (lambda e, ids: e.batches.set_variables(ids, {"x": 1}, chunk_size=0), "chunk size"),
        (lambda e, ids: e.batches.set_external_task_retries(ids, -1), "retries"),
        (lambda e, ids: e.batches.retry_jobs(ids, retries=0), "at least 1"),
        (lambda e, ids: e.batches.create("instance-modification", ids, {}), "instruction"),
        (lambda e, ids: e.batches.create("instance-update-suspension-state", ids), "suspended"),
    ],
)
def test_a_refused_batch_writes_nothing(database_url: str, call: object, message: str) -> None:
    engine, _ = make_engine(database_url)
    ids = waiting(engine, 2)
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match=message):
        call(engine, ids)  # type: ignore[operator]
    assert table_dump(engine) == before


def test_a_registered_type_runs_in_the_chunk_transaction(database_url: str) -> None:
    """The registry other modules plug into (migration registers its type the same way)."""
    seen: list[tuple[str, str | None]] = []

    def mark(item: BatchItem) -> None:
        if item.item.endswith("!"):
            raise InvalidOperation("refused by the type")
        item.engine.set_variables(item.item, {"marked": item.params["v"]}, by=item.created_by)
        seen.append((item.item, item.created_by))

    batch_types.register(BatchType("test-mark", mark, "TestMark", check=lambda p: {"v": p["v"]}))
    engine, _ = make_engine(database_url)
    ids = waiting(engine, 2)
    batch = engine.batches.create("test-mark", [*ids, "x!"], {"v": 7, "dropped": 1}, by="dan")
    assert batch.params == {"v": 7}
    assert engine.batches.run_ready() == 2
    assert sorted(seen) == sorted((i, "dan") for i in ids)
    assert all(engine.get_instance(i).variables["marked"] == 7 for i in ids)
    assert [f.reason for f in engine.batches.failures(batch.id)] == ["refused by the type"]
    assert "test-mark" in batch_types.names()


def test_the_embedded_loop_runs_batches_without_a_broker(sqlite_database_url: str) -> None:
    """One process, SQLite, no Celery: the local loop claims the chunks itself."""
    engine = Engine(sqlite_database_url)
    engine.upgrade()
    try:
        loop = LocalLoop(engine)
        ids = waiting(engine, 5)
        batch = engine.batches.set_variables(ids, {"fixed": True}, chunk_size=2)
        ticks = 0
        while engine.batches.get(batch.id).ended_at is None and ticks < 10:
            loop.tick()
            ticks += 1
        assert ticks == 3  # one chunk per tick: timers and steps keep their turn
        assert all(engine.get_instance(i).variables["fixed"] is True for i in ids)
    finally:
        engine.close()
