"""``bpm migrate`` (issue 22): a generated plan, a dry run, a migration and its undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from bpm import Engine
from bpm.builder import Process
from bpm.trail import trail_table
from tests.engine_helpers import table_dump
from tests.test_cli import assert_user_error, bpm_here


def _model(*, b: bool = True) -> Any:
    p = Process("cli_mig").start("s").user_task("a").end("e")
    if b:
        return p.user_task("b").sequence("s", "a", "b", "e")
    return p.sequence("s", "a", "e")


def test_generate_dry_run_migrate_and_undo(sqlite_database_url: str, tmp_path: Path) -> None:
    db = sqlite_database_url
    engine = Engine(db)
    engine.upgrade()
    v1 = engine.deploy(_model(b=False))
    one, two = engine.start("cli_mig").id, engine.start("cli_mig").id
    v2 = engine.deploy(_model())
    shown = bpm_here("migrate", "--source", v1.id, "--target", v2.id, "--db", db)
    assert shown.returncode == 0, shown.stderr
    plan = json.loads(shown.stdout)
    assert plan["sourceProcessDefinitionId"] == v1.id
    assert {
        "sourceActivityIds": ["a"],
        "targetActivityIds": ["a"],
        "updateEventTrigger": False,
    } in (plan["instructions"])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    before = table_dump(engine)
    tried = bpm_here("migrate", str(path), "--all", "--dry-run", "--json", "--db", db)
    assert tried.returncode == 0, tried.stderr
    assert table_dump(engine) == before
    reports = json.loads(tried.stdout)["instanceReports"]
    assert {r["processInstanceId"] for r in reports} == {one, two}
    assert all(r["canMigrate"] and r["activityIds"] == ["a"] for r in reports)
    done = bpm_here("migrate", str(path), one[:8], two, "--annotation", "to v2", "--db", db)
    assert done.returncode == 0, done.stderr
    # the console may wrap the line: read the id without the white space
    said = "".join(done.stdout.split())
    operation = said.split("undo:bpmmigrate--undo")[1].split(")")[0]
    assert said.startswith(f"migrated2instancesto{v2.id}(operation{operation};")
    assert engine.get_instance(one).definition_id == v2.id
    wide = Console(width=300, record=True)
    wide.print(trail_table(engine.history(one)))
    assert f"{v1.id} -> {v2.id}; operation {operation}; to v2" in wide.export_text()
    # one instance advances; the undo moves the other back and names the one it refuses
    (task,) = engine.user_tasks(two)
    engine.complete_user_task(task.id)
    back = bpm_here("migrate", "--undo", operation, "--db", db)
    assert back.returncode == 1, back.stdout
    assert "moved back 1 instances" in back.stdout
    assert f"refused {two}" in " ".join(back.stdout.split())
    assert engine.get_instance(one).definition_id == v1.id
    assert engine.get_instance(two).definition_id == v2.id
    engine.close()


def test_a_plan_that_cannot_run_changes_nothing(sqlite_database_url: str, tmp_path: Path) -> None:
    db = sqlite_database_url
    engine = Engine(db)
    engine.upgrade()
    v1 = engine.deploy(_model())
    inst = engine.start("cli_mig").id
    v2 = engine.deploy(_model(b=False))
    path = tmp_path / "plan.json"
    path.write_text(
        json.dumps(
            {
                "migrationPlan": {
                    "sourceProcessDefinitionId": v1.id,
                    "targetProcessDefinitionId": v2.id,
                    "instructions": [
                        {"sourceActivityIds": ["a"], "targetActivityIds": ["nope"]},
                    ],
                },
                "processInstanceIds": [inst],
            }
        )
    )
    before = table_dump(engine)
    res = bpm_here("migrate", str(path), "--db", db)
    assert_user_error(res, "Target activity 'nope' does not exist")
    tried = bpm_here("migrate", str(path), "--dry-run", "--db", db)
    assert tried.returncode == 1
    assert "nope" in tried.stdout
    (tmp_path / "bad.json").write_text("[1]")
    assert_user_error(
        bpm_here("migrate", str(tmp_path / "bad.json"), inst, "--db", db), "not a JSON object"
    )
    assert_user_error(
        bpm_here("migrate", "--undo", "nope", "--db", db), "no migration with operation id"
    )
    assert table_dump(engine) == before
    engine.close()
