"""The engine installed into a shop's own Celery app (``install(app, ...)``), with real
worker and beat processes of that app: the shop's tasks, routes and beat keep working
unchanged (early acks, their own queues), the engine's steps run in the same worker, the
engine's beat entries and timer waiter run in the shop's beat, and two beats fire nothing
twice."""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.contrib.celery import RUN_TOKEN, WorkerSettings, install
from bpm.errors import ConfigurationError
from tests.e2e.conftest import BROKER_URL
from tests.e2e.procs import CeleryProcess, start_beat, start_worker
from tests.support import eventually, visits

pytestmark = pytest.mark.slow
SHOP = "tests.e2e.shop_app"


@pytest.fixture
def shop_env(worker_env: dict[str, str], queue: str) -> Iterator[dict[str, str]]:
    tag = f"shop-{uuid.uuid4().hex[:10]}"
    env = {
        **worker_env,
        "BPM_HANDLERS": "",
        "SHOP_QUEUE": f"{queue}-shop",
        "SHOP_MAIL_QUEUE": f"{queue}-mail",
        "SHOP_TAG": tag,
        "BPM_REDISPATCH_AFTER_SECONDS": "1",
        "BPM_BEAT_REDISPATCH_SECONDS": "1",
    }
    yield env
    for url in (BROKER_URL, os.environ["BPM_TEST_REDIS_URL"]):
        r = redis.Redis.from_url(url)
        keys = [*r.scan_iter(f"*{tag}*"), *r.scan_iter(f"*{queue}-*")]
        if keys:
            r.delete(*keys)


@pytest.fixture
def shop(shop_env: dict[str, str]) -> Iterator[Celery]:
    """The shop's app module, imported here with the test's queues."""
    import importlib
    import sys

    saved = {k: os.environ.get(k) for k in shop_env}
    os.environ.update(shop_env)
    sys.modules.pop(SHOP, None)
    try:
        with warnings.catch_warnings():  # the shop's tasks again, in a fresh module
            warnings.simplefilter("ignore")
            module = importlib.import_module(SHOP)
            module.app.finalize()
        yield module.app
    finally:
        sys.modules.pop(SHOP, None)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def recorded(env: dict[str, str], what: str) -> list[str]:
    r = redis.Redis.from_url(os.environ["BPM_TEST_REDIS_URL"], decode_responses=True)
    return list(r.lrange(f"{env['SHOP_TAG']}:{what}", 0, -1))


def one_step(key: str) -> Process:
    return (
        Process(key)
        .start("start")
        .service_task("step", handler="shop-step")
        .end("end")
        .sequence("start", "step", "end")
    )


def test_only_the_engines_tasks_get_late_acks_and_the_engines_queue(shop: Celery) -> None:
    run_token = shop.tasks[RUN_TOKEN]
    assert (run_token.acks_late, run_token.reject_on_worker_lost) == (True, True)
    # routed by the app's task_routes (Celery deprecates the `queue` task attribute)
    assert shop.amqp.router.route({}, RUN_TOKEN)["queue"].name == os.environ["BPM_QUEUE"]
    for name in ("shop.add", "shop.mail"):
        assert (shop.tasks[name].acks_late, shop.tasks[name].reject_on_worker_lost) == (
            False,
            None,
        )
    schedule = shop.conf.beat_schedule
    assert schedule["shop-heartbeat"]["task"] == "shop.heartbeat"
    # The engine's upkeep runs on the shop's beat's own threads, not as scheduled tasks.
    assert not [name for name in schedule if name.startswith("bpm.")]
    assert shop.conf.task_default_queue == os.environ["SHOP_QUEUE"]


