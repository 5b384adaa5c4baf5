"""`bpm show` indents the trail by scope and nests the trails of called instances."""

from __future__ import annotations

import json
from pathlib import Path

from bpm import Engine
from bpm.builder import Process
from tests.scopes_helpers import task_of
from tests.test_cli import bpm


def _setup(tmp_path: Path) -> tuple[str, str, str]:
    url = f"sqlite:///{tmp_path / 'show.db'}"
    engine = Engine(url)
    engine.upgrade()
    engine.deploy(
        Process("kid").start("ks").user_task("kid_work").end("ke").sequence("ks", "kid_work", "ke")
    )
    engine.deploy(
        Process("show")
        .start("s")
        .sub_process(
            "outer",
            lambda b: (
                b.start("os")
                .sub_process(
                    "inner",
                    lambda c: (
                        c.start("is")
                        .call_activity("deepest", "kid")
                        .end("ie")
                        .sequence("is", "deepest", "ie")
                    ),
                )
                .end("oe")
                .sequence("os", "inner", "oe")
            ),
        )
        .end("e")
        .sequence("s", "outer", "e")
    )
    inst = engine.start("show")
    (kid,) = engine.get_instance(inst.id).children
    engine.complete_user_task(task_of(engine, kid, "kid_work"))
    engine.close()
    return url, inst.id, kid


def test_show_indents_by_scope_and_nests_the_called_instance(tmp_path: Path) -> None:
    url, inst_id, kid = _setup(tmp_path)
    res = bpm("show", inst_id, "--db", url)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    node_cell = {
        name: next(line for line in lines if f" {name} " in line and "created" in line)
        for name in ("outer", "inner", "deepest")
    }
    # Each level of sub-process shifts the node two columns to the right.
    col = {name: line.index(name) for name, line in node_cell.items()}
    assert col["inner"] == col["outer"] + 2 and col["deepest"] == col["inner"] + 2
    assert f"called by {inst_id}: kid {kid}" in res.stdout
    kid_line = next(line for line in lines if "kid_work" in line)
    assert kid_line.index("kid_work") > col["outer"]  # the child's trail is indented
    assert res.stdout.count("state: completed") == 2


def test_show_json_nests_the_called_instance(tmp_path: Path) -> None:
    url, inst_id, kid = _setup(tmp_path)
    res = bpm("show", inst_id, "--db", url, "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [c["id"] for c in data["children"]] == [kid]
    assert data["children"][0]["parent_id"] == inst_id
    assert {s["node_id"] for s in data["scopes"]} == {"outer", "inner"}
    created = [e for e in data["history"] if e["type"] == "token_created"]
    depth = {e["node_id"]: e["payload"].get("depth", 0) for e in created}
    assert (depth["outer"], depth["os"], depth["is"], depth["deepest"]) == (0, 1, 2, 2)
