"""bench.growth's filler writes what it says, in the months' partitions, and its bad
arguments are refused before any database is made."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from bench import growth
from bpm import Engine
from bpm.builder import Process


def test_the_filler_spreads_instances_and_history_over_the_months(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    try:
        engine.deploy(Process("grow").start("s").end("e").sequence("s", "e").build())
        growth.fill(engine, 120, 1200, datetime.now(UTC))
        with engine.db.connect() as conn:
            states = conn.execute(
                text("SELECT state, count(*) FROM process_instance GROUP BY 1")
            ).all()
            where = conn.execute(
                text("SELECT tableoid::regclass::text, count(*) FROM history GROUP BY 1")
            ).all()
        assert states == [("completed", 120)]
        assert sum(n for _, n in where) == 1200
        assert len(where) >= growth.MONTHS - 1  # spread over the months, not one partition
        assert all(name.startswith("history_p") for name, _ in where)
    finally:
        engine.close()


@pytest.mark.parametrize(
    "argv", [["--instances", "0"], ["--rounds", "0"], ["--block", "0"], ["--history-rows", "-1"]]
)
def test_bad_arguments_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        growth.main(argv)
    assert stopped.value.code == 2
    assert ">= 1" in capsys.readouterr().err
