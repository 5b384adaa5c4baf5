"""The eight accidents of seed 003 (section 11), each with a real fault.

1. a worker killed (``kill -9``) in the middle of a handler
2. a worker finished, but its answer never came back to it
3. a worker's heartbeat cannot reach the database
4. the engine restarts (every worker and beat die at once)
5. two workers race for the same task
6. one branch of a fork retries while the join waits
7. a retry's backoff is honoured (beat killed during it)
8. the saga runs when the retries are spent (a worker killed, then a failing handler)
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
import redis

from bpm import Engine, RetryPolicy
from bpm.builder import Process
from tests.api.conftest import ApiServer
from tests.e2e.handlers import pid_key, runs_key
from tests.e2e.processes import order_model
from tests.faults.checks import audit, trails, wait_completed
from tests.faults.conftest import Database, Start, StartMany, kill, together
from tests.faults.handlers import heartbeats_key
from tests.faults.proxy import Proxy
from tests.support import eventually

pytestmark = pytest.mark.slow


@pytest.fixture
def proxy_to_pg(pg: Database) -> Iterator[Proxy]:
    with Proxy("127.0.0.1", pg.cluster.port) as p:
        yield p


def started_order(engine: Engine, tag: str, **variables: object) -> str:
    engine.deploy(order_model())
    return engine.start("order", {"amount": 120, "tag": tag, **variables}).id


def test_accident_1_a_worker_killed_mid_handler_its_step_runs_again(
    fault_engine: Engine, workers: StartMany, beats: Start, ledger: redis.Redis, tag: str
) -> None:
    (victim,) = workers(1)
    iid = started_order(fault_engine, tag, block_at="validate")
    eventually(lambda: ledger.get(pid_key(tag, "validate")), what="validate to block")
    together(workers, beats)

    kill(victim)  # the worker and its child, at once

    wait_completed(fault_engine, 1, timeout=60)
    found = audit(fault_engine, [iid])
    found.assert_clean()
    assert ledger.get(runs_key(tag, "validate")) == "2"
    # The trail shows the lost lease, then the re-run attempt.
    assert [e.node_id for e in found.lost_leases] == ["validate"]
    assert [(e.node_id, e.payload["attempt"]) for e in found.reruns] == [("validate", 2)]


def test_accident_2_a_completion_whose_answer_is_lost_is_applied_once(
    fault_engine: Engine, api: ApiServer
) -> None:
    fault_engine.deploy(
        Process("pay").start("s").service_task("charge", topic="charge").end("e")
        .sequence("s", "charge", "e").build()
    )  # fmt: skip
    iid = fault_engine.start("pay").id
    with Proxy("127.0.0.1", api.port) as proxy:
        base = f"http://127.0.0.1:{proxy.port}/engine-rest"
        with httpx.Client(base_url=base, timeout=2) as http:
            body = {
                "workerId": "w1",
                "maxTasks": 1,
                "topics": [{"topicName": "charge", "lockDuration": 30_000}],
            }
            (task,) = http.post("/external-task/fetchAndLock", json=body).json()
            proxy.drop(replies_only=True)  # the request arrives, the answer is lost
            complete = {"workerId": "w1", "variables": {"paid": {"value": True}}}
            with pytest.raises(httpx.ReadTimeout):
                http.post(f"/external-task/{task['id']}/complete", json=complete)
            proxy.drop(False, replies_only=True)
            # The worker does what a worker should: it tries again, and is told "done".
            again = http.post(f"/external-task/{task['id']}/complete", json=complete)
            assert again.status_code == 204, again.text
    inst = fault_engine.get_instance(iid)
    assert inst.state.value == "completed" and inst.variables["paid"] is True
    trail = trails(fault_engine, [iid])[iid]
    assert Counter(e.type for e in trail if e.node_id == "charge")["token_completed"] == 1
    assert sum(1 for e in trail if e.type == "instance_completed") == 1


def test_accident_3_a_heartbeat_that_cannot_reach_the_database_loses_the_lease(
    fault_engine: Engine,
    workers: StartMany,
    beats: Start,
    proxy_to_pg: Proxy,
    pg: Database,
    ledger: redis.Redis,
    tag: str,
) -> None:
    fault_engine.deploy(
        Process("hb").start("s").service_task("long", handler="heartbeat").end("end")
        .sequence("s", "long", "end").build()
    )  # fmt: skip
    workers(1, BPM_DATABASE_URL=pg.url_via(proxy_to_pg.port))
    iid = fault_engine.start("hb", {"tag": tag, "run_seconds": 2, "beat_every": 0.3}).id
    eventually(lambda: ledger.lrange(heartbeats_key(tag), 0, -1), what="a first heartbeat")
    proxy_to_pg.refuse()
    proxy_to_pg.reset()  # from now on neither heartbeat nor finish gets through
    together(workers, beats)

    wait_completed(fault_engine, 1, timeout=60)
    proxy_to_pg.refuse(False)
    found = audit(fault_engine, [iid], steps=("long",))
    found.assert_clean()
    assert [e.node_id for e in found.lost_leases] == ["long"]
    assert [e.payload["attempt"] for e in found.reruns] == [2]
    beats_of_first = [b for b in ledger.lrange(heartbeats_key(tag), 0, -1) if b.startswith("1:")]
    assert "1:held" in beats_of_first  # it beat while it could ...
    assert fault_engine.get_instance(iid).variables["beat_attempt"] == 2  # ... yet lost


def test_accident_4_the_whole_engine_restarts_mid_run(
    fault_engine: Engine, workers: StartMany, beats: Start, ledger: redis.Redis, tag: str
) -> None:
    fault_engine.deploy(order_model())
    variables = {"amount": 120, "tag": tag, "slow_at": "ship", "slow_seconds": 0.05}
    ids = [fault_engine.start("order", variables).id for _ in range(40)]
    started = together(lambda: workers(2), beats)
    first = [*started[0], started[1]]
    eventually(lambda: ledger.get(runs_key(tag, "ship")), what="a first shipment")
    for proc in first:
        kill(proc)  # every engine process at once, handlers and all

    together(lambda: workers(2), beats)
    wait_completed(fault_engine, len(ids), timeout=90)
    audit(fault_engine, ids).assert_clean()


def test_accident_5_workers_racing_for_the_same_tasks_each_get_a_task_once(
    fault_engine: Engine, api: ApiServer
) -> None:
    fault_engine.deploy(
        Process("race").start("s").service_task("work", topic="race").end("e")
        .sequence("s", "work", "e").build()
    )  # fmt: skip
    ids = [fault_engine.start("race").id for _ in range(20)]
    got: dict[str, list[str]] = {}
    gate = threading.Barrier(6)

    def fetch(worker: str) -> None:
        with httpx.Client(base_url=api.base, timeout=10) as http:
            gate.wait()
            body = {
                "workerId": worker,
                "maxTasks": 20,
                "topics": [{"topicName": "race", "lockDuration": 30_000}],
            }
            got[worker] = [
                t["id"] for t in http.post("/external-task/fetchAndLock", json=body).json()
            ]

    threads = [threading.Thread(target=fetch, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    taken = [task for tasks in got.values() for task in tasks]
    assert len(taken) == len(set(taken)) == 20, got  # each task to exactly one worker
    with httpx.Client(base_url=api.base, timeout=10) as http:
        for worker, tasks in got.items():
            for task in tasks:
                thief = "w0" if worker != "w0" else "w1"
                stolen = http.post(f"/external-task/{task}/complete", json={"workerId": thief})
                assert stolen.status_code in (400, 404, 409, 500) and stolen.status_code != 500
                ok = http.post(f"/external-task/{task}/complete", json={"workerId": worker})
                assert ok.status_code == 204, ok.text
    assert all(fault_engine.get_instance(i).state.value == "completed" for i in ids)


def test_accident_6_a_branch_that_runs_again_is_awaited_by_the_join(
    fault_engine: Engine, workers: StartMany, beats: Start, ledger: redis.Redis, tag: str
) -> None:
    (victim,) = workers(1)
    iid = started_order(fault_engine, tag, block_at="charge-payment")
    eventually(lambda: ledger.get(pid_key(tag, "charge-payment")), what="charge to block")
    together(workers, beats)
    eventually(lambda: ledger.get(runs_key(tag, "reserve-stock")), what="the other branch")
    kill(victim)

    wait_completed(fault_engine, 1, timeout=60)
    found = audit(fault_engine, [iid])
    found.assert_clean()
    trail = trails(fault_engine, [iid])[iid]
    assert sum(1 for e in trail if e.type == "join_fired") == 1
    # The victim may have held both branches (a batch): each ran again at most once, and
    # charge-payment surely did.
    reruns = [(e.node_id, e.payload["attempt"]) for e in found.reruns]
    assert ("charge-payment", 2) in reruns and len(reruns) == len(set(reruns)) <= 2, reruns
    assert ledger.get(runs_key(tag, "ship")) == "1"
    joined = next(i for i, e in enumerate(trail) if e.type == "join_fired")
    waited = [i for i, e in enumerate(trail) if e.node_id == "join" and e.to_state == "waiting"]
    rerun_at = max(i for i, e in enumerate(trail) if e in found.reruns)
    assert len(waited) == 2 and rerun_at < joined  # the join waited for the re-run branch


def test_accident_7_a_retry_waits_its_backoff_even_when_beat_dies_during_it(
    fault_engine: Engine, workers: StartMany, beats: Start, ledger: redis.Redis, tag: str
) -> None:
    fault_engine.deploy(
        Process("retry").start("s")
        .service_task("validate", handler="validate", retry="fixed(3, PT2S)").end("e")
        .sequence("s", "validate", "e").build()
    )  # fmt: skip
    _, first_beat = together(workers, beats)
    iid = fault_engine.start("retry", {"tag": tag, "fail_at": "validate"}).id
    eventually(lambda: ledger.get(runs_key(tag, "validate")), what="the first attempt")
    eventually(
        lambda: any(e.type == "attempt_failed" for e in fault_engine.history(iid)),
        what="the first attempt to fail",
    )
    kill(first_beat)  # the backoff timer is a row: a new beat fires it
    beats()

    wait_completed(fault_engine, 1, timeout=60)
    trail = trails(fault_engine, [iid])[iid]
    failed = next(e for e in trail if e.type == "attempt_failed")
    rerun = next(e for e in trail if e.type == "token_executing" and e.payload["attempt"] == 2)
    # The backoff moved the token Waiting -> Ready once (beat's timer, fired once).
    readied = [e for e in trail if e.node_id == "validate" and e.type == "token_ready"]
    assert len(readied) == 2, readied  # created -> ready, then after the backoff
    # Times are the database's: the second attempt started no sooner than the backoff.
    assert rerun.at - failed.at >= timedelta(seconds=2), (failed.at, rerun.at)
    assert ledger.get(runs_key(tag, "validate")) == "2"
    assert sum(1 for e in trail if e.type == "token_completed" and e.node_id == "validate") == 1


def saga_model() -> object:
    """reserve-stock (undone by the ``validate`` handler) -> charge-payment (two attempts,
    then the saga) -> end."""
    return (
        Process("saga")
        .start("s")
        .service_task("reserve-stock", handler="reserve-stock", compensate_with="validate")
        .service_task(
            "charge-payment",
            handler="charge-payment",
            retry=RetryPolicy.fixed(2, 0).compensate_on_failure(),
        )
        .end("end")
        .sequence("s", "reserve-stock", "charge-payment", "end")
        .build()
    )


def test_accident_8_the_saga_runs_when_the_retries_are_spent(
    fault_engine: Engine, workers: StartMany, beats: Start, ledger: redis.Redis, tag: str
) -> None:
    fault_engine.deploy(saga_model())
    (victim,), _ = together(workers, beats)
    # The real fault: the worker of charge-payment's first attempt is killed (its lease is
    # lost: attempt 1 failed); attempt 2 fails in the handler; the retries are spent.
    iid = fault_engine.start(
        "saga",
        {
            "tag": tag,
            "block_at": "charge-payment",
            "fail_at": "charge-payment",
            "fail_attempts": 9,
        },
    ).id
    eventually(lambda: ledger.get(pid_key(tag, "charge-payment")), what="charge to block")
    workers(1)
    kill(victim)
    inst = eventually(
        lambda: (i := fault_engine.get_instance(iid)).ended and i,
        timeout=60,
        what="the saga to end",
    )
    assert inst.state.value == "compensated", inst.state
    assert ledger.get(runs_key(tag, "charge-payment")) == "2"
    assert ledger.get(runs_key(tag, "reserve-stock")) == "1"
    trail = trails(fault_engine, [iid])[iid]
    assert [e.payload["attempt"] for e in trail if e.type == "attempt_failed"] == [1, 2]
    assert sum(1 for e in trail if e.type == "compensation_compensated") == 1
    assert sum(1 for e in trail if e.type == "instance_compensated") == 1
