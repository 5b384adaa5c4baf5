"""``bpm batches`` (issue 22, item 8): list, show with progress and failures, suspend,
resume, delete, and run the chunks in this process; operator actions of the CLI name
their author in the operation log."""

from __future__ import annotations

import json

from bpm import Engine, InstanceState
from bpm.builder import Process
from tests.test_cli import assert_user_error, bpm_here


def _setup(url: str, n: int = 3) -> tuple[Engine, list[str]]:
    engine = Engine(url)
    engine.upgrade()
    engine.deploy(Process("cli_b").start("s").user_task("a").end("e").sequence("s", "a", "e"))
    return engine, [engine.start("cli_b").id for _ in range(n)]


def test_list_show_run_and_history(sqlite_database_url: str) -> None:
    engine, ids = _setup(sqlite_database_url)
    batch = engine.batches.suspend_instances([*ids, "ghost"], chunk_size=2, by="ops")
    listed = bpm_here("batches", "--json", "--db", sqlite_database_url)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["id"], row["state"], row["total_items"], row["total_jobs"]) == (
        batch.id, "active", 4, 2,
    )  # fmt: skip
    ran = bpm_here("batches", "run", "--db", sqlite_database_url)
    assert ran.returncode == 0 and "applied 3 items" in ran.stdout, ran.stderr
    assert {engine.get_instance(i).state for i in ids} == {InstanceState.SUSPENDED}
    shown = bpm_here("batches", "show", batch.id, "--db", sqlite_database_url)
    assert shown.returncode == 0, shown.stderr
    assert "completed" in shown.stdout and "3/4 items, 1 failed; 2/2 chunks" in shown.stdout
    assert "failed ghost (chunk 1): process instance ghost does not exist" in shown.stdout
    detail = json.loads(bpm_here("batches", "show", batch.id, "--json", "--db",
                                 sqlite_database_url).stdout)  # fmt: skip
    assert [c["state"] for c in detail["chunks"]] == ["done", "done"]
    assert detail["failures"] == [{"item": "ghost", "reason": detail["failures"][0]["reason"],
                                   "chunk": 1}]  # fmt: skip
    # ended: no longer running, still in the history
    assert json.loads(bpm_here("batches", "--json", "--db", sqlite_database_url).stdout) == []
    every = json.loads(bpm_here("batches", "--all", "--json", "--db", sqlite_database_url).stdout)
    assert [b["id"] for b in every] == [batch.id]


def test_suspend_resume_delete_and_who_did_it(sqlite_database_url: str) -> None:
    engine, ids = _setup(sqlite_database_url)
    batch = engine.batches.set_variables(ids, {"x": 1}, chunk_size=1)
    for command, state in (("suspend", "suspended"), ("resume", "active")):
        res = bpm_here("batches", command, batch.id, "--db", sqlite_database_url)
        assert res.returncode == 0, res.stderr
        assert engine.batches.get(batch.id).state == state
    res = bpm_here("batches", "delete", batch.id, "--db", sqlite_database_url)
    assert res.returncode == 0, res.stderr
    assert engine.batches.get(batch.id).state == "deleted"
    assert engine.batches.run_ready() == 0  # its chunks were cancelled
    authors = {e.user_id for e in engine.operation_log() if e.entity_type == "Batch"}
    assert len(authors) == 1 and authors.pop().startswith("cli:")
    # the CLI's instance actions too
    assert bpm_here("suspend", ids[0], "--db", sqlite_database_url).returncode == 0
    (entry,) = [e for e in engine.operation_log() if e.operation_type == "Suspend"]
    assert entry.instance_id == ids[0] and entry.user_id.startswith("cli:")


def test_an_unknown_or_ended_batch_is_a_user_error(sqlite_database_url: str) -> None:
    engine, ids = _setup(sqlite_database_url, 1)
    assert_user_error(bpm_here("batches", "show", "nope", "--db", sqlite_database_url), "nope")
    batch = engine.batches.set_variables(ids, {"x": 1})
    engine.batches.run_ready()
    res = bpm_here("batches", "suspend", batch.id, "--db", sqlite_database_url)
    assert_user_error(res, "not running: it is completed")
    assert engine.batches.get(batch.id).state == "completed"
