"""Fixtures and helpers shared by the ported Camunda 7 tests (issue 21, item 2)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bpm.testing import BpmTest

MODELS = Path(__file__).parent / "models" / "camunda"
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def kit(database_url: str) -> Iterator[BpmTest]:
    """The test kit on each backend (a fresh database per test), its clock at T0."""
    k = BpmTest.create(database_url, start=T0)
    undo = k.activate()
    try:
        yield k
    finally:
        undo()
        k.close()
