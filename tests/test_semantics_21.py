"""Semantics as the peers' own tests define them (issue 21, item 1): the sixteen
behaviours, each on both backends. Models named ``camunda/...`` are Camunda 7's own test
files (Apache-2.0), copied unchanged into ``tests/conformance/models/`` (PROVENANCE there)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bpm.testing import BpmTest, assert_that

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
CAMUNDA = Path(__file__).parent / "conformance" / "models" / "camunda"


@pytest.fixture
def kit(database_url: str) -> Iterator[BpmTest]:
    """The test kit on each backend (a fresh database per test)."""
    k = BpmTest.create(database_url, start=T0)
    undo = k.activate()
    try:
        yield k
    finally:
        undo()
        k.close()


# -- 1. a parallel join fires when every incoming flow has a token, whatever fork -------


def test_unstructured_join_of_two_nested_forks_fires(kit: BpmTest) -> None:
    # ParallelGatewayTest.testUnstructuredConcurrencyTwoForks
    kit.deploy(CAMUNDA / "ParallelGatewayTest.testUnstructuredConcurrencyTwoForks.bpmn20.xml")
    inst = kit.start("unstructuredConcurrencyTwoForks")
    assert_that(inst).is_completed().has_passed("join", "theEnd").has_no_incidents()


def test_unstructured_two_joins_fire(kit: BpmTest) -> None:
    # ParallelGatewayTest.testUnstructuredConcurrencyTwoJoins
    kit.deploy(CAMUNDA / "ParallelGatewayTest.testUnstructuredConcurrencyTwoJoins.bpmn20.xml")
    inst = kit.start("unstructuredConcurrencyTwoJoins")
    assert_that(inst).is_completed().has_no_incidents()


def test_unbalanced_fork_join_waits_for_each_flow(kit: BpmTest) -> None:
    # ParallelGatewayTest.testUnbalancedForkJoin
    kit.deploy(CAMUNDA / "ParallelGatewayTest.testUnbalancedForkJoin.bpmn20.xml")
    inst = kit.start("UnbalancedForkJoin")
    assert sorted(kit.waiting_at(inst)) == ["task1", "task2", "task3"]
    kit.complete(inst, "task1")
    assert sorted(kit.waiting_at(inst)) == ["firstJoin", "task2", "task3"]
    kit.complete(inst, "task2")
    assert sorted(kit.waiting_at(inst)) == ["task3", "task4"]
    kit.complete(inst, "task3")
    assert_that(inst).is_active()
    kit.complete(inst, "task4")
    assert_that(inst).is_completed()
