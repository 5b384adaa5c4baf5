"""The eight real incidents of seed 003, each against a real ``bpm api`` process over HTTP."""

from __future__ import annotations

import signal
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import (
    Api,
    bpmn,
    history_types,
    instance_state,
    one_task,
    start_worker,
    write_worker,
)
from tests.support import eventually

SLOW_WORKER = """
    import pathlib, time
    from bpm.worker import ExternalWorker

    worker = ExternalWorker("{base}", worker_id="doomed", long_poll_ms=2000)

    @worker.subscribe("{topic}", lock_duration={lock})
    def handle(task):
        pathlib.Path("{marker}").write_text(task.id)
        time.sleep(3600)
        return {{}}
"""


def test_worker_killed_mid_task_is_fetched_again_after_lease(api: Api, tmp_path: Path) -> None:
    """1. kill -9 mid-task: the lock (kept alive by heartbeats) lapses; another worker gets it."""
    api.deploy(one_task("kill9", "kill9"))
    iid = api.start("kill9", {"n": 1})
    marker = tmp_path / "started"
    write_worker(
        tmp_path,
        "doomed_worker",
        SLOW_WORKER.format(base=api.base, topic="kill9", lock=1500, marker=marker),
    )
    proc = start_worker(tmp_path, "doomed_worker", tmp_path / "worker.log")
    try:
        eventually(marker.exists, timeout=20, what="the worker to start the task")
        task_id = marker.read_text()
        # the heartbeat keeps the lease alive past one lock duration: wait until the lock
        # expires later than the first lock's expiry plus one more lock duration (so more
        # than 1.5 s have passed since it was taken, and the heartbeat extended it)
        first = _lock_expiry(api, task_id)
        eventually(
            lambda: _lock_expiry(api, task_id) > first + timedelta(milliseconds=1500),
            timeout=20,
            what="the heartbeat to extend the lock past one lock duration",
        )
        assert api.fetch("rescuer", "kill9") == []
        task = api.http.get(f"/external-task/{task_id}").json()
        assert task["workerId"] == "doomed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        t0 = time.monotonic()
        got = api.fetch("rescuer", "kill9", timeout=10_000)  # woken by the lock expiry timer
        assert [t["id"] for t in got] == [task_id]
        assert time.monotonic() - t0 < 5
        assert api.post(task_id, "complete", {"workerId": "rescuer"}).status_code == 204
        assert instance_state(api.engine, iid) == "completed"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _lock_expiry(api: Api, task_id: str) -> datetime:
    raw = api.http.get(f"/external-task/{task_id}").json()["lockExpirationTime"]
    return datetime.strptime(raw, "%Y-%m-%dT%H:%M:%S.%f%z")


def test_finished_worker_whose_complete_was_lost_retries_once(api: Api) -> None:
    """2. the complete was applied but its response lost: the retry answers 204, changes
    nothing, and is applied exactly once."""
    api.deploy(one_task("lost", "lost"))
    iid = api.start("lost", {"n": 1})
    [task] = api.fetch("w1", "lost")
    body = {"workerId": "w1", "variables": {"result": {"value": "first", "type": "String"}}}
    assert api.post(task["id"], "complete", body).status_code == 204
    events = history_types(api.engine, iid)
    retry = {"workerId": "w1", "variables": {"result": {"value": "second", "type": "String"}}}
    for _ in range(2):
        r = api.post(task["id"], "complete", retry)
        assert r.status_code == 204 and r.content == b""
    assert history_types(api.engine, iid) == events
    assert events.count("external_task_completed") == 1
    assert api.engine.get_instance(iid).variables["result"] == "first"
    other = api.post(task["id"], "complete", {"workerId": "w2"})
    assert other.status_code == 404
    assert other.json()["message"] == f"External task with id {task['id']} does not exist"


