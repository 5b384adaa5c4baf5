"""A network cut between a worker and PostgreSQL in the middle of a finish.

The worker reaches the database through :class:`tests.faults.proxy.Proxy`; a second
worker, beat and the test reach it directly. The step's handler blocks until the test
releases it, the test breaks the network, releases the handler, and the finish meets the
broken network. Whatever happens, the step's completion is applied once (the finish
got through) or the step runs again elsewhere (the lease ran out); no instance is stuck.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from bpm import Engine
from tests.e2e.handlers import pid_key, release_key, runs_key
from tests.e2e.processes import STEPS, order_model
from tests.faults.checks import audit, trails, wait_completed
from tests.faults.conftest import Database, Start, StartMany, together
from tests.faults.proxy import Proxy
from tests.support import eventually

pytestmark = pytest.mark.slow


@pytest.fixture
def proxy(pg: Database) -> Iterator[Proxy]:
    with Proxy("127.0.0.1", pg.cluster.port) as p:
        yield p


def blocked_order(
    engine: Engine, workers: StartMany, beats: Start, proxy: Proxy, pg: Database,
    ledger: redis.Redis, tag: str,
) -> str:  # fmt: skip
    """An order whose first step blocks in the worker behind the proxy; then a second,
    direct worker and beat join."""
    workers(1, BPM_DATABASE_URL=pg.url_via(proxy.port))
    engine.deploy(order_model())
    inst = engine.start("order", {"amount": 120, "tag": tag, "block_at": "validate"})
    eventually(lambda: ledger.get(pid_key(tag, "validate")), what="validate to block")
    together(workers, beats)
    return inst.id


def released_and_finished(proxy: Proxy, ledger: redis.Redis, tag: str) -> None:
    """Release the blocked handler and wait until its finish reaches the proxy."""
    mark = proxy.chunks_up
    ledger.rpush(release_key(tag, "validate"), "go")
    eventually(lambda: proxy.chunks_up > mark, what="the finish to start", interval=0.01)


def test_connections_reset_and_refused_during_a_finish_the_step_runs_again(
    fault_engine: Engine, workers: StartMany, beats: Start, proxy: Proxy, pg: Database,
    ledger: redis.Redis, tag: str,
) -> None:  # fmt: skip
    iid = blocked_order(fault_engine, workers, beats, proxy, pg, ledger, tag)
    proxy.refuse()
    proxy.reset()  # the finish (and the heartbeat) meet a dead network
    ledger.rpush(release_key(tag, "validate"), "go")

    wait_completed(fault_engine, 1, timeout=60)  # the direct worker re-ran the step
    proxy.refuse(False)
    found = audit(fault_engine, [iid])
    found.assert_clean()
    assert ledger.get(runs_key(tag, "validate")) == "2"
    assert [e.payload["attempt"] for e in found.reruns if e.node_id == "validate"] == [2]
    trail = trails(fault_engine, [iid])[iid]
    failed = [e for e in trail if e.type == "attempt_failed" and e.node_id == "validate"]
    assert len(failed) == 1 and failed[0].payload["attempt"] == 1, failed
    assert fault_engine.get_instance(iid).variables["validate"] == 2


def test_a_silent_network_during_a_finish_the_step_runs_again_and_the_late_finish_is_dropped(
    fault_engine: Engine, workers: StartMany, beats: Start, proxy: Proxy, pg: Database,
    ledger: redis.Redis, tag: str,
) -> None:  # fmt: skip
    iid = blocked_order(fault_engine, workers, beats, proxy, pg, ledger, tag)
    proxy.drop()  # bytes vanish, connections stay open: the finish waits for an answer
    ledger.rpush(release_key(tag, "validate"), "go")
    wait_completed(fault_engine, 1, timeout=60)
    before = trails(fault_engine, [iid])[iid]

    proxy.drop(False)
    proxy.reset()  # the stuck worker gets its error now; whatever it retries is too late
    audit(fault_engine, [iid]).assert_clean()
    assert trails(fault_engine, [iid])[iid] == before
    assert ledger.get(runs_key(tag, "validate")) == "2"


@pytest.mark.parametrize("latency", [0.05])
def test_a_slow_network_during_a_finish_applies_it_once(
    fault_engine: Engine, workers: StartMany, beats: Start, proxy: Proxy, pg: Database,
    ledger: redis.Redis, tag: str, latency: float,
) -> None:  # fmt: skip
    iid = blocked_order(fault_engine, workers, beats, proxy, pg, ledger, tag)
    proxy.latency = latency
    released_and_finished(proxy, ledger, tag)
    wait_completed(fault_engine, 1, timeout=60)
    found = audit(fault_engine, [iid])
    found.assert_clean()
    assert found.reruns == [] and found.lost_leases == [], "\n".join(
        f"{e.type} {e.node_id} {e.payload}" for e in trails(fault_engine, [iid])[iid]
    )
    assert [ledger.get(runs_key(tag, s)) for s in STEPS] == ["1"] * len(STEPS)


def test_connections_reset_in_the_middle_of_a_finish_apply_it_once_or_run_it_again(
    fault_engine: Engine, workers: StartMany, beats: Start, proxy: Proxy, pg: Database,
    ledger: redis.Redis, tag: str,
) -> None:  # fmt: skip
    iid = blocked_order(fault_engine, workers, beats, proxy, pg, ledger, tag)
    proxy.latency = 0.1  # the finish spans several chunks: the reset falls inside it
    released_and_finished(proxy, ledger, tag)
    proxy.reset()
    proxy.latency = 0.0
    wait_completed(fault_engine, 1, timeout=60)
    found = audit(fault_engine, [iid])
    found.assert_clean()
    runs = int(ledger.get(runs_key(tag, "validate")) or 0)
    # Applied once by the first attempt (its retry got through), or run again.
    assert runs in (1, 2)
    assert len([e for e in found.reruns if e.node_id == "validate"]) == runs - 1
