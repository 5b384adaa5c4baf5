"""The worker SDK says what it does and stops when the engine refuses it for good: a start
line (worker id, topics, URL), a wrong key (401), a key not allowed the topics (403) and a
URL that is not the REST API (404) end the worker with one line saying what to fix."""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.conftest import ApiServer, free_port, start_worker, write_worker
from tests.support import create_database, drop_database, eventually, pg_url

WORKER = """
    from bpm.worker import ExternalWorker

    worker = ExternalWorker("{base}", worker_id="w-first", api_key="{key}", long_poll_ms=1000)

    @worker.subscribe("{topic}")
    def handle(task):
        return {{}}
"""


@pytest.fixture(scope="module")
def keyed_server(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """One server for the module (its cases only read refusals, which change nothing); the
    cases that use it run on one xdist worker (``SHARED``)."""
    name = create_database(template=pg_template)
    log = tmp_path_factory.mktemp("refusals") / "api.log"
    server = ApiServer(pg_url(name), keys="w1:right:charge|ship,admin:adm1n", log=log).start()
    yield server
    server.kill()
    drop_database(name)


SHARED = pytest.mark.xdist_group("worker-sdk-refusals")  # one keyed_server for them all


def _run_worker(tmp_path: Path, base: str, key: str, topic: str = "charge") -> tuple[int, str]:
    write_worker(tmp_path, "first_worker", WORKER.format(base=base, key=key, topic=topic))
    log = tmp_path / "worker.log"
    proc = start_worker(tmp_path, "first_worker", log)
    try:
        code = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the worker kept running: " + log.read_text()) from None
    return code, log.read_text()


@SHARED
def test_a_wrong_key_stops_the_worker_with_what_to_fix(
    keyed_server: ApiServer, tmp_path: Path
) -> None:
    code, out = _run_worker(tmp_path, keyed_server.base, "wrong")
    assert code == 1, out
    assert f"worker w-first fetching topics charge from {keyed_server.base}" in out
    assert "refused this worker's credentials (HTTP 401" in out
    assert "api_key=" in out and "BPM_API_KEYS" in out
    assert "retrying" not in out
    assert "_Http" not in out and "_Refusal" not in out and "Traceback" not in out


@SHARED
def test_a_key_not_allowed_the_topic_stops_the_worker(
    keyed_server: ApiServer, tmp_path: Path
) -> None:
    code, out = _run_worker(tmp_path, keyed_server.base, "right", topic="refunds")
    assert code == 1, out
    assert "HTTP 403" in out and "may not fetch these topics" in out
    assert "Traceback" not in out


@SHARED
def test_a_url_without_engine_rest_stops_the_worker(
    keyed_server: ApiServer, tmp_path: Path
) -> None:
    root = keyed_server.base.removesuffix("/engine-rest")
    code, out = _run_worker(tmp_path, root, "right")
    assert code == 1, out
    assert f"no Camunda REST API at {root} (HTTP 404" in out
    assert "ends in /engine-rest" in out


@SHARED
def test_run_raises_worker_refused_in_process(keyed_server: ApiServer) -> None:
    from bpm.worker import ExternalWorker, WorkerRefused

    worker = ExternalWorker(keyed_server.base, worker_id="w-inproc", api_key="nope")
    worker.subscribe("charge")(lambda task: None)
    with pytest.raises(WorkerRefused) as refused:
        worker.run(install_signals=False)
    assert refused.value.status_code == 401
    assert "api_key=" in str(refused.value)


def test_an_engine_that_is_down_is_retried_in_plain_words(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from bpm.worker import ExternalWorker

    base = f"http://127.0.0.1:{free_port()}/engine-rest"  # nothing listens there
    worker = ExternalWorker(base, worker_id="w-down", long_poll_ms=500)
    worker.subscribe("charge")(lambda task: None)
    caplog.set_level(logging.INFO, logger="bpm.worker")
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False})
    thread.start()
    try:
        eventually(
            lambda: any("retrying in" in r.getMessage() for r in caplog.records),
            timeout=15,
            what="a retried fetch",
        )
    finally:
        worker.stop()
        thread.join(10)
    assert not thread.is_alive()
    lines = [r.getMessage() for r in caplog.records]
    assert f"worker w-down fetching topics charge from {base} (up to 8 tasks at once)" in lines
    failed = next(line for line in lines if "retrying in" in line)
    assert failed.startswith("fetchAndLock failed (cannot connect:"), failed
    assert "worker w-down stopped" in lines
