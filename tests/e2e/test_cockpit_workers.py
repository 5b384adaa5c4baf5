"""The cockpit's Work page lists the Celery workers that answer over the broker."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.api.conftest import ApiServer
from tests.e2e.conftest import BROKER_URL, StartWorkers
from tests.support import eventually


def test_work_lists_celery_workers(
    pg_database_url: str, start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = start_workers(1)
    name = worker.log_path.stem  # e2e-xxxxxxxx, the worker's -n prefix
    server = ApiServer(
        pg_database_url,
        keys="ops:s",
        log=tmp_path / "api.log",
        env={"BPM_BROKER_URL": BROKER_URL},  # the API pings the workers over the broker
    ).start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as http:

            def seen() -> list[str]:
                names = http.get("/api/work", headers={"Authorization": "Bearer s"}).json()
                return [n for n in names["celeryWorkers"] if n.startswith(f"{name}@")]

            # the answer is kept 10 s; the worker answers the first ping once it is ready
            assert eventually(seen, timeout=30, interval=1, what=f"{name} in celeryWorkers")
    finally:
        server.kill()
