"""Small processes and a recording dispatcher shared by the engine tests."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from bpm import Engine, EngineConfig
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.model.process import ProcessModel
from bpm.runtime.states import LIVE_TOKEN_STATES


class QueueDispatcher:
    """Records published token ids so a test decides when (and how often) they run."""

    def __init__(self) -> None:
        self.queue: deque[str] = deque()
        self.published: list[str] = []

    def dispatch(self, token_ids: Sequence[str]) -> None:
        self.queue.extend(token_ids)
        self.published.extend(token_ids)


#: Engines :func:`make_engine` made in the running test; ``tests/conftest.py`` closes them
#: after it (most tests never close theirs: their pooled connections were reported as
#: unclosed, ResourceWarning, in whichever later test the garbage collector ran).
made: list[Engine] = []


def make_engine(
    url: str, registry: HandlerRegistry | None = None, config: EngineConfig | None = None
) -> tuple[Engine, QueueDispatcher]:
    q = QueueDispatcher()
    engine = Engine(
        url, dispatcher=q, registry=registry or HandlerRegistry(), config=config or EngineConfig()
    )
    made.append(engine)
    return engine, q


def forget(engine: Engine) -> None:
    """Drop ``engine`` from :data:`made` (a test that closes its engines itself and checks
    that nothing references them any more)."""
    made.remove(engine)


def close_made_engines() -> None:
    """Close the engines :func:`make_engine` made (closing one twice is harmless)."""
    while made:
        made.pop().close()


def drain(engine: Engine, q: QueueDispatcher, limit: int = 1000) -> int:
    """Run every published step until nothing is left; returns how many steps ran."""
    ran = 0
    while q.queue and limit:
        ran += engine.run_token(q.queue.popleft())
        limit -= 1
    return ran


def order_process(key: str = "order") -> ProcessModel:
    """The reference process: validate -> amount > 100 ? fork[reserve, charge] -> ship."""
    return (
        Process(key, name="Order")
        .start("start")
        .service_task("validate", handler="validate-order")
        .exclusive("amount_check")
        .parallel("fork")
        .service_task("reserve", handler="reserve-stock")
        .service_task("charge", handler="charge-payment")
        .parallel("join")
        .service_task("ship", handler="ship-order")
        .end("end")
        .sequence("start", "validate", "amount_check")
        .flow("amount_check", "fork", condition="${amount > 100}", id="big")
        .flow("amount_check", "ship", id="small", default=True)
        .flow("fork", "reserve")
        .flow("fork", "charge")
        .flow("reserve", "join")
        .flow("charge", "join")
        .sequence("join", "ship", "end")
        .build()
    )


def order_registry(calls: list[str] | None = None) -> HandlerRegistry:
    reg = HandlerRegistry()
    for name in ("validate-order", "reserve-stock", "charge-payment", "ship-order"):

        def handler(ctx: TaskContext, name: str = name) -> dict[str, Any]:
            if calls is not None:
                calls.append(name)
            return {name.replace("-", "_"): True}

        reg.register(name, handler)
    return reg


def table_dump(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every engine table, to prove an operation changed nothing."""
    from sqlalchemy import select

    from bpm.store.tables import metadata

    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.db.connect() as conn:
        for table in metadata.sorted_tables:
            rows = conn.execute(select(table)).all()
            out[table.name] = sorted((tuple(r) for r in rows), key=repr)
    return out


def live(engine: Engine, instance_id: str) -> list[str]:
    return [
        t.node_id for t in engine.get_instance(instance_id).tokens if t.state in LIVE_TOKEN_STATES
    ]


def claim_one(core: Any, token_id: str, worker: str, now: Any) -> Any:
    """Claim exactly one step (no batch): its Claimed, or None when the claim lost."""
    from bpm.engine.execution import claim

    steps = claim(core, worker, now, first=token_id, more=0)
    return steps[0] if steps else None


def finish_one(core: Any, step: Any, outcome: Any, worker: str, now: Any) -> list[Any]:
    """Finish one claimed step; returns the steps claimed by continuation."""
    from bpm.engine.execution import finish

    return finish(core, [(step, outcome)], worker, now)
