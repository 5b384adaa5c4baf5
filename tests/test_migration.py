"""Process instance migration (issue 22, items 3 and 4): instances move to another
version of their process with every wait they hold; a dry run tries a plan first, an
undo moves them back."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.engine.migration import MigrationError
from bpm.engine.migration_plan import MigrationInstruction, MigrationPlan, MigrationPlanError
from bpm.errors import InvalidOperation, MessageCorrelationError, NotFound
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import InstanceState, TimerState
from bpm.store.migration import InstanceSelection
from bpm.store.operation_log import OperationLogQuery
from tests.engine_helpers import QueueDispatcher, table_dump
from tests.scopes_helpers import T0, engine_on, live_nodes, open_subscriptions, open_tasks, task_of


@pytest.fixture
def both(database_url: str) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(database_url)
    eng.upgrade()
    yield eng, q
    eng.close()


def order(
    *,
    wait: str = "PT1H",
    message: str = "paid",
    review: bool = True,
    audit: bool = False,
    reminder: bool = False,
) -> Any:
    """Four branches between a fork and a join: a user task, a timer, an external task
    with a boundary timer, a message wait; ``audit`` adds a user task after the join,
    ``reminder`` a message boundary event on the external task."""
    p = Process("order").start("s").parallel("fork").parallel("join").end("e")
    if review:
        p = p.user_task("review").sequence("fork", "review", "join")
    else:
        p = p.flow("fork", "join")
    p = (
        p.timer("wait", duration=wait)
        .service_task("charge", topic="pay")
        .boundary_timer("late", "charge", duration="PT2H")
        .end("too_late")
        .receive_message("paid", message)
        .sequence("s", "fork")
        .sequence("fork", "wait", "join")
        .sequence("fork", "charge", "join")
        .sequence("late", "too_late")
        .sequence("fork", "paid", "join")
    )
    if reminder:
        p = p.boundary_message("nudge", "charge", "nudge").end("nudged").sequence("nudge", "nudged")
    if audit:
        return p.user_task("audit").sequence("join", "audit", "e")
    return p.sequence("join", "e")


def pending_timers(engine: Engine, instance_id: str) -> dict[str, Any]:
    from sqlalchemy import select

    from bpm.store.tables import timer

    with engine.db.connect() as conn:
        rows = conn.execute(
            select(timer.c.node_id, timer.c.fire_at, timer.c.id).where(
                timer.c.instance_id == instance_id, timer.c.state == TimerState.PENDING.value
            )
        )
        return {r.node_id: (r.fire_at, r.id) for r in rows}


def test_everything_an_instance_waits_for_moves_and_works_on_the_new_version(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    inst = engine.start("order", now=T0)
    (task,) = engine.fetch_and_lock(FetchRequest("w1", 1, (TopicRequest("pay", 600_000),)), now=T0)
    tokens_before = {t.id: t.node_id for t in engine.get_instance(inst.id).tokens}
    timers_before = pending_timers(engine, inst.id)
    v2 = engine.deploy(order(wait="PT3H", message="paid2", audit=True, reminder=True))
    assert v2.version == 2
    plan = engine.migration.generate(v1.id, v2.id, update_event_triggers=True)
    assert {(i.source, i.target) for i in plan.instructions} >= {
        ("review", "review"),
        ("wait", "wait"),
        ("charge", "charge"),
        ("late", "late"),
        ("paid", "paid"),
        ("join", "join"),
    }
    assert all(i.source != "audit" for i in plan.instructions)  # only in v2
    at = T0 + timedelta(minutes=10)
    result = engine.migration.execute(plan, [inst.id], by="alice", annotation="v2 rollout", now=at)
    after = engine.get_instance(inst.id)
    assert after.definition_id == v2.id
    # same tokens (ids), same places
    assert {t.id: t.node_id for t in after.tokens if t.id in tokens_before} == tokens_before
    timers_after = pending_timers(engine, inst.id)
    # re-planned from the target's definition at the migration's time (updateEventTrigger)
    assert timers_after["wait"][0] == at + timedelta(hours=3)
    assert timers_after["wait"][1] == timers_before["wait"][1]  # the same timer row
    assert timers_after["late"][0] == at + timedelta(hours=2)
    # the boundary message event v2 added is armed; the wait has the new message name
    assert open_subscriptions(engine, inst.id) == ["nudge", "paid"]
    # the external worker completes with the lock it got before the migration
    engine.complete_external_task(task.id, "w1", {"charged": True}, now=at)
    with pytest.raises(MessageCorrelationError):  # the old name no longer matches
        engine.correlate("paid", now=at)
    assert len(engine.correlate("paid2", now=at)) == 1
    engine.complete_user_task(task_of(engine, inst.id, "review"), now=at)
    # the timer fires once, at its new time
    assert engine.fire_due_timers(now=at + timedelta(hours=2, minutes=59)) == 0
    assert engine.fire_due_timers(now=at + timedelta(hours=3)) == 1
    assert engine.fire_due_timers(now=at + timedelta(hours=4)) == 0
    # the join fires on the new version: v2's audit task
    assert open_tasks(engine, inst.id) == ["audit"]
    engine.complete_user_task(task_of(engine, inst.id, "audit"), now=at)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    # who did it: the history and the operation log
    (event,) = [e for e in engine.history(inst.id) if e.type == "instance_migrated"]
    assert event.payload["by"] == "alice" and event.payload["annotation"] == "v2 rollout"
    assert event.payload["source"] == v1.id and event.payload["target"] == v2.id
    log = engine.operation_log(OperationLogQuery(operation_type="Migrate"))
    assert {e.operation_id for e in log} == {result.operation_id}
    per_instance = [e for e in log if e.instance_id == inst.id]
    assert [(e.property, e.org_value, e.new_value) for e in per_instance] == [
        ("processDefinitionId", v1.id, v2.id)
    ]
    assert {e.user_id for e in log} == {"alice"} and {e.annotation for e in log} == {"v2 rollout"}


def test_without_update_event_trigger_timers_and_waits_keep_their_plan(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    inst = engine.start("order", now=T0)
    before = pending_timers(engine, inst.id)
    v2 = engine.deploy(order(wait="PT3H", message="paid2"))
    plan = engine.migration.generate(v1.id, v2.id)
    engine.migration.execute(plan, [inst.id], now=T0 + timedelta(minutes=5))
    assert pending_timers(engine, inst.id) == before
    assert len(engine.correlate("paid", now=T0)) == 1


def test_an_activity_the_target_removed_with_a_token_on_it_stops_the_instance(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    waiting = engine.start("order", now=T0)
    done = engine.start("order", now=T0)
    engine.complete_user_task(task_of(engine, done.id, "review"), now=T0)
    v2 = engine.deploy(order(review=False))
    plan = engine.migration.generate(v1.id, v2.id)
    before = table_dump(engine)
    with pytest.raises(MigrationError) as caught:
        engine.migration.execute(plan, [done.id, waiting.id], now=T0)
    assert table_dump(engine) == before  # the instance that could move did not either
    (report,) = caught.value.reports
    assert report.instance_id == waiting.id and not report.can_migrate
    assert "'review'" in report.failures[0] and "does not exist in the target" in report.failures[0]
    # the other one alone moves
    engine.migration.execute(plan, [done.id], now=T0)
    assert engine.get_instance(done.id).definition_id == v2.id


@pytest.mark.parametrize(
    "instructions, words",
    [
        ((MigrationInstruction("nope", "review"),), "Source activity 'nope' does not exist"),
        ((MigrationInstruction("review", "nope"),), "Target activity 'nope' does not exist"),
        ((MigrationInstruction("review", "wait"),), "incompatible types"),
        (
            (MigrationInstruction("review", "review"), MigrationInstruction("charge", "review")),
            "multiple mappings for target activity id 'review'",
        ),
        ((MigrationInstruction("review", "review", True),), "no event trigger"),
        ((MigrationInstruction("late", "late"),), "'charge' is not mapped"),
    ],
)
def test_a_bad_instruction_is_reported_and_changes_nothing(
    both: tuple[Engine, QueueDispatcher],
    instructions: tuple[MigrationInstruction, ...],
    words: str,
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    inst = engine.start("order", now=T0)
    v2 = engine.deploy(order(audit=True))
    plan = MigrationPlan(v1.id, v2.id, instructions)
    report = engine.migration.validate(plan)
    assert not report.ok
    assert any(words in f for r in report.instruction_reports for f in r.failures), report
    before = table_dump(engine)
    with pytest.raises(MigrationPlanError) as caught:
        engine.migration.execute(plan, [inst.id], now=T0)
    assert words in str(caught.value)
    assert table_dump(engine) == before


def test_wrong_definitions_are_refused_and_change_nothing(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    inst = engine.start("order", now=T0)
    v2 = engine.deploy(order(audit=True))
    other = engine.deploy(
        Process("other").start("s").user_task("review").end("e").sequence("s", "review", "e")
    )
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="versions of different processes"):
        engine.migration.execute(MigrationPlan(v1.id, other.id, ()), [inst.id], now=T0)
    with pytest.raises(InvalidOperation, match="does not exist"):
        engine.migration.generate(v1.id, "order:9:nope")
    # the instance is not on the plan's source
    plan = engine.migration.generate(v2.id, v1.id)
    with pytest.raises(MigrationError, match="not the plan's source"):
        engine.migration.execute(plan, [inst.id], now=T0)
    with pytest.raises(MigrationError, match="does not exist"):
        engine.migration.execute(plan, ["no-such-instance"], now=T0)
    with pytest.raises(InvalidOperation, match="no process instance chosen"):
        engine.migration.execute(plan, [], now=T0)
    assert table_dump(engine) == before


def test_the_dry_run_reports_each_instance_and_changes_nothing(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    waiting = engine.start("order", now=T0)
    done = engine.start("order", now=T0)
    engine.complete_user_task(task_of(engine, done.id, "review"), now=T0)
    v2 = engine.deploy(order(review=False, reminder=True))
    plan = engine.migration.generate(v1.id, v2.id)
    before = table_dump(engine)
    report, instances = engine.migration.dry_run(
        plan, query=InstanceSelection(definition_id=v1.id), now=T0
    )
    assert table_dump(engine) == before
    assert report.ok
    by_id = {r.instance_id: r for r in instances}
    assert set(by_id) == {waiting.id, done.id}
    assert not by_id[waiting.id].can_migrate and "'review'" in by_id[waiting.id].failures[0]
    ok = by_id[done.id]
    assert ok.can_migrate and ok.failures == ()
    assert set(ok.activities) == {"wait", "charge", "paid", "join"}
    kinds = {(w.activity_id, w.kind) for w in ok.waits}
    assert kinds >= {("wait", "timer"), ("charge", "external_task"), ("paid", "message")}


def test_undo_moves_back_the_instances_that_did_not_advance(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    still = engine.start("order", now=T0)
    moving = engine.start("order", now=T0)
    timers_before = pending_timers(engine, still.id)
    v2 = engine.deploy(order(wait="PT5H", reminder=True))
    plan = engine.migration.generate(v1.id, v2.id, update_event_triggers=True)
    done = engine.migration.execute(plan, [still.id, moving.id], now=T0 + timedelta(minutes=1))
    assert pending_timers(engine, still.id)["wait"][0] != timers_before["wait"][0]
    engine.complete_user_task(task_of(engine, moving.id, "review"), now=T0)
    with pytest.raises(NotFound):
        engine.migration.undo("no-such-migration")
    back = engine.migration.undo(done.operation_id, by="bob", now=T0 + timedelta(minutes=2))
    assert back.undone == (still.id,)
    assert set(back.refused) == {moving.id} and "advanced" in back.refused[moving.id]
    assert engine.get_instance(still.id).definition_id == v1.id
    assert engine.get_instance(moving.id).definition_id == v2.id
    # the old due times come back; the boundary event v2 added is gone
    assert pending_timers(engine, still.id) == timers_before
    assert open_subscriptions(engine, still.id) == ["paid"]
    undo_log = engine.operation_log(OperationLogQuery(user_id="bob"))
    assert {e.operation_id for e in undo_log} == {back.operation_id}
    assert [e.org_value for e in undo_log if e.instance_id == still.id] == [v2.id]
    # an undone instance is not undone twice
    again = engine.migration.undo(done.operation_id, now=T0 + timedelta(minutes=3))
    assert again.undone == () and still.id in again.refused


def test_sub_processes_and_multi_instance_bodies_move_with_their_scopes(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both

    def model(extra: bool) -> Any:
        def inside(b: Any) -> Any:
            b = b.start("is").user_task("look", for_each="items", as_="item").end("ie")
            b = b.sequence("is", "look", "ie")
            if extra:
                b = (
                    b.boundary_timer("slow", "look", duration="PT1H")
                    .end("se")
                    .sequence("slow", "se")
                )
            return b

        return (
            Process("nested")
            .start("s")
            .sub_process("sub", inside)
            .user_task("after")
            .end("e")
            .sequence("s", "sub", "after", "e")
        )

    v1 = engine.deploy(model(False))
    inst = engine.start("nested", {"items": [1, 2, 3]}, now=T0)
    assert open_tasks(engine, inst.id) == ["look", "look", "look"]
    engine.complete_user_task(task_of(engine, inst.id, "look"), now=T0)
    v2 = engine.deploy(model(True))
    plan = engine.migration.generate(v1.id, v2.id)
    assert {i.source for i in plan.instructions} >= {"sub", "look"}
    engine.migration.execute(plan, [inst.id], now=T0)
    assert engine.get_instance(inst.id).definition_id == v2.id
    # the boundary timer v2 adds is armed once, on the body
    assert list(pending_timers(engine, inst.id)) == ["slow"]
    for _ in range(2):
        engine.complete_user_task(task_of(engine, inst.id, "look"), now=T0)
    assert open_tasks(engine, inst.id) == ["after"]
    assert pending_timers(engine, inst.id) == {}
    assert live_nodes(engine, inst.id) == ["after"]


def test_a_migration_batch_moves_each_instance_once_and_reports_those_it_cannot(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    v1 = engine.deploy(order())
    ids = [engine.start("order", now=T0).id for _ in range(5)]
    stuck = ids[2]
    for iid in ids:
        if iid != stuck:
            engine.complete_user_task(task_of(engine, iid, "review"), now=T0)
    v2 = engine.deploy(order(review=False))
    plan = engine.migration.generate(v1.id, v2.id)
    bad = MigrationPlan(v1.id, v2.id, (MigrationInstruction("nope", "charge"),))
    before = table_dump(engine)
    with pytest.raises(MigrationPlanError):
        engine.migration.execute_async(bad, ids, now=T0)
    assert table_dump(engine) == before  # no batch
    batch = engine.migration.execute_async(
        plan, query=InstanceSelection(definition_id=v1.id), by="ops", chunk_size=2, now=T0
    )
    assert batch.type == "instance-migration"
    assert engine.batches.run_ready(now=T0) == 4
    assert engine.batches.run_ready(now=T0) == 0  # every chunk once
    (failure,) = engine.batches.failures(batch.id)
    assert failure.item == stuck and "'review'" in failure.reason
    moved = [i for i in ids if engine.get_instance(i).definition_id == v2.id]
    assert sorted(moved) == sorted(i for i in ids if i != stuck)
    for iid in moved:
        events = [e for e in engine.history(iid) if e.type == "instance_migrated"]
        assert len(events) == 1 and events[0].payload["operation"] == batch.id
    log = engine.operation_log(OperationLogQuery(operation_type="Migrate", user_id="ops"))
    assert sorted(e.instance_id for e in log if e.instance_id) == sorted(moved)
    # the batch id undoes the whole batch
    back = engine.migration.undo(batch.id, now=T0)
    assert sorted(back.undone) == sorted(moved)
    assert all(engine.get_instance(i).definition_id == v1.id for i in ids)


def test_event_sub_processes_and_the_compensation_log_move(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    """v1: book (user, compensated by cancel_booking) -> pay (user) -> compensate -> e, an
    event sub-process started by message 'abort'; v2 adds one started by message 'audit'
    and renames the handler: the completed booking is compensated by v2's handler."""
    engine, _ = both

    def model(v2: bool) -> Any:
        handler = "undo_booking" if v2 else "cancel_booking"
        p = (
            Process("trip")
            .start("s")
            .user_task("book")
            .boundary_compensation("comp", "book", handler=handler)
            .user_task(handler, for_compensation=True)
            .user_task("pay")
            .compensate("undo")
            .user_task("after")
            .end("e")
            .sequence("s", "book", "pay", "undo", "after", "e")
            .event_sub_process(
                "aborting",
                lambda b: b.message_start("abort", "abort").end("ae").sequence("abort", "ae"),
            )
        )
        if v2:
            p = p.event_sub_process(
                "auditing",
                lambda b: (
                    b.message_start("audit", "audit", interrupting=False)
                    .user_task("look")
                    .end("le")
                    .sequence("audit", "look", "le")
                ),
            )
        return p

    v1 = engine.deploy(model(False))
    inst = engine.start("trip", now=T0)
    engine.complete_user_task(task_of(engine, inst.id, "book"), now=T0)
    assert open_subscriptions(engine, inst.id) == ["abort"]
    v2 = engine.deploy(model(True))
    plan = engine.migration.generate(v1.id, v2.id)
    assert ("cancel_booking", "cancel_booking") not in {
        (i.source, i.target) for i in plan.instructions
    }
    engine.migration.execute(plan, [inst.id], now=T0)
    # the listener of v1 moved, v2's new event sub-process is armed
    assert open_subscriptions(engine, inst.id) == ["abort", "audit"]
    assert len(engine.correlate("audit", now=T0)) == 1
    assert open_tasks(engine, inst.id) == ["look", "pay"]
    # compensation runs v2's handler for the booking completed on v1
    engine.complete_user_task(task_of(engine, inst.id, "pay"), now=T0)
    assert open_tasks(engine, inst.id) == ["look", "undo_booking"]
