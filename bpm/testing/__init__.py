"""A test kit for process authors: a pytest plugin, an engine per test, time that moves
only when the test says so, handler doubles, readable assertions, BPMN coverage.

>>> def test_big_orders_wait_for_approval(bpm):
...     bpm.deploy("processes/order.bpmn")
...     bpm.mock("charge-card", returns={"charge_id": "c-1"})
...     order = bpm.start("order", {"amount": 250})
...     assert_that(order).is_waiting_at("approve").has_passed("validate")
...     bpm.advance("P3D")
...     assert_that(order).has_passed("escalate")

See ``docs/testing.md``.
"""

from __future__ import annotations

from bpm.testing.assertions import InstanceAssert, assert_that
from bpm.testing.case import ReplayMismatch, export_case, replay
from bpm.testing.clock import VirtualClock
from bpm.testing.coverage import Coverage, ProcessCoverage
from bpm.testing.doubles import Call, HandlerDouble
from bpm.testing.kit import BpmTest

__all__ = [
    "BpmTest",
    "Call",
    "Coverage",
    "HandlerDouble",
    "InstanceAssert",
    "ProcessCoverage",
    "ReplayMismatch",
    "VirtualClock",
    "assert_that",
    "export_case",
    "replay",
]
