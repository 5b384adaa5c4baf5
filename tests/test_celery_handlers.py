"""Celery tasks as handlers (``bpm:celeryTask`` / ``task=``), run inline by the engine: the
arguments from the variables, the result to the variables, the task's retry settings as the
step's policy, ``self.retry()`` as a retry of the same token, ``self.request.id`` as the
step's idempotency key. In process on both backends; the worker's own path is in
``tests/e2e/test_celery_tasks.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from celery import Celery, Task

from bpm import InstanceState, RetryPolicy, TokenState
from bpm.builder import Process
from bpm.contrib.celery.handlers import resolve_tasks, retry_policy
from bpm.handlers import CELERY_TASK, HandlerRegistry
from bpm.retry import BackoffKind
from bpm.runtime.states import BlockKind
from tests.engine_helpers import drain, make_engine

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"


class Flaky(Exception):
    pass


class Broken(Exception):
    pass


seen: list[dict[str, Any]] = []


def make_app() -> Celery:
    app = Celery("shop-tasks", set_as_current=False)

    @app.task(name="shop.charge", bind=True, shared=False)
    def charge(self: Task, amount: int, currency: str = "EUR") -> dict[str, Any]:  # type: ignore[type-arg]
        seen.append({"id": self.request.id, "retries": self.request.retries, "amount": amount})
        return {"charged": amount, "currency": currency}

    @app.task(name="shop.total", shared=False)
    def total(prices: list[int]) -> int:
        return sum(prices)

    @app.task(
        name="shop.flaky",
        bind=True,
        shared=False,
        autoretry_for=(Flaky,),
        max_retries=4,
        retry_backoff=2,
        retry_backoff_max=30,
    )
    def flaky(self: Task, fail_until: int) -> str:  # type: ignore[type-arg]
        seen.append({"id": self.request.id, "retries": self.request.retries})
        if self.request.retries + 1 < fail_until:
            raise Flaky(f"attempt {self.request.retries + 1}")
        if fail_until < 0:
            raise Broken("not retried: outside autoretry_for")
        return "ok"

    @app.task(name="shop.again", bind=True, shared=False, max_retries=2, default_retry_delay=7)
    def again(self: Task, times: int) -> None:  # type: ignore[type-arg]
        seen.append({"id": self.request.id, "retries": self.request.retries})
        if self.request.retries < times:
            raise self.retry(countdown=5, exc=Flaky("not yet"))

    return app


@pytest.fixture
def app() -> Celery:
    seen.clear()
    return make_app()


@pytest.fixture
def registry(app: Celery) -> HandlerRegistry:
    reg = HandlerRegistry()
    resolve_tasks(app, reg)
    return reg


def one(key: str, task: Any, **options: Any) -> Process:
    return (
        Process(key)
        .start("s")
        .service_task("work", task=task, **options)
        .end("e")
        .sequence("s", "work", "e")
    )


def test_the_task_runs_inline_with_arguments_from_the_variables(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    engine, q = make_engine(database_url, registry)
    engine.deploy(one("charge", app.tasks["shop.charge"]))
    inst = engine.start("charge", variables={"amount": 120, "other": 1})
    assert drain(engine, q) == 1
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"amount": 120, "other": 1, "charged": 120, "currency": "EUR"}
    (tok,) = [t for t in done.tokens if t.node_id == "work"]
    assert seen == [{"id": f"{inst.id}:work:{tok.id}", "retries": 0, "amount": 120}]


def test_a_result_that_is_not_a_mapping_goes_to_the_result_variable(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    engine, q = make_engine(database_url, registry)
    engine.deploy(one("sum", "shop.total", result="sum"))
    engine.deploy(one("sum-default", "shop.total"))
    a = engine.start("sum", variables={"prices": [1, 2, 3]})
    b = engine.start("sum-default", variables={"prices": [4]})
    drain(engine, q)
    assert engine.get_instance(a.id).variables["sum"] == 6
    assert engine.get_instance(b.id).variables["work"] == 4


def test_a_missing_argument_fails_the_step_for_good_saying_which(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    engine, q = make_engine(database_url, registry)
    engine.deploy(one("nothing", "shop.charge"))
    inst = engine.start("nothing", variables={"currency": "USD"})
    drain(engine, q)
    assert seen == []  # never called
    (inc,) = engine.incidents(inst.id)
    assert "shop.charge needs the variable(s) amount" in inc.message
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "work"]
    assert tok.state is TokenState.FAILED and tok.attempt == 1


def test_the_tasks_retry_settings_are_the_steps_policy(app: Celery) -> None:
    flaky = retry_policy(app.tasks["shop.flaky"])
    assert (flaky.max_attempts, flaky.kind) == (5, BackoffKind.EXPONENTIAL)
    assert (flaky.initial, flaky.maximum) == (timedelta(seconds=2), timedelta(seconds=30))
    again = retry_policy(app.tasks["shop.again"])
    assert again == RetryPolicy.fixed(3, timedelta(seconds=7))
    charge = retry_policy(app.tasks["shop.charge"])  # Celery's defaults: 3 retries, 180 s
    assert charge == RetryPolicy.fixed(4, timedelta(seconds=180))


def test_autoretry_for_retries_the_same_token_with_the_same_request_id(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    engine, q = make_engine(database_url, registry)
    engine.deploy(one("flaky", "shop.flaky"))
    inst = engine.start("flaky", variables={"fail_until": 3}, now=T0)
    first = q.queue[0]
    now = T0
    for _ in range(3):
        engine.run_token(q.queue.popleft(), now=now)
        if engine.get_instance(inst.id).state is InstanceState.COMPLETED:
            break
        (timer,) = engine.timers(inst.id)
        assert timer.kind == "retry_backoff"
        now = timer.fire_at
        assert engine.fire_due_timers(now=now) == 1
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED and done.variables["work"] == "ok"
    assert [s["retries"] for s in seen] == [0, 1, 2]
    assert {s["id"] for s in seen} == {f"{inst.id}:work:{first}"}  # one key, every attempt


def test_an_exception_outside_autoretry_for_is_not_retried(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    engine, q = make_engine(database_url, registry)
    engine.deploy(one("broken", "shop.flaky"))
    inst = engine.start("broken", variables={"fail_until": -1})
    drain(engine, q)
    assert len(seen) == 1
    (inc,) = engine.incidents(inst.id)
    assert inc.message == "Broken: not retried: outside autoretry_for"
    assert engine.timers(inst.id) == []


def test_self_retry_is_a_retry_of_the_same_token_after_its_countdown(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    engine, q = make_engine(database_url, registry)
    engine.deploy(one("again", "shop.again"))
    inst = engine.start("again", variables={"times": 1}, now=T0)
    token = q.queue[0]
    engine.run_token(q.queue.popleft(), now=T0)
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "work"]
    assert tok.id == token and tok.blocked_kind is BlockKind.RETRY_BACKOFF
    (timer,) = engine.timers(inst.id)
    assert timer.fire_at == T0 + timedelta(seconds=5)  # countdown=5, not the 7 s default
    assert not q.queue  # no second message: the engine's timer brings the token back
    engine.fire_due_timers(now=timer.fire_at)
    engine.run_token(q.queue.popleft(), now=timer.fire_at)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert [s["retries"] for s in seen] == [0, 1]
    assert seen[0]["id"] == seen[1]["id"] == f"{inst.id}:work:{token}"


def test_self_retry_past_max_retries_opens_an_incident(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    engine, q = make_engine(database_url, registry)
    engine.deploy(one("never", "shop.again"))
    inst = engine.start("never", variables={"times": 99}, now=T0)
    now = T0
    while q.queue or engine.timers(inst.id):
        if q.queue:
            engine.run_token(q.queue.popleft(), now=now)
        else:
            now = engine.timers(inst.id)[0].fire_at
            engine.fire_due_timers(now=now)
    assert len(seen) == 3  # max_retries=2: three attempts in all
    (inc,) = engine.incidents(inst.id)
    assert "retry asked by shop.again" in inc.message


def test_the_task_outside_the_engine_is_celerys_own(app: Celery) -> None:
    """Called by the app itself (not as a step), ``self.retry()`` is Celery's."""
    with pytest.raises(Flaky):  # called directly: Celery re-raises the exception given
        app.tasks["shop.again"](times=1)


