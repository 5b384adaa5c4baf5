"""The worker SDK's heartbeat never shortens a handler's own longer ``extend_lock``
(issue 18 item 11; the same rule as the inline steps' heartbeat, ``bpm/engine/heartbeat``).

A handler that knows it will run long extends its lock once (``task.extend_lock(60_000)``);
the heartbeat, which extends every running task at half its subscription's lock duration,
must go on from the handler's duration and never send a shorter one.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

from bpm.worker import ExternalWorker, Task
from bpm.worker.worker import _Heartbeats
from tests.api.conftest import Api, one_task
from tests.support import eventually

LOCK_MS = 1000  # the subscription's lock: a heartbeat every half second
EXTENDED_MS = 60_000


def lock_expiry(api: Api, instance_id: str) -> datetime | None:
    (task,) = api.engine.external_tasks(instance_id=instance_id)
    return task.lock_expires_at


def test_a_heartbeat_never_shortens_the_lock_a_handler_extended(api: Api) -> None:
    api.deploy(one_task("long", "long-job"))
    iid = api.start("long")
    extended = threading.Event()
    release = threading.Event()
    answers: list[bool] = []

    worker = ExternalWorker(api.base, worker_id="sdk-long", long_poll_ms=1000)

    @worker.subscribe("long-job", lock_duration=LOCK_MS)
    def handle(task: Task) -> dict[str, Any]:
        answers.append(task.extend_lock(EXTENDED_MS))
        extended.set()
        release.wait(30)
        return {"done": True}

    thread = worker.start_background()
    try:
        assert extended.wait(30), "the handler did not start"
        assert answers == [True]
        after_extend = lock_expiry(api, iid)
        assert after_extend is not None
        # Six heartbeat periods: each heartbeat must keep (or move on) the 60 s lock.
        until = time.monotonic() + 3 * LOCK_MS / 1000
        lowest = after_extend
        while time.monotonic() < until:
            expiry = lock_expiry(api, iid)
            assert expiry is not None
            lowest = min(lowest, expiry)
            time.sleep(0.05)
        assert lowest >= after_extend, (
            f"a heartbeat moved the lock from {after_extend} back to {lowest}"
        )
        assert lowest - datetime.now(after_extend.tzinfo) > timedelta(seconds=50)
    finally:
        release.set()
        eventually(
            lambda: api.engine.get_instance(iid).state.value == "completed",
            timeout=30,
            what="the task to complete",
        )
        worker.stop()
        thread.join(30)
    assert api.engine.get_instance(iid).variables == {"done": True}
    assert worker.completed == 1


def test_a_handler_extend_waits_for_a_heartbeat_in_flight_and_sets_the_pace() -> None:
    """The ordering the HTTP test cannot time: the heartbeat's request for the task is on
    its way (its 1 s duration read) when the handler extends to 60 s. The handler's
    request goes after the heartbeat's answer, so the engine sees 60 s last; the next
    heartbeat sends 60 s, not 1 s."""
    sent: list[int] = []
    in_flight = threading.Event()
    answer = threading.Event()

    def extend(task_id: str, lease_ms: int) -> bool:
        sent.append(lease_ms)
        if len(sent) == 1:  # the first heartbeat: held on the wire until told
            in_flight.set()
            answer.wait(10)
        return True

    beats = _Heartbeats(extend)
    try:
        beats.add("t-1", 200)  # first heartbeat after 0.1 s
        assert in_flight.wait(10)
        handler = threading.Thread(target=lambda: beats.extend_now("t-1", EXTENDED_MS))
        handler.start()
        time.sleep(0.2)  # give the handler's call every chance to overtake
        assert sent == [200], "the handler's extend overtook the heartbeat in flight"
        answer.set()
        handler.join(10)
        assert sent == [200, EXTENDED_MS]
        # The next heartbeat is due at half the handler's lease (30 s), with its duration.
        due = beats.next_beat("t-1")
        assert due is not None
        at, lease = due
        assert lease == EXTENDED_MS and at - time.monotonic() > 25
        time.sleep(0.5)  # two and a half periods of the old 200 ms lease
        assert sent == [200, EXTENDED_MS]
    finally:
        beats.close()
