"""Races on PostgreSQL, with real threads: a wait is consumed at most once."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.errors import MessageCorrelationError
from tests.support import visits

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
M = timedelta(minutes=1)
THREADS = 8


def run_together(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run the jobs in threads released at once; each result or exception, in order."""
    gate = threading.Barrier(len(jobs))
    out: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        gate.wait()
        try:
            out[i] = jobs[i]()
        except Exception as exc:  # collected: the test looks at each outcome
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return out


def waiting(engine: Engine) -> str:
    engine.deploy(
        Process("pay")
        .start("s")
        .receive_message("paid", "payment")
        .end("e")
        .sequence("s", "paid", "e")
        .build()
    )
    return engine.start("pay", {"hits": 0}, now=T0).id


def test_eight_threads_one_delivery(pg_engine: Engine) -> None:
    inst = waiting(pg_engine)
    results = run_together(
        [
            lambda i=i: pg_engine.correlate("payment", {"winner": i}, now=T0 + M)  # type: ignore[misc]
            for i in range(THREADS)
        ]
    )
    delivered = [r for r in results if isinstance(r, list)]
    refused = [r for r in results if isinstance(r, MessageCorrelationError)]
    assert len(delivered) == 1 and len(refused) == THREADS - 1, results
    assert delivered[0][0].kind == "execution"
    after = pg_engine.get_instance(inst)
    assert after.state is InstanceState.COMPLETED
    assert len(visits(pg_engine, inst)["paid"]) == 1
    consumed = [e for e in pg_engine.history(inst) if e.type == "subscription_consumed"]
    assert len(consumed) == 1


def test_eight_threads_with_ttl_one_delivery_the_rest_buffered(pg_engine: Engine) -> None:
    inst = waiting(pg_engine)
    results = run_together(
        [lambda: pg_engine.correlate("payment", ttl=60, now=T0 + M) for _ in range(THREADS)]
    )
    kinds = Counter(r[0].kind for r in results)
    assert kinds == Counter({"execution": 1, "buffered": THREADS - 1}), results
    assert pg_engine.get_instance(inst).state is InstanceState.COMPLETED
    # the buffered ones go to the next waits that open, each once
    others = [pg_engine.start("pay", now=T0 + M + M / 2).id for _ in range(THREADS)]
    done = [i for i in others if pg_engine.get_instance(i).state is InstanceState.COMPLETED]
    assert len(done) == THREADS - 1


def test_a_message_and_a_boundary_timer_due_together_one_wins(pg_engine: Engine) -> None:
    pg_engine.deploy(
        Process("deadline")
        .start("s")
        .receive_task("receive", "answer")
        .boundary_timer("timeout", "receive", duration="PT1M")
        .end("answered")
        .end("expired")
        .sequence("s", "receive", "answered")
        .flow("timeout", "expired")
        .build()
    )
    outcomes: Counter[str] = Counter()
    for round_ in range(6):
        inst = pg_engine.start("deadline", business_key=f"k{round_}", now=T0).id
        results = run_together(
            [
                lambda k=f"k{round_}": pg_engine.correlate("answer", business_key=k, now=T0 + M),  # type: ignore[misc]
                lambda: pg_engine.fire_due_timers(now=T0 + M),
            ]
        )
        trail = visits(pg_engine, inst)
        won = [end for end in ("answered", "expired") if end in trail]
        assert len(won) == 1, (trail, results)
        assert pg_engine.get_instance(inst).state is InstanceState.COMPLETED
        message_won = isinstance(results[0], list)
        assert message_won == (won == ["answered"]), results
        if not message_won:
            assert isinstance(results[0], MessageCorrelationError)
        # whichever lost left nothing behind
        assert pg_engine.timers(inst) == []
        outcomes[won[0]] += 1
    assert sum(outcomes.values()) == 6


def test_one_buffered_message_eight_waits_opening_together(pg_engine: Engine) -> None:
    first = waiting(pg_engine)  # waits without a business key: not a match
    (kept,) = pg_engine.correlate("payment", {"by": "buffer"}, business_key="b", ttl=3600, now=T0)
    assert kept.kind == "buffered"
    started = run_together(
        [lambda: pg_engine.start("pay", business_key="b", now=T0 + M).id for _ in range(THREADS)]
    )
    assert all(isinstance(x, str) for x in started), started
    got = [i for i in started if pg_engine.get_instance(i).state is InstanceState.COMPLETED]
    assert len(got) == 1, started
    assert pg_engine.get_instance(got[0]).variables["by"] == "buffer"
    assert pg_engine.get_instance(first).state is InstanceState.ACTIVE
