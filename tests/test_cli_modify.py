"""``bpm modify`` (issue 22): the tree, instructions from options and from a plan file."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from bpm import Engine
from bpm.builder import Process
from bpm.trail import trail_table
from tests.scopes_helpers import open_tasks
from tests.test_cli import assert_user_error, bpm_here


def _setup(url: str) -> tuple[Engine, str]:
    engine = Engine(url)
    engine.upgrade()
    engine.deploy(
        Process("cli_mod")
        .start("s")
        .user_task("a")
        .user_task("b")
        .end("e")
        .sequence("s", "a", "b", "e")
    )
    return engine, engine.start("cli_mod").id


def test_modify_moves_a_token_and_prints_the_tree(sqlite_database_url: str) -> None:
    engine, inst = _setup(sqlite_database_url)
    shown = bpm_here("modify", inst[:8], "--json", "--db", sqlite_database_url)
    assert shown.returncode == 0, shown.stderr
    tree = json.loads(shown.stdout)
    assert [c["activity_id"] for c in tree["children"]] == ["a"]
    res = bpm_here(
        "modify", inst, "--start-before", "b", "--var", "why=late", "--cancel", "a",
        "--annotation", "moved by hand", "--db", sqlite_database_url,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "b userTask" in res.stdout
    assert open_tasks(engine, inst) == ["b"]
    assert engine.get_instance(inst).variables == {"why": "late"}
    (event,) = [e for e in engine.history(inst) if e.type == "instance_modified"]
    assert event.payload["by"].startswith("cli:")
    assert event.payload["annotation"] == "moved by hand"
    # `bpm show`'s trail says who did it, what and why (rendered wide: the CLI's own
    # console takes the terminal's width)
    wide = Console(width=300, record=True)
    wide.print(trail_table(engine.history(inst)))
    shown_trail = wide.export_text()
    assert "startBeforeActivity b, cancel a; moved by hand" in shown_trail
    assert "by cli:" in shown_trail
    engine.close()


def test_a_plan_file_and_a_bad_instruction(sqlite_database_url: str, tmp_path: Path) -> None:
    engine, inst = _setup(sqlite_database_url)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "annotation": "plan",
                "instructions": [
                    {"type": "startAfterActivity", "activityId": "a"},
                    {"type": "cancel", "activityId": "nowhere"},
                ],
            }
        )
    )
    res = bpm_here("modify", inst, "--plan", str(plan), "--db", sqlite_database_url)
    assert_user_error(res, "activity 'nowhere' does not exist")
    assert open_tasks(engine, inst) == ["a"]  # nothing applied
    plan.write_text(
        json.dumps(
            {
                "instructions": [
                    {"type": "startAfterActivity", "activityId": "a",
                     "variables": {"n": {"value": 3, "type": "Integer"}}},
                    {"type": "cancel", "activityId": "a"},
                ]
            }
        )
    )  # fmt: skip
    res = bpm_here("modify", inst, "--plan", str(plan), "--db", sqlite_database_url)
    assert res.returncode == 0, res.stderr
    assert open_tasks(engine, inst) == ["b"]
    assert engine.get_instance(inst).variables == {"n": 3}
    engine.close()
