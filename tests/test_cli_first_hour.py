"""The `bpm` command in a new user's first hour (issue 19): a missing extra is named, a
Python builder process runs, one database default, short ids, full ids, ``--json``, typed
``bpm vars set``, ``flask bpm`` and a ``bpm doctor`` verdict in words. Real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from bpm import Engine
from bpm.builder import Process
from tests.forked import run_bpm
from tests.test_cli import ROOT, assert_user_error

LOAN = ROOT / "examples" / "loan.py"


def bpm(
    *args: str, cwd: Path, env: dict[str, str] | None = None, blocked: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``bpm ARGS`` in ``cwd`` as a user runs it, a process of its own (forked from the
    zygote, tests/forked.py, which has the modules imported already); ``blocked`` modules
    import as if their extra were not installed (``sys.modules[name] = None`` before bpm
    starts: a new Python process, as the zygote has them imported)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("BPM_")}
    full_env.update(env or {})
    full_env["COLUMNS"] = "80"
    full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT), full_env.get("PYTHONPATH", "")])
    if not blocked:
        return run_bpm(args, env=full_env, cwd=cwd, timeout=120, argv0="bpm")
    code = (
        "import sys\n"
        f"for name in {list(blocked)!r}: sys.modules[name] = None\n"
        "sys.argv = ['bpm', *sys.argv[1:]]\n"
        "from bpm.cli import main\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
    )


def one_line_error(res: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert_user_error(res, fragments[0])
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    for fragment in fragments[1:]:
        assert fragment in res.stderr, res.stderr


# -- item 1: a missing extra is one line naming it ----------------------------------------


def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    res = bpm("api", "--insecure-no-auth", "--db", db, cwd=tmp_path, blocked=("uvicorn",))
    one_line_error(res, "`bpm api` needs the 'api' extra", 'pip install "bpm-celery[api]"')
    res = bpm("dev", "--db", db, cwd=tmp_path, blocked=("uvicorn",))
    one_line_error(res, 'pip install "bpm-celery[api]"', "--no-api")
    assert bpm("deploy", str(LOAN), "--db", db, cwd=tmp_path).returncode == 0
    broker = {"BPM_BROKER_URL": "redis://127.0.0.1:6379/15"}
    res = bpm("start", "loan", "--db", db, cwd=tmp_path, env=broker, blocked=("celery",))
    one_line_error(res, "BPM_BROKER_URL needs the 'celery' extra", '"bpm-celery[celery]"')
    (tmp_path / "my_worker.py").write_text("from bpm.worker import ExternalWorker\n")
    res = bpm("external-worker", "my_worker", cwd=tmp_path, blocked=("httpx",))
    one_line_error(res, "needs the 'worker' extra", '"bpm-celery[worker]"')
    # nothing was started by the refused `bpm start`
    engine = Engine(db)
    try:
        assert engine.instances() == []
    finally:
        engine.close()


def test_the_extras_named_exist_and_the_readme_names_them() -> None:
    from bpm.extras import EXTRA_OF_MODULE

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = set(pyproject["project"]["optional-dependencies"])
    assert set(EXTRA_OF_MODULE.values()) <= extras
    readme = (ROOT / "README.md").read_text()
    assert 'pip install "bpm-celery[celery,api]"' in readme
    for extra in set(EXTRA_OF_MODULE.values()):
        assert f"`{extra}`" in readme, extra


# -- item 2: a Python builder process -----------------------------------------------------

TWO = """
from bpm.builder import Process
a = Process("a").start("s").end("e").sequence("s", "e")
b = Process("b").start("s").end("e").sequence("s", "e")
note = "not a process"
"""


def test_run_and_deploy_a_python_builder_process(tmp_path: Path) -> None:
    res = bpm("run", str(LOAN), "--var", "amount=5000", cwd=tmp_path)
    assert res.returncode == 0, res.stderr + res.stdout
    assert "state: completed" in res.stdout and '"approved": true' in res.stdout
    res = bpm("run", f"{LOAN}:process", "--var", "amount=50000", cwd=tmp_path)
    assert res.returncode == 0 and '"approved": false' in res.stdout, res.stderr
    # module:attribute, from the current directory; unchanged content keeps its version
    res = bpm("deploy", "examples.loan:process", "--db", f"sqlite:///{tmp_path}/bpm.db", cwd=ROOT)
    assert res.returncode == 0 and "deployed loan version 1" in res.stdout, res.stderr
    (tmp_path / "two.py").write_text(TWO)
    res = bpm("deploy", "two.py", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "deployed a version 1" in res.stdout and "deployed b version 1" in res.stdout
    # a file named like a module already in use (the standard library's types) loads beside
    # it; not in the working directory, which `python -c` puts first on sys.path: there it
    # shadows the standard module for Python's own start-up (an editable install's finder
    # imports it from site), before bpm runs at all
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "types.py").write_text(
        TWO.replace('"a"', '"ty"').replace("b = ", "_b = ")
    )
    res = bpm("run", "models/types.py", cwd=tmp_path)
    assert res.returncode == 0 and "state: completed" in res.stdout, res.stderr


def test_a_python_source_that_is_not_a_process_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(TWO)
    (tmp_path / "none.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("x = 1\nraise RuntimeError('boom')\n")
    one_line_error(bpm("run", "two.py", cwd=tmp_path), "defines 2 processes", "two.py:a")
    one_line_error(bpm("run", "two.py:c", cwd=tmp_path), "two.py has no attribute 'c'")
    one_line_error(bpm("run", "two.py:note", cwd=tmp_path), "is a str, not a builder Process")
    one_line_error(bpm("deploy", "none.py", cwd=tmp_path), "defines no builder Process")
    one_line_error(bpm("deploy", "broken.py", cwd=tmp_path), "RuntimeError: boom", "broken.py:2")
    one_line_error(bpm("deploy", "no_such.mod:process", cwd=tmp_path), "no module named")
    one_line_error(bpm("deploy", "missing.py", cwd=tmp_path), "missing.py is not a file")
    assert not (tmp_path / "bpm.db").exists()  # nothing was deployed anywhere


# -- item 3: one database default ---------------------------------------------------------


def test_every_command_finds_the_database_bpm_run_made(tmp_path: Path) -> None:
    res = bpm("run", str(LOAN), "--var", "amount=5", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    listed = json.loads(bpm("instances", "--json", cwd=tmp_path).stdout)
    assert [i["state"] for i in listed] == ["completed"]
    shown = bpm("show", listed[0]["id"], "--json", cwd=tmp_path)
    assert shown.returncode == 0 and json.loads(shown.stdout)["state"] == "completed"
    assert bpm("incidents", cwd=tmp_path).stdout.strip() == "no open incidents"


def test_without_a_database_a_reading_command_says_where_it_looked(tmp_path: Path) -> None:
    for args in (["show", "abc"], ["instances"], ["retry", "abc"], ["vars", "list", "abc"]):
        one_line_error(bpm(*args, cwd=tmp_path), "no database: ./bpm.db (the default)", "--db")
    assert list(tmp_path.iterdir()) == []  # no empty bpm.db was left behind


def test_run_help_states_one_default(tmp_path: Path) -> None:
    text = " ".join(bpm("run", "--help", cwd=tmp_path).stdout.replace("│", " ").split())
    assert text.count("bpm.db") == 1, text
    assert "$BPM_DATABASE_URL, else sqlite:///bpm.db" in text


# -- item 4: short ids, full ids in tables, --json ----------------------------------------


def _instances(db: str, count: int) -> list[str]:
    engine = Engine(db)
    try:
        engine.upgrade()
        engine.deploy(Process("wait").start("s").user_task("t").end("e").sequence("s", "t", "e"))
        return [engine.start("wait").id for _ in range(count)]
    finally:
        engine.close()


def test_a_unique_prefix_is_an_id_and_an_ambiguous_one_changes_nothing(
    pg_database_url: str, tmp_path: Path
) -> None:
    db = pg_database_url
    ids = _instances(db, 17)  # 17 ids, 16 hex digits: two share their first character
    first = {i[0] for i in ids}
    shared = next(c for c in sorted(first) if sum(i.startswith(c) for i in ids) > 1)
    sharing = sorted(i for i in ids if i.startswith(shared))
    res = bpm("terminate", shared, "--db", db, cwd=tmp_path)
    one_line_error(res, f"'{shared}' is ambiguous", sharing[0], sharing[1], "more characters")
    engine = Engine(db)
    try:
        assert {engine.get_instance(i).state.value for i in ids} == {"active"}
        target = ids[0]
        prefix = next(
            target[:n] for n in range(1, 37) if sum(i.startswith(target[:n]) for i in ids) == 1
        )
        res = bpm("suspend", prefix, "--db", db, cwd=tmp_path)
        assert res.returncode == 0 and f"{target}: suspended" in res.stdout, res.stderr
        assert engine.get_instance(target).state.value == "suspended"
        assert {engine.get_instance(i).state.value for i in ids[1:]} == {"active"}
        task = engine.user_tasks(target)[0]
        done = bpm("complete-task", task.id[:12], "--db", db, cwd=tmp_path)
        assert done.returncode == 2 and "suspended" in done.stderr  # the full id was found
        one_line_error(bpm("show", "%", "--db", db, cwd=tmp_path), "no instance id is")
        one_line_error(bpm("show", "zz", "--db", db, cwd=tmp_path), "no instance id is")
        shown = json.loads(bpm("show", prefix, "--json", "--db", db, cwd=tmp_path).stdout)
        assert shown["id"] == target
    finally:
        engine.close()


def test_tables_never_cut_an_id_and_every_list_has_json(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    ids = _instances(db, 2)
    listed = bpm("instances", "--db", db, cwd=tmp_path)  # at 80 columns
    assert listed.returncode == 0, listed.stderr
    assert all(i in listed.stdout for i in ids) and "…" not in listed.stdout
    tasks = bpm("tasks", "--db", db, cwd=tmp_path)
    assert all(i in tasks.stdout for i in ids) and "…" not in tasks.stdout
    for args, key in (
        (["instances"], "id"),
        (["tasks"], "instance_id"),
        (["incidents"], "id"),
        (["schedules"], "id"),
    ):
        res = bpm(*args, "--json", "--db", db, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        rows = json.loads(res.stdout)
        assert isinstance(rows, list)
        if args[0] in ("instances", "tasks"):
            assert sorted(r[key] for r in rows) == sorted(ids)


# -- item 11: typed bpm vars set, flask bpm, a doctor verdict ------------------------------


def test_vars_set_types_values_as_the_rest_api_does(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    [inst] = _instances(db, 1)
    res = bpm(
        "vars", "set", inst[:8], "n:Integer=3", "id:String=007", "big:Long=5",
        "when:Date=2026-12-01T10:00:00", "doc:Json={\"a\": 1}", "plain=[1, 2]", "--db", db,
        cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"{inst}: n = 3 (Integer)" in res.stdout and 'id = "007" (String)' in res.stdout
    listed = {v["name"]: v for v in json.loads(bpm("vars", "list", inst, "--json", "--db", db,
                                                   cwd=tmp_path).stdout)}  # fmt: skip
    assert listed["n"] == {"name": "n", "type": "Integer", "value": 3}
    assert listed["id"]["value"] == "007" and listed["big"]["type"] == "Long"
    assert listed["when"]["type"] == "Date"
    assert listed["when"]["value"] == "2026-12-01T10:00:00.000+0000"
    assert listed["doc"]["type"] == "Json" and listed["doc"]["value"] == {"a": 1}
    assert listed["plain"]["value"] == [1, 2]
    engine = Engine(db)
    try:
        before = engine.get_instance(inst).variables
        for bad, said in (
            ("n:Integer=three", "Cannot convert value 'three' of variable 'n' to type Integer"),
            ("n:Decimal=3", "unknown type 'Decimal'"),
            ("novalue", "is not NAME=VALUE"),
        ):
            res = bpm("vars", "set", inst, "ok:Integer=1", bad, "--db", db, cwd=tmp_path)
            one_line_error(res, said)
        assert engine.get_instance(inst).variables == before  # a bad value changes nothing
    finally:
        engine.close()


FLASK_APP = """
import os
from flask import Flask
from bpm.contrib.flask import BPM
app = Flask(__name__)
app.config["BPM_DATABASE_URL"] = os.environ["APP_DATABASE_URL"]
BPM(app)
"""


def test_flask_bpm_runs_the_cli_on_the_apps_engine(tmp_path: Path) -> None:
    (tmp_path / "tinyapp.py").write_text(FLASK_APP)
    db = f"sqlite:///{tmp_path / 'app.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPM_")}
    env.update(APP_DATABASE_URL=db, COLUMNS="200", PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}")

    def flask(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flask", "--app", "tinyapp", "bpm", *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip

    assert "Usage: flask bpm" in flask("--help").stdout
    assert flask("deploy", str(LOAN)).returncode == 0
    started = flask("start", "loan", "--var", "amount=7")
    assert started.returncode == 0, started.stderr
    listed = json.loads(flask("instances", "--json").stdout)
    assert [i["process"] for i in listed] == ["loan"]
    bad = flask("show", "no-such-instance")
    assert bad.returncode == 2 and "no instance id is" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "bpm.db").exists()  # the app's database, not the CLI's default


def test_doctor_gives_its_verdict_in_words(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert bpm("db", "upgrade", "--db", db, cwd=tmp_path).returncode == 0
    ok = bpm("doctor", "--db", db, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "verdict: this host is ready (database, migrations, handlers ok)." in ok.stdout
    down = bpm("doctor", "--db", "postgresql+psycopg://nobody@127.0.0.1:1/x", cwd=tmp_path)
    assert down.returncode == 1
    verdict = [line for line in down.stdout.splitlines() if line.startswith("verdict:")]
    assert verdict and verdict[0].startswith(
        "verdict: this host is not ready: the database does not answer (connection failed"
    ), down.stdout
    assert "OperationalError" not in down.stdout and "Traceback" not in down.stderr
