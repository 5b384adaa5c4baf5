"""The reference order process of the benchmarks and the end-to-end tests, as a model.

Built from model values (no parser) so the benchmark measures execution only."""

from __future__ import annotations

from bpm.model import nodes as n
from bpm.model.process import ProcessModel

ORDER_KEY = "order"
STEPS = ("validate", "reserve-stock", "charge-payment", "ship")


def order_model(key: str = ORDER_KEY) -> ProcessModel:
    """start -> validate -> (amount > 100) -> fork[reserve-stock, charge-payment] -> join
    -> ship -> end; small orders (the default flow) end at ``rejected``."""
    nodes: list[n.Node] = [
        n.StartEvent("start"),
        n.ServiceTask("validate", handler="validate"),
        n.ExclusiveGateway("big_enough", default_flow="f_small"),
        n.EndEvent("rejected"),
        n.ParallelGateway("fork"),
        n.ServiceTask("reserve-stock", handler="reserve-stock"),
        n.ServiceTask("charge-payment", handler="charge-payment"),
        n.ParallelGateway("join"),
        n.ServiceTask("ship", handler="ship"),
        n.EndEvent("end"),
    ]
    flows = (
        n.Flow("f_start", "start", "validate"),
        n.Flow("f_validated", "validate", "big_enough"),
        n.Flow("f_big", "big_enough", "fork", condition="amount > 100"),
        n.Flow("f_small", "big_enough", "rejected"),
        n.Flow("f_reserve", "fork", "reserve-stock"),
        n.Flow("f_charge", "fork", "charge-payment"),
        n.Flow("f_reserved", "reserve-stock", "join"),
        n.Flow("f_charged", "charge-payment", "join"),
        n.Flow("f_joined", "join", "ship"),
        n.Flow("f_shipped", "ship", "end"),
    )
    return ProcessModel(key=key, nodes={x.id: x for x in nodes}, flows=flows)
