"""The cockpit's reads (``engine.cockpit``) and the two operator operations it added:
fire a timer now, set variables. On both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine, EngineConfig, InstanceState, InvalidOperation, NotFound, RetryPolicy
from bpm.builder import Process
from bpm.engine.cockpit import InstanceFilter
from bpm.errors import VariableError
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.states import TokenState
from tests.engine_helpers import QueueDispatcher, drain, make_engine, table_dump

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def setup(url: str, broken: dict[str, bool]) -> tuple[Engine, QueueDispatcher]:
    def charge(ctx: TaskContext) -> dict[str, Any]:
        if broken["charge"]:
            raise RuntimeError("card declined")
        return {"charged": True}

    reg = HandlerRegistry()
    reg.register("charge", charge, retry=RetryPolicy.none())
    reg.register("ok", lambda ctx: {"ok": True})
    engine, q = make_engine(url, reg, EngineConfig(max_variable_bytes=1000))
    engine.deploy(
        Process("pay", name="Payment")
        .start("start")
        .service_task("charge", handler="charge")
        .timer("cool_off", duration="PT1H")
        .user_task("approve")
        .end("end")
        .sequence("start", "charge", "cool_off", "approve", "end")
        .build()
    )
    engine.deploy(
        Process("ping").start("s").service_task("t", handler="ok").end("e")
        .sequence("s", "t", "e").build()
    )  # fmt: skip
    return engine, q


def test_counts_pages_and_filters(database_url: str) -> None:
    broken = {"charge": True}
    engine, q = setup(database_url, broken)
    failing = [
        engine.start("pay", business_key=f"p-{i}", now=T0 + timedelta(minutes=i)) for i in range(3)
    ]
    drain(engine, q)
    broken["charge"] = False
    waiting = [
        engine.start("pay", business_key=f"w-{i}", now=T0 + timedelta(minutes=10 + i))
        for i in range(2)
    ]
    done = [engine.start("ping", now=T0 + timedelta(minutes=20 + i)) for i in range(4)]
    drain(engine, q)
    engine.suspend(waiting[0].id)

    summaries = {s.definition.key: s for s in engine.cockpit.definitions()}
    assert summaries["pay"].counts == {"active": 4, "suspended": 1}
    assert summaries["pay"].open_incidents == 3
    assert summaries["ping"].counts == {"completed": 4}
    one, by_node = engine.cockpit.definition_summary(summaries["pay"].definition.id)
    assert one.open_incidents == 3 and one.counts == summaries["pay"].counts
    assert [(g.node_id, g.count) for g in by_node] == [("charge", 3)]

    (group,) = engine.cockpit.incident_groups()
    assert (group.definition_key, group.node_id, group.count) == ("pay", "charge", 3)

    cockpit = engine.cockpit
    everything = cockpit.instances(InstanceFilter(), limit=100)
    assert len(everything.instances) == 9 and everything.next_cursor is None
    created = [i.created_at for i in everything.instances]
    assert created == sorted(created, reverse=True)  # newest first

    # paging with the cursor covers every instance once, in order
    seen: list[str] = []
    page = cockpit.instances(InstanceFilter(), limit=4)
    while True:
        seen += [i.id for i in page.instances]
        if page.next_cursor is None:
            break
        page = cockpit.instances(InstanceFilter(), limit=4, cursor=page.next_cursor)
    assert seen == [i.id for i in everything.instances]

    def ids(f: InstanceFilter) -> set[str]:
        return {i.id for i in cockpit.instances(f, limit=100).instances}

    assert ids(InstanceFilter(definition_key="ping")) == {i.id for i in done}
    assert ids(InstanceFilter(has_incident=True)) == {i.id for i in failing}
    assert ids(InstanceFilter(has_incident=False)) == {i.id for i in waiting + done}
    assert ids(InstanceFilter(states=(InstanceState.SUSPENDED,))) == {waiting[0].id}
    assert ids(InstanceFilter(business_key="w-1")) == {waiting[1].id}
    assert ids(InstanceFilter(instance_id=done[2].id)) == {done[2].id}
    between = InstanceFilter(
        started_after=T0 + timedelta(minutes=1), started_before=T0 + timedelta(minutes=11)
    )
    assert ids(between) == {failing[1].id, failing[2].id, waiting[0].id}
    pay_v1 = summaries["pay"].definition.id
    assert ids(InstanceFilter(definition_id=pay_v1, states=(InstanceState.ACTIVE,))) == {
        i.id for i in failing
    } | {waiting[1].id}
    assert ids(InstanceFilter(definition_key="nope")) == set()
    assert page.open_incidents == {} or all(v >= 1 for v in page.open_incidents.values())
    assert cockpit.instances(InstanceFilter(has_incident=True)).open_incidents == {
        i.id: 1 for i in failing
    }


def test_instance_view_trail_and_work(database_url: str) -> None:
    broken = {"charge": False}
    engine, q = setup(database_url, broken)
    inst = engine.start("pay", business_key="v", now=T0)
    drain(engine, q)
    view = engine.cockpit.instance(inst.id)
    assert view.definition is not None and view.definition.key == "pay"
    (timer,) = view.timers
    assert timer.node_id == "cool_off"  # due an hour after the step ran (the real clock)
    assert view.user_tasks == () and view.incidents == () and view.external_tasks == ()
    assert view.parent_id is None and view.child_ids == ()

    trail = engine.cockpit.trail(inst.id)
    assert [e.seq for e in trail] == [e.seq for e in engine.history(inst.id)]
    middle = trail[len(trail) // 2].seq
    assert [e.seq for e in engine.cockpit.trail(inst.id, after_seq=middle)] == [
        e.seq for e in trail if e.seq is not None and middle is not None and e.seq > middle
    ]
    assert len(engine.cockpit.trail(inst.id, limit=2)) == 2

    work = engine.cockpit.work(now=timer.fire_at - timedelta(seconds=30))
    assert work.timers_due_next_minute == 1 and [t.id for t in work.timers_due] == [timer.id]
    assert work.ready_by_node == () and work.workers == ()
    assert engine.cockpit.work(now=timer.fire_at - timedelta(minutes=2)).timers_due_next_minute == 0

    with pytest.raises(NotFound):
        engine.cockpit.instance("no-such-instance")
    with pytest.raises(NotFound):
        engine.cockpit.trail("no-such-instance")
    with pytest.raises(NotFound):
        engine.cockpit.definition("pay:9:nope")


def test_work_shows_ready_tokens_and_lease_owners(pg_database_url: str) -> None:
    engine, _q = setup(pg_database_url, {"charge": False})
    engine.start("ping", now=T0)
    engine.start("ping", now=T0)
    work = engine.cockpit.work(now=T0)
    assert [(x.node_id, x.count) for x in work.ready_by_node] == [("t", 2)]
    assert work.workers == ()


def test_fire_timer_now_makes_it_due_and_the_poller_fires_it(database_url: str) -> None:
    engine, q = setup(database_url, {"charge": False})
    inst = engine.start("pay", now=T0)
    drain(engine, q)
    (timer,) = engine.timers(inst.id)
    soon = timer.fire_at - timedelta(minutes=59)
    assert engine.fire_due_timers(now=soon) == 0

    moved = engine.fire_timer_now(timer.id, by="ops", now=soon)
    assert moved.fire_at == soon and moved.state == "pending"
    (event,) = [e for e in engine.history(inst.id) if e.type == "timer_due_now"]
    assert event.payload["timer"] == timer.id and event.payload["by"] == "ops"
    assert event.node_id == "cool_off"

    assert engine.fire_due_timers(now=soon) == 1
    view = engine.cockpit.instance(inst.id)
    assert [t.node_id for t in view.user_tasks] == ["approve"]

    # a fired timer cannot be fired again; nothing changes
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="not pending"):
        engine.fire_timer_now(timer.id)
    with pytest.raises(NotFound):
        engine.fire_timer_now("no-such-timer")
    assert table_dump(engine) == before


def test_fire_timer_now_refuses_a_suspended_instance(database_url: str) -> None:
    engine, q = setup(database_url, {"charge": False})
    inst = engine.start("pay", now=T0)
    drain(engine, q)
    engine.suspend(inst.id)
    (timer,) = engine.timers(inst.id)
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="suspended"):
        engine.fire_timer_now(timer.id)
    assert table_dump(engine) == before


def test_set_variables_merges_and_records_who(database_url: str) -> None:
    engine, q = setup(database_url, {"charge": False})
    inst = engine.start("pay", {"amount": 10, "keep": "x"}, now=T0)
    drain(engine, q)
    after = engine.set_variables(inst.id, {"amount": 99, "note": {"a": [1]}}, by="ops")
    assert after.variables == {"amount": 99, "keep": "x", "note": {"a": [1]}, "charged": True}
    assert engine.get_instance(inst.id).variables == after.variables
    last = engine.history(inst.id)[-1]
    assert last.type == "variables_updated"
    assert last.payload == {"names": ["amount", "note"], "by": "ops"}


@pytest.mark.parametrize(
    ("variables", "error", "message"),
    [
        ({}, VariableError, "at least one"),
        ({"big": "x" * 2000}, VariableError, "over the limit"),
        ({"": 1}, VariableError, "non-empty"),
        ({f"v{i}": i for i in range(101)}, VariableError, "at most 100"),
    ],
)
def test_set_variables_bad_input_changes_nothing(
    database_url: str, variables: dict[str, Any], error: type[Exception], message: str
) -> None:
    engine, q = setup(database_url, {"charge": False})
    inst = engine.start("pay", {"amount": 10}, now=T0)
    drain(engine, q)
    before = table_dump(engine)
    with pytest.raises(error, match=message):
        engine.set_variables(inst.id, variables)
    assert table_dump(engine) == before


def test_set_variables_refuses_ended_and_unknown_instances(database_url: str) -> None:
    engine, q = setup(database_url, {"charge": False})
    inst = engine.start("ping", now=T0)
    drain(engine, q)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="completed"):
        engine.set_variables(inst.id, {"x": 1})
    with pytest.raises(NotFound):
        engine.set_variables("no-such-instance", {"x": 1})
    assert table_dump(engine) == before
    assert all(t.state is TokenState.COMPLETED for t in engine.get_instance(inst.id).tokens)
