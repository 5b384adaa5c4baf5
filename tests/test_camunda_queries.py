"""The reads behind the Camunda REST surface, on both backends: task filters, typed
variables and their deletion, variable instances, and history (instance states, activity
instances from the token events)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bpm import Engine
from bpm.engine import TaskChanges
from bpm.engine.queries import ActivityQuery, InstanceQuery, TaskQuery, VariableQuery
from bpm.errors import InvalidOperation, NotFound, VariableError
from bpm.runtime.states import InstanceState, UserTaskState
from bpm.runtime.variable_types import Typed
from tests.camunda_models import REVIEW, STOP
from tests.engine_helpers import table_dump

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def _start(engine: Engine, n: int, **variables: object) -> str:
    inst = engine.start(
        "review",
        {"reviewers": ["ann", "bob"], **variables},
        business_key=f"o-{n}",
        now=T0 + timedelta(minutes=n),
    )
    return inst.id


def _ids(rows: list) -> list[str]:  # type: ignore[type-arg]
    return [r.task.instance_id for r in rows]


def test_task_filters_sorting_and_counts(engine: Engine) -> None:
    engine.deploy(REVIEW)
    a, b, c = (_start(engine, n) for n in range(3))
    q = engine.queries
    assert _ids(q.tasks(TaskQuery())) == [a, b, c]
    assert q.count_tasks(TaskQuery()) == 3
    assert _ids(q.tasks(TaskQuery(business_keys=("o-1",)))) == [b]
    assert _ids(q.tasks(TaskQuery(candidate_groups=("finance",)))) == [a, b, c]
    assert _ids(q.tasks(TaskQuery(candidate_user="bob"))) == [a, b, c]
    assert q.tasks(TaskQuery(candidate_user="carl")) == []
    task_b = q.tasks(TaskQuery(instance_ids=(b,)))[0].task
    engine.claim_user_task(task_b.id, "ann")
    # a candidate query leaves assigned tasks out unless told otherwise (as Camunda)
    assert _ids(q.tasks(TaskQuery(candidate_groups=("sales",)))) == [a, c]
    both = TaskQuery(candidate_groups=("sales",), include_assigned=True)
    assert _ids(q.tasks(both)) == [a, b, c]
    assert _ids(q.tasks(TaskQuery(assigned=True))) == [b]
    assert _ids(q.tasks(TaskQuery(assigned=False))) == [a, c]
    assert _ids(q.tasks(TaskQuery(name_like="%rove%"))) == [a, b, c]
    assert q.tasks(TaskQuery(name_like="Ship%")) == []
    assert q.count_tasks(TaskQuery(definition_keys=("review",), assignees=("ann",))) == 1
    assert _ids(q.tasks(TaskQuery(with_candidate_users=True), offset=1, limit=1)) == [b]
    assert _ids(q.tasks(TaskQuery(sorting=(("created", False),)))) == [c, b, a]
    assert _ids(q.tasks(TaskQuery(created_after=T0 + timedelta(seconds=30)))) == [b, c]

    changes = TaskChanges(
        name="Approve big order",
        owner="olga",
        priority=90,
        due_at=T0 + timedelta(days=1),
        assignee="ann",
    )
    engine.update_user_task(task_b.id, changes, by="test")
    row = q.task(task_b.id)
    assert (row.task.name, row.task.owner, row.task.priority) == ("Approve big order", "olga", 90)
    assert _ids(q.tasks(TaskQuery(sorting=(("priority", False),)))) == [b, a, c]
    assert _ids(q.tasks(TaskQuery(due_before=T0 + timedelta(days=2)))) == [b]
    assert _ids(q.tasks(TaskQuery(owner="olga"))) == [b]
    engine.set_user_task_assignee(task_b.id, None)
    assert q.task(task_b.id).task.assignee is None
    types = [e.type for e in engine.history(b)]
    assert "user_task_updated" in types and "user_task_assigned" in types


def test_bad_task_updates_change_nothing(engine: Engine) -> None:
    engine.deploy(REVIEW)
    inst = _start(engine, 0)
    task = engine.queries.tasks(TaskQuery(instance_ids=(inst,)))[0].task
    before = table_dump(engine)
    with pytest.raises(InvalidOperation):
        engine.update_user_task(task.id, TaskChanges(name="x" * 300))
    with pytest.raises(InvalidOperation):
        engine.update_user_task(task.id, TaskChanges(priority=2**40))
    with pytest.raises(NotFound):
        engine.update_user_task("nope", TaskChanges(name="x"))
    with pytest.raises(NotFound):
        engine.set_user_task_assignee("nope", "ann")
    with pytest.raises(VariableError):
        engine.modify_variables(inst, {"big": "x" * 300_000})
    with pytest.raises(VariableError):
        engine.modify_variables(inst, {}, [""])
    assert table_dump(engine) == before


def test_typed_variables_keep_their_type_until_a_plain_write(engine: Engine) -> None:
    engine.deploy(REVIEW)
    inst = engine.start(
        "review",
        {"reviewers": "ann", "when": Typed("2026-11-29T10:00:00.000+0000", "Date")},
        now=T0,
    )
    assert inst.variable_types == {"when": "Date"}
    after = engine.modify_variables(
        inst.id, {"big": Typed(7, "Long"), "doc": Typed({"a": [1]}, "Json")}, ["reviewers"]
    )
    assert after.variables == {"when": "2026-11-29T10:00:00.000+0000", "big": 7, "doc": {"a": [1]}}
    assert after.variable_types == {"when": "Date", "big": "Long", "doc": "Json"}
    stored = engine.get_instance(inst.id)
    assert (stored.variables, stored.variable_types) == (after.variables, after.variable_types)
    # a plain write of the same name forgets the type; set and deleted at once: deleted
    engine.modify_variables(inst.id, {"big": 8, "doc": 1}, ["doc"])
    stored = engine.get_instance(inst.id)
    assert stored.variables == {"when": "2026-11-29T10:00:00.000+0000", "big": 8}
    assert stored.variable_types == {"when": "Date"}
    events = [e for e in engine.history(inst.id) if e.type.startswith("variables_")]
    assert [(e.type, e.payload["names"]) for e in events][-2:] == [
        ("variables_updated", ["big"]),
        ("variables_deleted", ["doc"]),
    ]
    # deleting what is not there changes nothing (no event)
    n = len(engine.history(inst.id))
    engine.modify_variables(inst.id, {}, ["missing"])
    assert len(engine.history(inst.id)) == n


def test_variable_instances_filter_and_page(engine: Engine) -> None:
    engine.deploy(REVIEW)
    a = _start(engine, 0, amount=10, region="eu")
    b = _start(engine, 1, amount=250, region="us", flag=True)
    q = engine.queries
    rows = q.variables(VariableQuery(names=("amount",)))
    assert [(r.instance_id, r.value) for r in rows] == [(a, 10), (b, 250)]
    assert q.count_variables(VariableQuery()) == 7
    gt = VariableQuery(values=(("amount", "gt", 100),))
    assert [(r.instance_id, r.name) for r in q.variables(gt)] == [(b, "amount")]
    like = VariableQuery(values=(("region", "like", "e%"),))
    assert [r.instance_id for r in q.variables(like)] == [a]
    eq = VariableQuery(values=(("flag", "eq", True),))
    assert [(r.instance_id, r.value) for r in q.variables(eq)] == [(b, True)]
    lists = q.variables(VariableQuery(instance_ids=(a,), names=("reviewers",)))
    assert [r.value for r in lists] == [["ann", "bob"]]
    page = q.variables(VariableQuery(instance_ids=(b,)), offset=1, limit=2)
    assert [r.name for r in page] == ["flag", "region"]
    engine.terminate(a)
    assert q.count_variables(VariableQuery(instance_ids=(a,))) == 0
    assert q.count_variables(VariableQuery(instance_ids=(a,), running_only=False)) == 3


def test_history_states_and_activity_instances(engine: Engine) -> None:
    engine.deploy(REVIEW)
    engine.deploy(STOP)
    done = _start(engine, 0)
    task = engine.queries.tasks(TaskQuery(instance_ids=(done,)))[0].task
    engine.complete_user_task(task.id, {"approved": False}, now=T0 + timedelta(hours=1))
    killed = _start(engine, 1)
    engine.terminate(killed, reason="customer left", now=T0 + timedelta(hours=2))
    paused = _start(engine, 2)
    engine.suspend(paused)
    running = _start(engine, 3)
    stopped = engine.start("stop", now=T0 + timedelta(minutes=9)).id
    q = engine.queries
    states = {
        h.instance.id: (h.state, h.delete_reason) for h in q.historic_instances(InstanceQuery())
    }
    assert states == {
        done: ("COMPLETED", None),
        killed: ("EXTERNALLY_TERMINATED", "customer left"),
        paused: ("SUSPENDED", None),
        running: ("ACTIVE", None),
        stopped: ("COMPLETED", None),  # a terminate end event completes it, as in Camunda
    }
    finished = InstanceQuery(states=(InstanceState.COMPLETED, InstanceState.TERMINATED))
    assert q.count_historic_instances(finished) == 3
    by_end = q.historic_instances(
        InstanceQuery(
            definition_keys=("review",),
            states=(InstanceState.COMPLETED, InstanceState.TERMINATED),
            sorting=(("endTime", False),),
        )
    )
    assert [h.instance.id for h in by_end] == [killed, done]

    acts = q.activity_instances(ActivityQuery(instance_ids=(done,)))
    assert [(a.activity.node_id, a.activity_type) for a in acts] == [
        ("start", "startEvent"),
        ("approve", "userTask"),
        ("split", "exclusiveGateway"),
        ("rejected", "noneEndEvent"),
    ]
    assert all(a.activity.ended_at is not None and not a.activity.canceled for a in acts)
    assert acts[1].task_id == task.id and acts[1].activity_name == "Approve order"
    assert acts[1].activity.ended_at == T0 + timedelta(hours=1)
    open_now = q.activity_instances(ActivityQuery(finished=False))
    assert sorted(a.activity.instance_id for a in open_now) == sorted([paused, running])
    canceled = q.activity_instances(ActivityQuery(instance_ids=(killed,), canceled=True))
    assert [a.activity.node_id for a in canceled] == ["approve"]
    assert q.count_activity_instances(ActivityQuery(activity_types=("userTask",))) == 4
    newest = q.activity_instances(ActivityQuery(descending=True), limit=1)
    assert newest[0].activity.instance_id == stopped
    assert q.count_activity_instances(ActivityQuery(node_ids=("start",))) == 5

    historic = q.tasks(TaskQuery(states=(UserTaskState.COMPLETED,)))
    assert [r.task.id for r in historic] == [task.id]
    assert q.count_tasks(TaskQuery(states=(), instance_finished=True)) == 2
