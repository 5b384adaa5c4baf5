"""The upkeep runner (:mod:`bpm.engine.maintenance`): its jobs on threads of their own, and
two sweepers at once doing nothing twice. The beat process with a real backlog is
``tests/e2e/test_maintenance.py``."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bpm import Engine, EngineConfig, TokenState
from bpm.builder import Process
from bpm.engine.core import utcnow
from bpm.engine.execution import republish_due
from bpm.engine.maintenance import Job, Maintenance, sweep, upkeep_jobs
from bpm.handlers import HandlerRegistry
from bpm.store import tokens as token_store
from tests.engine_helpers import QueueDispatcher, claim_one, make_engine
from tests.support import eventually

S = timedelta(seconds=1)


def one_step() -> Process:
    return Process("one").start("s").service_task("t", handler="h").end("e").sequence("s", "t", "e")


def ready_engine(url: str) -> tuple[Engine, QueueDispatcher]:
    registry = HandlerRegistry()
    registry.register("h", lambda ctx: {})
    eng, q = make_engine(url, registry)
    eng.deploy(one_step())
    return eng, q


def test_each_job_runs_on_its_own_thread_and_a_slow_one_delays_no_other() -> None:
    slow_started, release = threading.Event(), threading.Event()
    quick_runs: list[int] = []

    def slow() -> int:
        slow_started.set()
        release.wait(10)
        return 0

    def quick() -> int:
        quick_runs.append(1)
        return 0

    upkeep = Maintenance(
        [Job("slow", timedelta(seconds=0.01), slow), Job("quick", timedelta(seconds=0.01), quick)]
    )
    upkeep.start()
    try:
        assert slow_started.wait(10)
        eventually(lambda: len(quick_runs) >= 5, what="the quick job to run while slow runs")
        assert upkeep.runs["slow"] == 0
    finally:
        release.set()
        upkeep.stop()
    assert not [t for t in threading.enumerate() if t.name in ("bpm-slow", "bpm-quick")]


def test_a_failing_job_is_logged_and_runs_again(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("database away")
        return 2

    upkeep = Maintenance([Job("flaky", timedelta(seconds=0.01), flaky, "did {n} things")])
    with caplog.at_level(logging.INFO, logger="bpm.maintenance"):
        upkeep.start()
        try:
            eventually(lambda: upkeep.runs["flaky"] >= 1, what="a run after the failure")
        finally:
            upkeep.stop()
    assert "maintenance job flaky failed (database away)" in caplog.text
    assert "flaky: did 2 things" in caplog.text


def test_sweep_goes_on_while_batches_are_full_and_stops_at_a_short_one() -> None:
    sizes = iter([3, 3, 1, 3])
    asked: list[int] = []

    def step(*, limit: int) -> int:
        asked.append(limit)
        return next(sizes)

    assert sweep(step, 3) == 7 and asked == [3, 3, 3]


def test_the_upkeep_jobs_take_back_publish_and_purge(database_url: str) -> None:
    eng, q = ready_engine(database_url)
    try:
        jobs = {j.name: j for j in upkeep_jobs(eng, purge=timedelta(hours=1))}
        assert set(jobs) == {"reclaim", "redispatch", "purge", "batches"}
        assert jobs["batches"].run() == 0  # no batch, and this dispatcher takes no chunks
        inst = eng.start("one")
        (tok,) = eng.get_instance(inst.id).tokens
        q.queue.clear()
        # An expired lease is taken back...
        assert claim_one(eng.core, tok.id, "dead:1", utcnow() - timedelta(minutes=5)) is not None
        assert jobs["reclaim"].run() == 1
        assert eng.get_instance(inst.id).tokens[0].state is TokenState.READY
        # ...and a Ready step nobody claimed is published again once it is stale.
        eng.core.config = replace(eng.core.config, redispatch_after=timedelta(0))
        published = len(q.published)
        assert jobs["redispatch"].run() >= 1 and len(q.published) > published
        assert jobs["purge"].run() == 0  # nothing has ended 30 days ago
        assert upkeep_jobs(eng, reclaim=None, redispatch=None, purge=None, batches=None) == []
    finally:
        eng.close()


def test_two_sweepers_at_once_publish_a_stale_step_once(pg_database_url: str) -> None:
    """The first sweeper's transaction holds the stale step (read ``FOR UPDATE SKIP
    LOCKED``); the second skips it, and after the first commits finds it fresh."""
    eng, q = ready_engine(pg_database_url)
    try:
        inst = eng.start("one")
        (tok,) = eng.get_instance(inst.id).tokens
        later = utcnow() + timedelta(minutes=1)
        stale_before = later - eng.core.config.redispatch_after
        with eng.db.begin() as first:
            assert [row[0] for row in token_store.stale_ready(first, stale_before, 500)] == [tok.id]
            assert eng.redispatch_stale_ready(now=later) == 0  # the second one
            token_store.touch(first, [tok.id], later)
        assert eng.redispatch_stale_ready(now=later) == 0
        assert q.published == [tok.id]  # only the start's own publish
    finally:
        eng.close()


def test_a_step_waiting_in_a_backlog_is_published_again_with_a_backoff(database_url: str) -> None:
    """A Ready step nobody claims (it waits behind a long queue, or its message was lost)
    for a minute, the sweeper running every second: published again after 1 s, 2 s, 4 s,
    8 s, then every 8 s (the cap), not sixty times."""
    registry = HandlerRegistry()
    registry.register("h", lambda ctx: {})
    eng, q = make_engine(
        database_url, registry, EngineConfig(redispatch_after=timedelta(seconds=1))
    )
    try:
        eng.deploy(one_step())
        t0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
        inst = eng.start("one", now=t0)
        (tok,) = eng.get_instance(inst.id).tokens
        published = []
        for second in range(1, 61):
            if eng.redispatch_stale_ready(now=t0 + timedelta(seconds=second)):
                published.append(second)
        assert published == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56]
        assert q.published == [tok.id] * (1 + len(published))
    finally:
        eng.close()


def test_republish_due_follows_the_wait_and_is_capped() -> None:
    after = timedelta(seconds=5)
    t = datetime(2030, 1, 1, tzinfo=UTC)
    # a fresh step: due after `after`
    assert not republish_due(t, t, t + after - timedelta(microseconds=1), after)
    assert republish_due(t, t, t + after, after)
    # published again at +20 s after being made at t: due 20 s later
    assert not republish_due(t + 20 * S, t, t + 39 * S, after)
    assert republish_due(t + 20 * S, t, t + 40 * S, after)
    # a step whose token is an hour old (a retry) waits the cap at most: 8 x 5 s
    assert republish_due(t + 3600 * S, t, t + 3640 * S, after)
    assert not republish_due(t + 3600 * S, t, t + 3639 * S, after)