def test_installing_twice_or_something_else_is_refused() -> None:
    app = Celery("twice", set_as_current=False)
    install(app, WorkerSettings(database_url="sqlite:///unused.db"), beat=False)
    with pytest.raises(ConfigurationError, match="already installed"):
        install(app)
    with pytest.raises(ConfigurationError, match="takes an Engine, a WorkerSettings"):
        install(Celery("other", set_as_current=False), 42)  # type: ignore[arg-type]
    assert not [n for n in Celery("third", set_as_current=False).tasks if n.startswith("bpm.")]


def test_the_shops_worker_runs_its_tasks_unchanged_and_the_engines_steps(
    shop: Celery,
    shop_env: dict[str, str],
    celery_engine: Engine,
    tmp_path: Path,
) -> None:
    worker = start_worker(shop_env, None, tmp_path, app=SHOP)  # no -Q: the app's queues
    try:
        shop.tasks["shop.add"].delay(2, 3)
        shop.tasks["shop.mail"].delay("a@example.com")
        # the shop's tasks keep early acks and their own queues, inside the real worker
        assert eventually(lambda: recorded(shop_env, "add"), timeout=30) == [
            f"False|None|{shop_env['SHOP_QUEUE']}"
        ]
        assert eventually(lambda: recorded(shop_env, "mail"), timeout=30) == [
            f"False|None|{shop_env['SHOP_MAIL_QUEUE']}"
        ]
        celery_engine.deploy(one_step("shop-one"))
        inst = celery_engine.start("shop-one")
        done = eventually(
            lambda: celery_engine.get_instance(inst.id).state is InstanceState.COMPLETED,
            timeout=30,
            what="the step run by the shop's worker",
        )
        assert done and recorded(shop_env, f"step:{inst.id}") == ["1"]
        assert "consuming the engine's queue" in worker.log()
    finally:
        worker.stop()


def test_the_shops_beat_sends_its_own_entries_and_the_engines(
    shop: Celery,
    shop_env: dict[str, str],
    silent_engine: Engine,
    tmp_path: Path,
) -> None:
    """A start whose publish was lost is found by the engine's sweep, run by the shop's
    own beat (its upkeep thread); the shop's own beat entry keeps firing."""
    silent_engine.deploy(one_step("shop-lost"))
    inst = silent_engine.start("shop-lost")
    procs: list[CeleryProcess] = []
    try:
        procs.append(start_worker(shop_env, None, tmp_path, app=SHOP))
        procs.append(start_beat(shop_env, tmp_path, app=SHOP))
        eventually(
            lambda: silent_engine.get_instance(inst.id).state is InstanceState.COMPLETED,
            timeout=45,
            what="the sweep of the shop's beat to publish the lost step",
        )
        eventually(lambda: len(recorded(shop_env, "heartbeat")) >= 2, timeout=30)
        assert "redispatch: published 1 stale steps" in procs[1].log()
    finally:
        for proc in procs:
            proc.stop()


def test_two_beats_of_the_shop_fire_each_timer_once(
    shop: Celery,
    shop_env: dict[str, str],
    celery_engine: Engine,
    tmp_path: Path,
) -> None:
    process = (
        Process("shop-timer")
        .start("start")
        .timer("wait", duration="PT1S")
        .service_task("step", handler="shop-step")
        .end("end")
        .sequence("start", "wait", "step", "end")
    )
    celery_engine.deploy(process)
    procs: list[CeleryProcess] = []
    try:
        procs.append(start_worker(shop_env, None, tmp_path, app=SHOP))
        procs += [start_beat(shop_env, tmp_path, app=SHOP) for _ in range(2)]
        ids = [celery_engine.start("shop-timer").id for _ in range(20)]
        eventually(
            lambda: all(
                celery_engine.get_instance(i).state is InstanceState.COMPLETED for i in ids
            ),
            timeout=60,
            what="every timer fired and every step ran",
        )
        for i in ids:
            assert recorded(shop_env, f"step:{i}") == ["1"]
            assert visits(celery_engine, i)["step"] == [visits(celery_engine, i)["step"][0]]
    finally:
        for proc in procs:
            proc.stop()


