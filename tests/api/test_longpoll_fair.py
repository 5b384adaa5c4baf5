"""Long polling that scales (issue 13 item 6): a new task wakes only as many pending polls
as it can serve, and each API key has its own share of the poll slots."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from bpm import Engine
from bpm.api.app import create_app, fair_share
from bpm.api.auth import parse_api_keys
from bpm.api.longpoll import LongPollHub, TooManyPolls
from bpm.builder import Process
from tests.api.conftest import ApiServer
from tests.support import eventually


def fan_out(key: str, branches: int, topic: str) -> Any:
    """start -> fork -> ``branches`` external tasks of ``topic`` (one transaction makes them)."""
    p = Process(key).start("s").parallel("fork")
    for i in range(branches):
        p = p.service_task(f"t{i}", topic=topic).flow("fork", f"t{i}").flow(f"t{i}", "join")
    return p.parallel("join").end("e").sequence("s", "fork").sequence("join", "e").build()


# -- the hub alone: which polls a notification wakes -----------------------------------------


def test_a_notification_wakes_one_idle_poll_the_oldest_first() -> None:
    hub = LongPollHub(None, channel="c")
    polls = [hub.register(frozenset({"t"}), "k") for _ in range(500)]
    other = hub.register(frozenset({"u"}), "k")
    for p in polls:
        p.idle = True
    assert hub.wake("t") == 1
    assert [p.event.is_set() for p in polls].count(True) == 1
    assert polls[0].event.is_set()
    assert not other.event.is_set()
    # a poll busy fetching is woken only when no poll is idle
    polls[1].idle = False
    assert hub.wake("t") == 1 and polls[2].event.is_set() and not polls[1].event.is_set()


def test_a_poll_leaving_with_an_unused_wake_up_passes_it_on() -> None:
    hub = LongPollHub(None, channel="c")
    first, second = hub.register(frozenset({"t"}), "k"), hub.register(frozenset({"t"}), "k")
    first.idle = second.idle = True
    hub.wake("t")
    assert first.event.is_set() and not second.event.is_set()
    hub.unregister(first)  # answered or its client went away before using the wake-up
    assert second.event.is_set()
    assert hub.pending == 1 and hub.pending_of("k") == 1


def test_each_key_has_its_own_share_of_poll_slots() -> None:
    hub = LongPollHub(None, channel="c", max_pending=4, max_per_owner=2)
    hub.register(frozenset({"t"}), "a")
    held = hub.register(frozenset({"t"}), "a")
    with pytest.raises(TooManyPolls, match="API key 'a' holds 2 long polls"):
        hub.register(frozenset({"t"}), "a")
    hub.register(frozenset({"t"}), "b")
    hub.unregister(held)
    hub.register(frozenset({"t"}), "a")  # a slot freed is a slot again
    assert hub.pending_of("a") == 2 and hub.pending == 3
    keys = parse_api_keys("a:1,b:2,v:3:role=viewer")
    assert fair_share(1000, keys) == 500  # a viewer key cannot poll: no share


# -- a real API and PostgreSQL: what a new task costs with many polls waiting -----------------


def test_new_tasks_wake_as_many_polls_as_they_can_serve(pg_database_url: str) -> None:
    """50 polls wait; one task wakes one poll (one fetch, not 50); a transaction making 5
    tasks is served by 5 polls of maxTasks=1, the wake-up passed on from poll to poll."""
    starter = Engine(pg_database_url)
    starter.deploy(fan_out("one", 1, "wake"))
    starter.deploy(fan_out("five", 5, "wake"))
    served = Engine(pg_database_url)
    app = create_app(served, open_access=True, api_keys=[])
    hub: LongPollHub = app.state.longpoll
    hub.fallback = 60.0  # only notifications may wake a poll in this test

    async def run() -> None:
        await hub.start()
        assert hub.listening
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60) as c:
            body = {
                "workerId": "w",
                "maxTasks": 1,
                "asyncResponseTimeout": 30_000,
                "topics": [{"topicName": "wake", "lockDuration": 60_000}],
            }
            polls = [
                asyncio.ensure_future(c.post("/engine-rest/external-task/fetchAndLock", json=body))
                for _ in range(50)
            ]
            await _until(lambda: hub.pending == 50 and all(w.idle for w in hub._waiters))
            before = served.core.stats.commits  # one per fetch
            await asyncio.to_thread(starter.start, "one")
            await _until(lambda: sum(p.done() for p in polls) == 1)
            await _until(lambda: all(w.idle for w in hub._waiters))
            assert served.core.stats.commits - before <= 2  # not one per waiting poll
            before = served.core.stats.commits
            await asyncio.to_thread(starter.start, "five")
            await _until(lambda: sum(p.done() for p in polls) == 6)
            await _until(lambda: all(w.idle for w in hub._waiters))
            assert served.core.stats.commits - before <= 5 + 2
            answers = [p.result() for p in polls if p.done()]
            assert all(len(a.json()) == 1 for a in answers)
            assert len({a.json()[0]["id"] for a in answers}) == 6
            for p in polls:
                p.cancel()
        await hub.stop()

    try:
        asyncio.run(run())
    finally:
        served.close()
        starter.close()


async def _until(ok: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not ok():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.01)


def test_one_key_cannot_take_every_poll_slot(pg_database_url: str, tmp_path: Path) -> None:
    os.environ["BPM_API_MAX_PENDING_POLLS"] = "4"  # two keys: a share of 2 each
    try:
        server = ApiServer(pg_database_url, keys="a:sa,b:sb", log=tmp_path / "api.log").start()
    finally:
        del os.environ["BPM_API_MAX_PENDING_POLLS"]
    body = {
        "workerId": "wa",
        "maxTasks": 1,
        "asyncResponseTimeout": 4000,
        "topics": [{"topicName": "nothing", "lockDuration": 1000}],
    }
    url = f"{server.base}/external-task/fetchAndLock"
    codes: list[int] = []
    refusals: list[str] = []
    try:

        def poll() -> None:
            r = httpx.post(url, json=body, auth=("a", "sa"), timeout=10)
            codes.append(r.status_code)
            if r.status_code == 429:
                refusals.append(r.json()["message"])

        # three polls of key a at once: its share is two, so exactly one is refused at once
        threads = [threading.Thread(target=poll) for _ in range(3)]
        for th in threads:
            th.start()
        eventually(lambda: bool(refusals), timeout=5, what="one of key a's polls to get 429")
        assert "its share" in refusals[0]
        # key a holds two slots of four; key b still has its own
        r = httpx.post(
            url,
            json={**body, "workerId": "wb", "asyncResponseTimeout": 200},
            auth=("b", "sb"),
            timeout=10,
        )
        assert r.status_code == 200 and r.json() == []
        for th in threads:
            th.join()
        assert sorted(codes) == [200, 200, 429]
    finally:
        server.kill()


def test_an_expiring_lock_wakes_one_poll_not_all(pg_database_url: str) -> None:
    """20 polls wait while another worker holds the only task; when its lock expires, one
    poll (one fetch) gets it: the hub's timer for that topic and time wakes one poll."""
    from bpm.runtime.external import FetchRequest, TopicRequest

    starter = Engine(pg_database_url)
    starter.deploy(fan_out("exp", 1, "exp"))
    starter.start("exp")
    [held] = starter.fetch_and_lock(FetchRequest("other", 1, (TopicRequest("exp", 3000),)))
    served = Engine(pg_database_url)
    fetched: list[int] = []  # tasks each fetch of the served engine got
    fetch = served.fetch_and_lock

    def counted(req: FetchRequest, **kw: Any) -> Any:
        got = fetch(req, **kw)
        fetched.append(len(got))
        return got

    served.fetch_and_lock = counted  # type: ignore[method-assign]
    app = create_app(served, open_access=True, api_keys=[])
    hub: LongPollHub = app.state.longpoll
    hub.fallback = 60.0

    async def run() -> None:
        await hub.start()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60) as c:
            body = {
                "workerId": "w",
                "maxTasks": 1,
                "asyncResponseTimeout": 30_000,
                "topics": [{"topicName": "exp", "lockDuration": 60_000}],
            }
            polls = [
                asyncio.ensure_future(c.post("/engine-rest/external-task/fetchAndLock", json=body))
                for _ in range(20)
            ]
            await _until(lambda: hub.pending == 20 and all(w.idle for w in hub._waiters))
            fetched.clear()
            await _until(lambda: any(p.done() for p in polls))
            await _until(lambda: hub.pending == 19 and all(w.idle for w in hub._waiters))
            # the expiry's timer wakes one poll, which counts the lost lock (a failed
            # attempt, whose NOTIFY may wake one more) and takes the task: not 20 fetches
            assert len(fetched) <= 3 and sum(fetched) == 1, fetched
            [answer] = [p.result() for p in polls if p.done()]
            assert [t["id"] for t in answer.json()] == [held.id]
            for p in polls:
                p.cancel()
        await hub.stop()

    try:
        asyncio.run(run())
    finally:
        served.close()
        starter.close()