def test_failed_heartbeat_lets_another_worker_take_over_and_refuses_late_complete(
    api: Api,
) -> None:
    """3. w1's heartbeats stop: its lease ends, w2 takes the task, w1's late report is refused."""
    api.deploy(one_task("beat", "beat"))
    iid = api.start("beat", {"n": 1})
    [task] = api.fetch("w1", "beat", lock=800)
    assert (
        api.post(task["id"], "extendLock", {"workerId": "w1", "newDuration": 800}).status_code
        == 204
    )
    # no more heartbeats: w2 long-polls and gets the task once the lease has run out
    got = api.fetch("w2", "beat", lock=30_000, timeout=10_000)
    assert [t["id"] for t in got] == [task["id"]]
    late = api.post(task["id"], "extendLock", {"workerId": "w1", "newDuration": 800})
    assert late.status_code == 400
    assert "locked by worker 'w2'" in late.json()["message"]
    late = api.post(
        task["id"], "complete", {"workerId": "w1", "variables": {"by": {"value": "w1"}}}
    )
    assert late.status_code == 400
    assert late.json() == {
        "type": "BadUserRequestException",
        "code": None,
        "message": f"External Task {task['id']} cannot be completed by worker 'w1'. "
        "It is locked by worker 'w2'.",
    }
    assert instance_state(api.engine, iid) == "active"
    assert (
        api.post(
            task["id"], "complete", {"workerId": "w2", "variables": {"by": {"value": "w2"}}}
        ).status_code
        == 204
    )
    inst = api.engine.get_instance(iid)
    assert inst.state.value == "completed" and inst.variables["by"] == "w2"


def test_api_restart_during_long_polls_and_locks(api: Api) -> None:
    """4. the API process dies with polls pending and tasks locked; after the restart the
    locks still hold, their owners complete them, and new polls are woken as before."""
    api.deploy(one_task("restart", "restart-a"))
    api.deploy(one_task("restart2", "restart-b"))
    iid = api.start("restart", {"n": 1})
    [locked] = api.fetch("w1", "restart-a", lock=60_000)
    poll_result: dict[str, Any] = {}

    def long_poll() -> None:
        try:
            api.fetch("w2", "restart-b", timeout=20_000)
        except (httpx.HTTPError, AssertionError) as exc:
            poll_result["error"] = exc

    poller = threading.Thread(target=long_poll)
    poller.start()
    time.sleep(0.3)
    api.server.kill(signal.SIGKILL)
    poller.join(10)
    assert "error" in poll_result  # the client sees the connection drop, and re-polls
    api.server.start()
    # the lock survived the restart
    assert api.fetch("w2", "restart-a") == []
    assert api.http.get(f"/external-task/{locked['id']}").json()["workerId"] == "w1"
    # a new long poll is woken by a task created after the restart
    got: list[dict[str, Any]] = []
    poller = threading.Thread(
        target=lambda: got.extend(api.fetch("w2", "restart-b", timeout=20_000))
    )
    poller.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    iid2 = api.start("restart2", {"n": 2})
    poller.join(20)
    assert len(got) == 1 and got[0]["processInstanceId"] == iid2
    assert time.monotonic() - t0 < 2
    assert api.post(locked["id"], "complete", {"workerId": "w1"}).status_code == 204
    assert api.post(got[0]["id"], "complete", {"workerId": "w2"}).status_code == 204
    assert instance_state(api.engine, iid) == "completed"
    assert instance_state(api.engine, iid2) == "completed"