def test_bpmn_celery_task_attribute_binds_the_task(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    xml = f"""<definitions xmlns="{BPMN}" xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn"
        targetNamespace="t">
      <process id="pay" isExecutable="true">
        <startEvent id="s"/>
        <serviceTask id="charge" bpm:celeryTask="shop.charge"/>
        <serviceTask id="sum" bpm:celeryTask="shop.total" bpm:resultVariable="total"/>
        <endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
        <sequenceFlow id="f2" sourceRef="charge" targetRef="sum"/>
        <sequenceFlow id="f3" sourceRef="sum" targetRef="e"/>
      </process>
    </definitions>"""
    engine, q = make_engine(database_url, registry)
    engine.deploy(xml)
    inst = engine.start("pay", variables={"amount": 5, "prices": [5, 6]})
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED, engine.incidents(inst.id)
    assert done.variables["charged"] == 5 and done.variables["total"] == 11


def test_a_task_name_bound_twice_is_refused_at_deploy(database_url: str) -> None:
    from bpm.errors import DeploymentError, NotFound

    xml = f"""<definitions xmlns="{BPMN}" xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn"
        targetNamespace="t">
      <process id="twice" isExecutable="true">
        <startEvent id="s"/>
        <serviceTask id="w" bpm:celeryTask="shop.charge" bpm:handler="charge"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="w"/>
      </process>
    </definitions>"""
    engine, _ = make_engine(database_url, HandlerRegistry())
    with pytest.raises(DeploymentError, match="bound twice"):
        engine.deploy(xml)
    with pytest.raises(NotFound):  # nothing was deployed
        engine.start("twice")
    assert CELERY_TASK == "celery:"


def test_a_lost_worker_is_an_attempt_run_again_at_once_not_after_the_retry_delay(
    database_url: str, app: Celery, registry: HandlerRegistry
) -> None:
    """``shop.charge`` keeps Celery's defaults (3 retries, 180 s apart): a worker lost
    mid-attempt (its lease ran out) brings the step back Ready at once, published, with
    the attempt counted; the fourth lost attempt opens an incident instead of a loop."""
    from tests.engine_helpers import claim_one

    engine, q = make_engine(database_url, registry)
    engine.deploy(one("lost", "shop.charge"))
    inst = engine.start("lost", variables={"amount": 3}, now=T0)
    token = q.queue.popleft()
    now = T0
    for attempt in (1, 2, 3):
        assert claim_one(engine.core, token, f"worker-{attempt}", now) is not None
        now += engine.core.config.default_lease + timedelta(seconds=1)
        assert engine.reclaim_expired_leases(now=now) == 1
        (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "work"]
        assert (tok.state, tok.attempt) == (TokenState.READY, attempt)
        assert engine.timers(inst.id) == []  # no 180 s backoff timer
        assert list(q.queue) == [token]  # published again
        q.queue.clear()
    assert engine.run_token(token, now=now) == 1  # the fourth attempt runs and succeeds
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED and done.variables["charged"] == 3
    assert [s["retries"] for s in seen] == [3]

    again = engine.start("lost", variables={"amount": 4}, now=now)
    token = q.queue.popleft()
    for attempt in (1, 2, 3, 4):
        assert claim_one(engine.core, token, f"worker-{attempt}", now) is not None
        now += engine.core.config.default_lease + timedelta(seconds=1)
        assert engine.reclaim_expired_leases(now=now) == 1
    (inc,) = engine.incidents(again.id)
    assert "worker lost" in inc.message
    (tok,) = [t for t in engine.get_instance(again.id).tokens if t.node_id == "work"]
    assert (tok.state, tok.attempt) == (TokenState.FAILED, 4)


def test_a_lost_worker_of_a_plain_handler_still_waits_its_policys_delay(
    database_url: str,
) -> None:
    """Only Celery tasks run again at once: a handler's own policy keeps its delay."""
    from tests.engine_helpers import claim_one

    reg = HandlerRegistry()
    reg.register("slow-retry", lambda ctx: None, retry=RetryPolicy.fixed(3, timedelta(minutes=2)))
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("plain-lost")
        .start("s")
        .service_task("work", handler="slow-retry")
        .end("e")
        .sequence("s", "work", "e")
    )
    inst = engine.start("plain-lost", now=T0)
    token = q.queue.popleft()
    assert claim_one(engine.core, token, "worker-1", T0) is not None
    now = T0 + engine.core.config.default_lease + timedelta(seconds=1)
    assert engine.reclaim_expired_leases(now=now) == 1
    (timer,) = engine.timers(inst.id)
    assert timer.kind == "retry_backoff" and timer.fire_at == now + timedelta(minutes=2)
