"""The kit on a PostgreSQL database it was given (--bpm-database): the only kit test that
needs PostgreSQL, as the option does."""

from __future__ import annotations

from bpm.builder import Process
from bpm.testing import BpmTest, assert_that


def test_the_given_database_is_migrated_and_emptied_before_each_test(
    pg_database_url: str,
) -> None:
    model = Process("pg").start("s").timer("wait", duration="P1D").end("e")
    model = model.sequence("s", "wait", "e")
    first = BpmTest.create(pg_database_url)
    try:
        first.deploy(model)
        inst = first.start("pg")
        assert_that(inst, first).is_waiting_at("wait")
        first.advance("P1D")
        assert_that(inst, first).is_completed().has_passed("wait")
    finally:
        first.close()
    second = BpmTest.create(pg_database_url)
    try:
        assert second.engine.instances() == [] and second.engine.definitions() == []
    finally:
        second.close()
