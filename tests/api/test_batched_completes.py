"""Completes arriving together at the API are committed together, each answered alone."""

from __future__ import annotations

import asyncio

import httpx

from bpm import Engine
from bpm.api.app import create_app
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.test_complete_many import two_branches


def test_completes_that_arrive_together_share_transactions(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(two_branches())
    ids = [engine.start("pair").id for _ in range(10)]
    tasks = engine.fetch_and_lock(
        FetchRequest(worker_id="w1", max_tasks=20, topics=(TopicRequest("pay", 60_000),))
    )
    assert len(tasks) == 20
    app = create_app(engine, open_access=True, api_keys=[])

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            calls = [
                client.post(
                    f"/engine-rest/external-task/{t.id}/complete",
                    json={"workerId": "w1", "variables": {"n": {"value": 1}}},
                )
                for t in tasks
            ]
            calls.append(  # another worker's complete of a task w1 holds: refused alone
                client.post(
                    f"/engine-rest/external-task/{tasks[0].id}/complete",
                    json={"workerId": "w9"},
                )
            )
            return await asyncio.gather(*calls)

    answers = asyncio.run(run())
    assert [a.status_code for a in answers[:-1]] == [204] * 20
    # w9 came after (or with) w1's complete of the same task: refused either way, 400 or 404
    assert answers[-1].status_code in (400, 404), answers[-1].text
    assert answers[-1].headers["content-type"] == "application/json"
    batcher = app.state.completions
    assert 1 <= batcher.batches < 21  # fewer transactions than completes
    for i in ids:
        assert engine.get_instance(i).state.value == "completed"
    engine.close()
