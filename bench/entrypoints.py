"""How soon an instance completes after it was started, from every entry point.

    python -m bench.entrypoints --starts 100
    python -m bench.entrypoints --starts 20 --only api,django

Starts the reference order process (four no-op inline handlers, ``bench/order.py``)
``--starts`` times from each entry point: the ``bpm start`` command, the REST API
(``bpm api``), a Django view and a Flask view (each starting inside the framework's
transaction, with Django's connection or the Flask-SQLAlchemy session). Two Celery worker
processes run the steps, and Celery beat runs with the stale-ready sweeper set to 60 s, so
an instance that completes within a second was delivered by its entry point's publish.

The API, Django and Flask starts are paced (``--rate`` per second, default 10: far below
what two workers sustain), so the figures are delivery latency, not the time a backlog
takes to drain; ``bpm start`` paces itself (one process per start). Printed per entry
point: p50, p99 and max of ``ended_at - created_at`` (both stamped by the engine in the
database), and how many took 1 s or more. The run creates and drops its
own database and queue, and stops every process it started.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.order import reference_model
from bench.support import beat_command, clean_queue, processes, wait_for, worker_command
from bpm import Engine
from bpm.contrib.celery import CeleryPublisher

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench_order"
ENTRY_POINTS = ("cli", "api", "django", "flask")


@dataclass(frozen=True)
class Figures:
    name: str
    seconds: list[float]

    def percentile(self, p: float) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]

    def line(self) -> str:
        slow = sum(1 for s in self.seconds if s >= 1.0)
        return (
            f"{self.name:7} n={len(self.seconds):4}  p50={self.percentile(50) * 1000:7.1f} ms  "
            f"p99={self.percentile(99) * 1000:7.1f} ms  max={max(self.seconds) * 1000:7.1f} ms  "
            f"mean={statistics.mean(self.seconds) * 1000:7.1f} ms  >=1s: {slow}"
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_cli(url: str, env: dict[str, str], n: int) -> list[str]:
    ids = []
    for _ in range(n):
        res = subprocess.run(
            [sys.executable, "-m", "bpm", "start", KEY, "--var", "amount=120"],
            env={**os.environ, **env, "BPM_DATABASE_URL": url},
            capture_output=True,
            text=True,
            check=True,
        )
        ids.append(res.stdout.split()[1])
    return ids


def paced(n: int, interval: float, start_one: Callable[[], str]) -> list[str]:
    """``n`` starts, one every ``interval`` seconds (the workers must not fall behind: this
    measures how soon a start is delivered, not how long a backlog takes)."""
    ids = []
    next_at = time.monotonic()
    for _ in range(n):
        next_at += interval
        ids.append(start_one())
        time.sleep(max(0.0, next_at - time.monotonic()))
    return ids


def start_api(url: str, env: dict[str, str], n: int, interval: float) -> list[str]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bpm", "api", "--port", str(port), "--insecure-no-auth"],
        env={**os.environ, **env, "BPM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/engine-rest"
    try:

        def up() -> bool:
            try:
                return httpx.get(f"{base}/version", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, 30, "the REST API")
        with httpx.Client(base_url=base, timeout=10) as http:
            body = {"variables": {"amount": {"value": 120}}}
            return paced(
                n,
                interval,
                lambda: str(
                    http.post(f"/process-definition/key/{KEY}/start", json=body).json()["id"]
                ),
            )
    finally:
        from bench.support import stop

        stop(server)


def start_django(url: str, publisher: CeleryPublisher, n: int, interval: float) -> list[str]:
    import django
    from django.conf import settings
    from django.db import transaction
    from django.http import HttpRequest, JsonResponse
    from django.urls import path

    from bpm.contrib.django.settings import url_of_alias

    def view(request: HttpRequest) -> JsonResponse:
        from bpm.contrib.django import start_process

        with transaction.atomic():
            inst = start_process(KEY, {"amount": 120})
        return JsonResponse({"id": inst.id})

    parts = psycopg.conninfo.conninfo_to_dict(url.replace("+psycopg", ""))
    sys.modules[__name__].urlpatterns = [path("start", view)]  # type: ignore[attr-defined]
    settings.configure(
        INSTALLED_APPS=["bpm.contrib.django"],
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["testserver"],
        USE_TZ=True,
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": parts["dbname"],
                "USER": parts.get("user", ""),
                "HOST": parts.get("host", ""),
                "PORT": str(parts.get("port", "")),
            }
        },
        BPM={"QUEUE": publisher.queue},
    )
    django.setup()
    from django.test import Client

    from bpm.contrib.django import get_engine

    assert url_of_alias("default")
    get_engine().dispatcher = publisher
    client = Client()
    return paced(n, interval, lambda: str(client.post("/start").json()["id"]))


def start_flask(url: str, publisher: CeleryPublisher, n: int, interval: float) -> list[str]:
    from flask import Flask
    from flask_sqlalchemy import SQLAlchemy

    from bpm.contrib.flask import BPM, start_process

    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = url
    db = SQLAlchemy(app)
    BPM(app, db=db, dispatcher=publisher)

    @app.post("/start")
    def start() -> dict[str, Any]:
        inst = start_process(KEY, {"amount": 120})
        db.session.commit()
        return {"id": inst.id}

    client = app.test_client()
    return paced(n, interval, lambda: str(client.post("/start").get_json()["id"]))


def durations(engine: Engine, ids: list[str], timeout: float) -> list[float]:
    def all_ended() -> bool:
        return all(engine.get_instance(i).ended for i in ids)

    wait_for(all_ended, timeout, f"{len(ids)} instances to end")
    out = []
    for instance_id in ids:
        inst = engine.get_instance(instance_id)
        assert inst.state.value == "completed" and inst.ended_at is not None, inst
        out.append((inst.ended_at - inst.created_at).total_seconds())
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=100, help="starts per entry point")
    parser.add_argument("--only", default=",".join(ENTRY_POINTS), help="comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--rate",
        type=float,
        default=10.0,
        help="starts per second for api, django and flask (0: as fast as they go)",
    )
    parser.add_argument(
        "--pg", default=os.environ.get("BPM_BENCH_PG_DSN", "postgresql://root@127.0.0.1:5432/test")
    )
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/12")
    args = parser.parse_args(argv)
    chosen = [e.strip() for e in args.only.split(",") if e.strip()]
    unknown = sorted(set(chosen) - set(ENTRY_POINTS))
    if unknown:
        parser.error(f"unknown entry point(s) {unknown}; choose from {ENTRY_POINTS}")

    interval = 1.0 / args.rate if args.rate > 0 else 0.0
    name = f"bpm_entry_{uuid.uuid4().hex[:10]}"
    queue = f"bench-entry-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.pg, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = args.pg.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + "/" + name
    env = {
        "BPM_DATABASE_URL": url,
        "BPM_BROKER_URL": args.broker,
        "BPM_QUEUE": queue,
        "BPM_HANDLERS": "bench.order",
        # The sweeper is a safety net only: 60 s, so it cannot deliver within the figures.
        "BPM_BEAT_REDISPATCH_SECONDS": "60",
        "BPM_REDISPATCH_AFTER_SECONDS": "60",
    }
    engine = Engine(url, dispatcher=CeleryPublisher(args.broker, queue=queue))
    engine.upgrade()
    engine.deploy(reference_model())
    publisher = CeleryPublisher(args.broker, queue=queue)
    starters: dict[str, Callable[[int], list[str]]] = {
        "cli": lambda n: start_cli(url, env, n),
        "api": lambda n: start_api(url, env, n, interval),
        "django": lambda n: start_django(url, publisher, n, interval),
        "flask": lambda n: start_flask(url, publisher, n, interval),
    }
    commands = [
        worker_command("workers.app", queue, f"entry{i}-{queue}") for i in range(args.workers)
    ]
    beat_dir = tempfile.mkdtemp(prefix="bpm-bench-beat-")
    results: list[Figures] = []
    try:
        with processes(
            [*commands, beat_command("workers.app", Path(beat_dir))],
            env,
            prefix="bpm-bench-entry-",
        ) as logs:
            time.sleep(3)  # workers and beat up; beat's first sweep happens at its start
            for entry in chosen:
                ids = starters[entry](args.starts)
                results.append(Figures(entry, durations(engine, ids, 120)))
                print(results[-1].line(), flush=True)
            print(f"(worker and beat logs in {logs})")
    finally:
        engine.close()
        publisher.close()
        clean_queue(args.broker, queue)
        with psycopg.connect(args.pg, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    worst = max(f.percentile(99) for f in results)
    print(f"worst p99 over {', '.join(chosen)}: {worst * 1000:.1f} ms")


if __name__ == "__main__":
    main()