def test_the_shops_own_task_runs_as_a_step_with_one_request_id_across_a_crash(
    shop: Celery,
    shop_env: dict[str, str],
    celery_engine: Engine,
    tmp_path: Path,
) -> None:
    """``bpm:celeryTask`` / ``task=``: the worker runs the shop's task inline (no second
    message); its worker process is killed on the first attempt, the step runs again at
    once (the task keeps Celery's default 180 s retry delay; no beat runs, so no lease
    reclaim: the redelivered message finds its holder dead), and the task sees the same
    ``self.request.id`` (the step's idempotency key) both times."""
    process = (
        Process("shop-charge")
        .start("start")
        .service_task("charge", task=shop.tasks["shop.charge"])
        .end("end")
        .sequence("start", "charge", "end")
    )
    celery_engine.deploy(process)
    assert shop.tasks["shop.charge"].default_retry_delay == 180
    worker = start_worker(shop_env, None, tmp_path, app=SHOP)
    try:
        inst = celery_engine.start("shop-charge", variables={"amount": 7, "die_once": True})
        eventually(
            lambda: celery_engine.get_instance(inst.id).state is InstanceState.COMPLETED,
            timeout=90,  # well under the 180 s retry delay
            what="the step to run again at once after its worker process was killed",
        )
        done = celery_engine.get_instance(inst.id)
        (tok,) = [t for t in done.tokens if t.node_id == "charge"]
        key = f"{inst.id}:charge:{tok.id}"
        assert recorded(shop_env, "charge") == [f"{key}|0", f"{key}|1"]
        assert done.variables["charged"] == 7
        assert "Task shop.charge[" not in worker.log()  # never a message of its own
        assert worker.log().count("Task bpm.run_token[") >= 2
        assert celery_engine.timers(inst.id) == []
        lost = [e for e in celery_engine.history(inst.id) if e.type == "lease_lost"]
        assert [e.payload["cause"] for e in lost] == ["holder_died"]
    finally:
        worker.stop()


def test_durable_chords_finish_through_a_killed_worker_child_with_each_effect_once(
    shop: Celery,
    shop_env: dict[str, str],
    celery_engine: Engine,
    tmp_path: Path,
) -> None:
    """``bpm.canvas.chord`` over the shop's own tasks, run by the shop's worker (two
    children); one child is killed with ``kill -9`` mid-run: every chord finishes, with the
    right result, and every member's effect (keyed by ``self.request.id``) counted once
    per member."""
    import signal

    from bpm.canvas import chord, group

    item, collect = shop.tasks["shop.item"], shop.tasks["shop.collect"]
    worker = start_worker(shop_env, None, tmp_path, app=SHOP, children=2)
    beat = start_beat(shop_env, tmp_path, app=SHOP)
    try:
        results = [
            chord(group(item.s(n, slow=0.05) for n in range(10)), collect.s()).apply_async(
                engine=celery_engine, app=shop
            )
            for _ in range(10)
        ]
        r = redis.Redis.from_url(os.environ["BPM_TEST_REDIS_URL"], decode_responses=True)
        eventually(lambda: r.hlen(f"{shop_env['SHOP_TAG']}:effects") >= 10, timeout=60)
        with os.popen(f"ps -o pid= --ppid {worker.pid}") as ps:  # closed: ps is waited for
            children = [int(line.split()[0]) for line in ps.read().splitlines() if line.strip()]
        os.kill(children[0], signal.SIGKILL)
        for result in results:
            assert result.get(timeout=120) == sum(n * n for n in range(10))
        effects = r.hgetall(f"{shop_env['SHOP_TAG']}:effects")
        assert len(effects) == 100  # one idempotency key per member
        # a member whose child was killed mid-run ran again under the same key, at most
        # once more; the chords' results count each member once
        assert all(int(v) in (1, 2) for v in effects.values())
    finally:
        beat.stop()
        worker.stop()
