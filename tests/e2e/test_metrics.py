"""Metrics and JSON logs of real Celery processes: a prefork worker with two children
serves the sum of their counters on BPM_METRICS_PORT, equal to the history's counts, and
logs one JSON line per step outcome; beat serves its timers' lateness."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bpm import Engine
from bpm.builder import Process
from tests.api.conftest import free_port
from tests.e2e.checks import wait_ended
from tests.e2e.processes import STEPS, order_model
from tests.e2e.procs import CeleryProcess, start_worker
from tests.support import eventually

pytestmark = pytest.mark.slow

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    r = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert r.status_code == 200, r.text
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def served_at(port: int) -> Samples | None:
    """The samples, or None while nothing listens on the port yet."""
    try:
        return scrape(port)
    except httpx.ConnectError:
        return None


def counter(samples: Samples, name: str, node: str, definition: str = "order") -> float:
    return samples.get((name, (("definition", definition), ("node", node))), 0.0)


def history_by_node(engine: Engine, ids: list[str]) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for iid in ids:
        for e in engine.history(iid):
            out[(e.type, e.node_id or "")] += 1
    return out


def step_lines(worker: CeleryProcess) -> list[dict[str, Any]]:
    out = []
    for line in worker.log().splitlines():
        if line.startswith("{") and '"step_finished"' in line:
            out.append(json.loads(line))
    return out


def test_a_prefork_worker_serves_step_counters_equal_to_the_history(
    celery_engine: Engine,
    worker_env: dict[str, str],
    queue: str,
    tmp_path: Path,
    tag: str,
) -> None:
    port = free_port()
    env = {**worker_env, "BPM_METRICS_PORT": str(port), "BPM_LOG_FORMAT": "json"}
    worker = start_worker(env, queue, tmp_path, children=2)
    try:
        eventually(lambda: served_at(port), what="the worker's /metrics")
        celery_engine.deploy(order_model())
        base = {"amount": 120, "tag": tag}
        calm = [celery_engine.start("order", base).id for _ in range(4)]
        flaky = [
            celery_engine.start("order", {**base, "fail_at": "charge-payment"}).id for _ in range(2)
        ]
        broken = celery_engine.start(
            "order", {**base, "fail_at": "reserve-stock", "fail_attempts": 9}
        ).id
        for iid in calm + flaky:
            wait_ended(celery_engine, iid)
        eventually(lambda: celery_engine.incidents(broken), what="the incident of 'broken'")
        ids = [*calm, *flaky, broken]
        history = history_by_node(celery_engine, ids)

        def expected(node: str) -> dict[str, float]:
            failed = history[("step_failed", node)]
            return {
                "bpm_steps_started_total": history[("token_executing", node)],
                "bpm_steps_completed_total": history[("token_completed", node)],
                "bpm_steps_retried_total": history[("attempt_failed", node)] - failed,
                "bpm_steps_failed_total": failed,
            }

        def served(node: str) -> dict[str, float]:
            samples = scrape(port)
            return {name: counter(samples, name, node) for name in expected(node)}

        for node in STEPS:
            # Counted after each commit: poll until the last one is in.
            eventually(
                lambda node=node: served(node) == expected(node),
                timeout=10,
                what=f"counters of {node} = {expected(node)}; served {served(node)}",
            )
        # What the scenario made happen, counted by the children, served by the parent.
        assert counter(scrape(port), "bpm_steps_retried_total", "charge-payment") == 2
        assert counter(scrape(port), "bpm_steps_failed_total", "reserve-stock") == 1
        assert counter(scrape(port), "bpm_steps_retried_total", "reserve-stock") == 2

        # One JSON line per attempt, as many as the history's attempts.
        attempts: Counter[tuple[str, str, int]] = Counter()
        for iid in ids:
            for e in celery_engine.history(iid):
                if e.type == "token_executing":
                    attempts[(iid, e.node_id or "", int(e.payload["attempt"]))] += 1
        eventually(
            lambda: (
                Counter((x["instance"], x["node"], x["attempt"]) for x in step_lines(worker))
                == attempts
            ),
            timeout=10,
            what="one JSON line per attempt",
        )
        outcomes = Counter(x["outcome"] for x in step_lines(worker))
        assert outcomes == {
            "completed": sum(v for k, v in history.items() if k[0] == "token_completed"
                             and k[1] in STEPS),
            "retried": 4,
            "failed": 1,
        }  # fmt: skip
        pids = {x["worker"].rsplit(":", 1)[-1] for x in step_lines(worker)}
        assert str(worker.pid) not in pids  # the children ran them, the parent served them
    finally:
        worker.stop()


def test_beat_serves_the_lateness_of_the_timers_it_fired(
    silent_engine: Engine, start_beat_process: Any
) -> None:
    port = free_port()
    start_beat_process(BPM_METRICS_PORT=str(port))
    eventually(lambda: served_at(port), what="beat's /metrics")
    model = (
        Process("pause")
        .start("start")
        .timer("wait", duration=timedelta(milliseconds=300))
        .end("end")
        .sequence("start", "wait", "end")
        .build()
    )
    silent_engine.deploy(model)
    ids = [silent_engine.start("pause").id for _ in range(3)]
    for iid in ids:
        wait_ended(silent_engine, iid)
    fired = sum(1 for i in ids for e in silent_engine.history(i) if e.type == "timer_fired")
    assert fired == 3

    def lateness_count() -> float:
        return scrape(port).get(("bpm_timer_lateness_seconds_count", (("kind", "delay"),)), 0.0)

    eventually(lambda: lateness_count() == fired, timeout=10, what="3 timers counted")
    total = scrape(port)[("bpm_timer_lateness_seconds_sum", (("kind", "delay"),))]
    assert total >= 0
