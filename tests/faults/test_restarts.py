"""PostgreSQL crashed (``pg_ctl stop -m immediate``) and the broker killed and restarted
empty, in the middle of 200 instances run by real workers and beat: every instance
completes, nothing is applied twice, progress resumes within 30 s of the service's return."""

from __future__ import annotations

import httpx
import pytest

from bench.private_services import PrivateRedis
from bpm import Engine
from tests.api.conftest import ApiServer
from tests.e2e.processes import order_model
from tests.faults.checks import audit, completed, time_to_progress, wait_completed
from tests.faults.conftest import Database, Start, StartMany, together
from tests.support import eventually

pytestmark = pytest.mark.slow

COUNT = 200


def api_status(api: ApiServer) -> int:
    """What the API answers to a question only the database can answer."""
    try:
        return httpx.get(f"{api.base}/process-instance/count", timeout=10).status_code
    except httpx.HTTPError:
        return 0


def start_many(engine: Engine, tag: str, count: int = COUNT) -> list[str]:
    """``count`` orders; shipping takes 10 ms, so that the run lasts a few seconds."""
    engine.deploy(order_model())
    variables = {"amount": 120, "tag": tag, "slow_at": "ship", "slow_seconds": 0.01}
    return [engine.start("order", variables).id for _ in range(count)]


def test_postgres_crash_mid_run_every_instance_completes_once(
    fault_engine: Engine, pg: Database, workers: StartMany, beats: Start, api: ApiServer, tag: str
) -> None:
    # The instances first (their messages wait in the broker), then the workers: the
    # fault comes when about a tenth of them are done.
    ids = start_many(fault_engine, tag)
    beat, (first, second) = together(beats, lambda: workers(2))
    eventually(lambda: completed(fault_engine) >= 20, timeout=60, what="20 instances done")
    assert completed(fault_engine) < COUNT, "the run ended before the fault: make it longer"

    pg.cluster.crash()
    # Every process notices: their next statement fails (then the cluster comes back).
    for proc in (first, second):
        proc.wait_for_log(r"OperationalError|server closed the connection|terminating connection")
    assert api_status(api) == 503  # the API says so, and keeps running
    pg.cluster.start()

    resumed = time_to_progress(fault_engine)
    assert resumed < 30, resumed
    eventually(lambda: api_status(api) == 200, timeout=30, what="the API to reconnect")
    wait_completed(fault_engine, COUNT, timeout=90)
    found = audit(fault_engine, ids)
    found.assert_clean()
    for proc in (first, second, beat):
        assert proc.proc.poll() is None, f"a process died:\n{proc.log()[-2000:]}"


def test_broker_killed_and_restarted_empty_mid_run(
    fault_engine: Engine,
    broker: PrivateRedis,
    workers: StartMany,
    beats: Start,
    tag: str,
) -> None:
    ids = start_many(fault_engine, tag)
    beat, (first, second) = together(beats, lambda: workers(2))
    eventually(lambda: completed(fault_engine) >= 20, timeout=60, what="20 instances done")
    assert completed(fault_engine) < COUNT, "the run ended before the fault: make it longer"

    broker.crash()
    broker.start()  # empty: every queued run_token message is gone

    resumed = time_to_progress(fault_engine)
    assert resumed < 30, resumed
    wait_completed(fault_engine, COUNT, timeout=90)
    found = audit(fault_engine, ids)
    found.assert_clean()
    for proc in (first, second, beat):
        assert proc.proc.poll() is None, f"a process died:\n{proc.log()[-2000:]}"
