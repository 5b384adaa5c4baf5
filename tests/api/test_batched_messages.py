"""Messages arriving together at ``POST /message`` are committed together, each answered
alone (a refused one answers Camunda's 400 and changes nothing)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from bpm import Engine, InstanceState
from bpm.api.app import create_app
from bpm.api.batching import GroupCommit
from bpm.builder import Process


def test_messages_that_arrive_together_share_transactions(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(
        Process("pay")
        .start("s")
        .receive_message("paid", "payment", correlation_key="order")
        .end("e")
        .sequence("s", "paid", "e")
        .build()
    )
    ids = [engine.start("pay", {"order": f"o{i}"}).id for i in range(20)]
    app = create_app(engine, open_access=True, api_keys=[])

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            calls = [
                client.post(
                    "/engine-rest/message",
                    json={
                        "messageName": "payment",
                        "correlationKey": f"o{i}",
                        "processVariables": {"n": {"value": i}},
                        "resultEnabled": i == 0,
                    },
                )
                for i in range(20)
            ]
            calls.append(  # nothing waits for this key: refused alone
                client.post(
                    "/engine-rest/message",
                    json={"messageName": "payment", "correlationKey": "nobody"},
                )
            )
            return await asyncio.gather(*calls)

    answers = asyncio.run(run())
    assert answers[0].status_code == 200, answers[0].text
    assert answers[0].json()[0]["resultType"] == "Execution"
    assert answers[0].json()[0]["execution"]["processInstanceId"] == ids[0]
    assert [a.status_code for a in answers[1:-1]] == [204] * 19
    refused = answers[-1]
    assert refused.status_code == 400 and "'nobody'" in refused.json()["message"]
    assert "MismatchingMessageCorrelationException" in refused.json()["message"]
    assert 1 <= app.state.messages.batches < 21  # fewer transactions than messages
    for i, iid in enumerate(ids):
        inst = engine.get_instance(iid)
        assert inst.state is InstanceState.COMPLETED and inst.variables["n"] == i
    engine.close()


def test_a_batch_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_batch must be at least 1, got 0"):
        GroupCommit(list, lambda call: call, max_batch=0)