def test_two_workers_racing_for_one_task_exactly_one_wins(api: Api) -> None:
    """5. concurrent fetches never hand one task to two workers."""
    api.deploy(one_task("race", "race"))
    for round_ in range(8):
        api.start("race", {"round": round_})
        barrier = threading.Barrier(4)
        results: dict[str, list[dict[str, Any]]] = {}

        def grab(
            worker: str,
            barrier: threading.Barrier = barrier,
            results: dict[str, list[dict[str, Any]]] = results,
        ) -> None:
            with httpx.Client(base_url=api.base, timeout=30) as http:
                barrier.wait()
                r = http.post(
                    "/external-task/fetchAndLock",
                    json={
                        "workerId": worker,
                        "maxTasks": 5,
                        "topics": [{"topicName": "race", "lockDuration": 60_000}],
                    },
                )
                results[worker] = r.json()

        threads = [threading.Thread(target=grab, args=(f"w{i}",)) for i in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        winners = {w: tasks for w, tasks in results.items() if tasks}
        assert len(winners) == 1, results
        [(winner, [task])] = winners.items()
        for loser in set(results) - {winner}:
            r = api.post(task["id"], "complete", {"workerId": loser})
            assert r.status_code == 400
        assert api.post(task["id"], "complete", {"workerId": winner}).status_code == 204
    # many tasks, many workers: every task delivered exactly once
    ids = {api.start("race", {"bulk": i}) for i in range(30)}
    seen: list[str] = []
    lock = threading.Lock()

    def drain(worker: str) -> None:
        with httpx.Client(base_url=api.base, timeout=30) as http:
            while True:
                r = http.post(
                    "/external-task/fetchAndLock",
                    json={
                        "workerId": worker,
                        "maxTasks": 3,
                        "topics": [{"topicName": "race", "lockDuration": 60_000}],
                    },
                )
                tasks = r.json()
                if not tasks:
                    return
                with lock:
                    seen.extend(t["processInstanceId"] for t in tasks)

    threads = [threading.Thread(target=drain, args=(f"d{i}",)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(seen) == sorted(ids)


FORK_JOIN = bpmn(
    "branches",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="fork"/>
    <bpmn:parallelGateway id="fork"/>
    <bpmn:sequenceFlow id="fa" sourceRef="fork" targetRef="a"/>
    <bpmn:sequenceFlow id="fb" sourceRef="fork" targetRef="b"/>
    <bpmn:serviceTask id="a" camunda:type="external" camunda:topic="branch-a"/>
    <bpmn:serviceTask id="b" camunda:type="external" camunda:topic="branch-b"/>
    <bpmn:sequenceFlow id="fa2" sourceRef="a" targetRef="join"/>
    <bpmn:sequenceFlow id="fb2" sourceRef="b" targetRef="join"/>
    <bpmn:parallelGateway id="join"/>
    <bpmn:sequenceFlow id="f3" sourceRef="join" targetRef="end"/>
    <bpmn:endEvent id="end"/>
""",
)


def test_retried_branch_keeps_the_join_waiting_until_it_completes(api: Api) -> None:
    """6. one branch fails and is retried; the join fires once, after both branches."""
    api.deploy(FORK_JOIN)
    iid = api.start("branches", {"n": 1})
    [a] = api.fetch("wa", "branch-a")
    [b] = api.fetch("wb", "branch-b")
    assert (
        api.post(
            a["id"],
            "failure",
            {"workerId": "wa", "errorMessage": "flaky", "retries": 2, "retryTimeout": 300},
        ).status_code
        == 204
    )
    assert api.post(b["id"], "complete", {"workerId": "wb"}).status_code == 204
    inst = api.engine.get_instance(iid)
    assert inst.state.value == "active"
    waiting = [t for t in inst.tokens if t.state.value == "waiting"]
    assert sorted(t.node_id for t in waiting) == ["a", "join"]
    [again] = api.fetch("wa", "branch-a", timeout=5000)
    assert again["id"] == a["id"] and again["retries"] == 2
    assert again["errorMessage"] == "flaky"
    assert instance_state(api.engine, iid) == "active"
    assert api.post(a["id"], "complete", {"workerId": "wa"}).status_code == 204
    assert instance_state(api.engine, iid) == "completed"
    assert history_types(api.engine, iid).count("join_fired") == 1


def test_retry_after_is_honoured(api: Api) -> None:
    """7. a failed task is not handed out before its retry time, and right after it."""
    api.deploy(one_task("later", "later"))
    iid = api.start("later", {"n": 1})
    [task] = api.fetch("w1", "later")
    failed_at = time.monotonic()
    assert (
        api.post(
            task["id"],
            "failure",
            {"workerId": "w1", "errorMessage": "busy", "retries": 3, "retryTimeout": 1200},
        ).status_code
        == 204
    )
    assert api.fetch("w1", "later") == []
    got = api.fetch("w2", "later", timeout=10_000)  # woken by the retry-time timer
    waited = time.monotonic() - failed_at
    assert [t["id"] for t in got] == [task["id"]]
    assert 1.1 <= waited < 3.0, waited
    assert got[0]["retries"] == 3
    assert api.post(task["id"], "complete", {"workerId": "w2"}).status_code == 204
    assert instance_state(api.engine, iid) == "completed"

    # with a model RetryPolicy and no retries from the worker, the engine's policy decides
    api.deploy(
        one_task(
            "policy",
            "policy",
            task_body="""
        <bpmn:extensionElements>
          <camunda:failedJobRetryTimeCycle>R3/PT1S</camunda:failedJobRetryTimeCycle>
        </bpmn:extensionElements>""",
        )
    )
    api.start("policy", {"n": 2})
    [task] = api.fetch("w1", "policy")
    failed_at = time.monotonic()
    assert (
        api.post(task["id"], "failure", {"workerId": "w1", "errorMessage": "x"}).status_code == 204
    )
    assert api.fetch("w1", "policy") == []
    [again] = api.fetch("w1", "policy", timeout=10_000)
    assert 0.9 <= time.monotonic() - failed_at < 3.0
    assert again["retries"] == 2  # 3 attempts in all, 1 used


def test_retries_exhausted_open_an_incident_resolved_by_put_retries(api: Api) -> None:
    """8. retries reaching 0 open a failedExternalTask incident; PUT retries resolves it."""
    api.deploy(one_task("exhaust", "exhaust"))
    iid = api.start("exhaust", {"n": 1})
    [task] = api.fetch("w1", "exhaust")
    r = api.post(
        task["id"],
        "failure",
        {
            "workerId": "w1",
            "errorMessage": "card service down",
            "errorDetails": "Traceback: boom",
            "retries": 0,
        },
    )
    assert r.status_code == 204
    assert api.fetch("w1", "exhaust") == []
    [incident] = api.http.get("/incident", params={"processInstanceId": iid}).json()
    assert incident["incidentType"] == "failedExternalTask"
    assert incident["configuration"] == task["id"]
    assert incident["incidentMessage"] == "card service down"
    info = api.http.get(f"/external-task/{task['id']}").json()
    assert info["retries"] == 0 and info["errorMessage"] == "card service down"
    details = api.http.get(f"/external-task/{task['id']}/errorDetails")
    assert details.text == "Traceback: boom"
    assert details.headers["content-type"].startswith("text/plain")
    assert instance_state(api.engine, iid) == "active"
    assert (
        api.http.put(f"/external-task/{task['id']}/retries", json={"retries": 1}).status_code == 204
    )
    assert api.http.get("/incident", params={"processInstanceId": iid}).json() == []
    [again] = api.fetch("w1", "exhaust")
    assert again["retries"] == 1
    assert api.post(again["id"], "complete", {"workerId": "w1"}).status_code == 204
    assert instance_state(api.engine, iid) == "completed"

    # the model's policy running out opens the incident the same way
    api.deploy(
        one_task(
            "exhaust2",
            "exhaust2",
            task_body="""
        <bpmn:extensionElements>
          <camunda:failedJobRetryTimeCycle>R2/PT1S</camunda:failedJobRetryTimeCycle>
        </bpmn:extensionElements>""",
        )
    )
    iid2 = api.start("exhaust2", {"n": 2})
    for _ in range(2):
        [task] = api.fetch("w1", "exhaust2", timeout=10_000)
        assert (
            api.post(task["id"], "failure", {"workerId": "w1", "errorMessage": "no"}).status_code
            == 204
        )
    assert api.fetch("w1", "exhaust2") == []
    [incident] = api.http.get("/incident", params={"processInstanceId": iid2}).json()
    assert incident["incidentType"] == "failedExternalTask"
