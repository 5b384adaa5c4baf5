"""``bpm lint``, ``bpm deploy`` of files from other modelers, ``bpm schedules``, starting at a
chosen start event and suspending a definition: real subprocesses, real databases (``bpm
lint`` of a file, which reads nothing else, and the help pages run in-process: ``bpm_here``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import ROOT, bpm, bpm_here

DATA = ROOT / "tests" / "data" / "modeler"
HANDLERS = (
    "from bpm import service_task\n"
    "for name in {names!r}:\n"
    "    service_task(name)(lambda ctx: None)\n"
)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_lint_a_clean_file_exits_0() -> None:
    res = bpm_here("lint", str(DATA / "pass_through.bpmn"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert lines(res.stdout) == ["1 file(s): 0 error(s), 0 warning(s)"]


def test_lint_warnings_exit_0_or_1_with_strict() -> None:
    path = str(DATA / "warnings.bpmn")
    res = bpm_here("lint", path)
    assert res.returncode == 0, res.stdout + res.stderr
    warnings = [line for line in lines(res.stdout) if ": warning: " in line]
    # asyncBefore, asyncAfter, the end event's take listener (listeners run since issue
    # 25; its inputOutput is honoured since issue 10)
    assert len(warnings) == 3 and all(line.startswith(path) for line in warnings)
    assert any("camunda:executionListener" in line and "'end'" in line for line in warnings)
    strict = bpm_here("lint", "--strict", path)
    assert strict.returncode == 1 and strict.stdout == res.stdout


def test_lint_errors_exit_2_with_file_line_and_element(tmp_path: Path) -> None:
    broken = tmp_path / "broken.bpmn"
    text = (DATA / "pass_through.bpmn").read_text()
    broken.write_text(text.replace('targetRef="end"', 'targetRef="nowhere"'))
    res = bpm_here("lint", str(broken), str(DATA / "pass_through.bpmn"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    errors = [line for line in lines(res.stdout) if ": error: " in line]
    assert errors[0].startswith(f"{broken}:15: error: sequence flow 'f5' has target 'nowhere'")
    assert errors[0].endswith("[bpmn:sequenceFlow f5]")
    # 'end' lost its incoming flow: a warning since issue 21 (Camunda deploys it), and a
    # file with errors reports its errors only
    assert len(errors) == 1 and not any("cannot be reached" in line for line in errors)
    assert lines(res.stdout)[-1] == "2 file(s): 1 error(s), 0 warning(s)"
    missing = bpm_here("lint", str(tmp_path / "missing.bpmn"))
    assert missing.returncode == 2 and "cannot read the file" in missing.stdout


def test_lint_with_handlers_reports_the_missing_ones(tmp_path: Path) -> None:
    (tmp_path / "some_handlers.py").write_text(
        HANDLERS.format(names=("com.acme.ChargeCard", "billing.invoice", "mailer"))
    )
    res = bpm("lint", str(DATA / "bindings.bpmn"), "--handlers", "some_handlers", cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [line for line in lines(res.stdout) if ": error: " in line]
    named = sorted(line.split("no handler named '")[1].split("'")[0] for line in errors)
    assert named == ["org.acme.SendReceipt", "rules.score", "unbound"]
    assert any(":16: error:" in line and "by_activiti" in line for line in errors)
    every = (
        "com.acme.ChargeCard", "billing.invoice", "mailer", "org.acme.SendReceipt",
        "rules.score", "unbound",
    )  # fmt: skip
    (tmp_path / "all_handlers.py").write_text(HANDLERS.format(names=every))
    ok = bpm("lint", str(DATA / "bindings.bpmn"), "--handlers", "all_handlers", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_deploy_prints_every_process_and_the_warnings(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    assert bpm("db", "upgrade", "--db", db).returncode == 0
    res = bpm("deploy", str(DATA / "two_processes.bpmn"), "--db", db)
    assert res.returncode == 0, res.stdout + res.stderr
    out = " ".join(res.stdout.split())
    assert "deployed orders version 1" in out and "deployed billing version 1" in out
    assert "warning: process 'customer' is not executable" in out
    started = bpm("start", "orders", "--start-event", "phone_order", "--db", db)
    assert started.returncode == 0, started.stderr
    inst = started.stdout.split()[1]
    tasks = bpm("tasks", "--instance", inst, "--db", db)
    assert "type_in" in tasks.stdout


@pytest.mark.parametrize("command", ["lint", "schedules", "suspend-definition"])
def test_new_commands_have_help(command: str) -> None:
    res = bpm_here(command, "--help")
    assert res.returncode == 0 and "Usage" in res.stdout


def test_schedules_and_suspending_a_definition(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert bpm("db", "upgrade", "--db", db).returncode == 0
    assert bpm("deploy", str(DATA / "timer_start.bpmn"), "--db", db).returncode == 0
    listed = bpm("schedules", "--db", db)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "every_hour" in line)
    assert "nightly" in row and "cycle R3/PT1H" in row and "active" in row
    paused = bpm("suspend-definition", "nightly", "--db", db)
    assert paused.returncode == 0 and "1 version(s) suspended" in paused.stdout
    assert "paused" in bpm("schedules", "--db", db).stdout
    refused = bpm("start", "nightly", "--db", db)
    assert refused.returncode == 2 and "is suspended" in refused.stderr
    assert "active" in bpm("activate-definition", "nightly", "--db", db).stdout
    res = bpm("suspend-definition", "nope", "--db", db)
    assert res.returncode == 2 and "no process definition with key 'nope'" in res.stderr


def test_timers_loop_fires_timer_starts(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 't.db'}"
    assert bpm("db", "upgrade", "--db", db).returncode == 0
    model = tmp_path / "once.bpmn"
    model.write_text(
        (DATA / "timer_start.bpmn")
        .read_text()
        .replace(
            "<bpmn:timeCycle>R3/PT1H</bpmn:timeCycle>",
            "<bpmn:timeDate>2020-01-01T00:00:00Z</bpmn:timeDate>",
        )
    )
    assert bpm("deploy", str(model), "--db", db).returncode == 0
    res = bpm("timers", "--once", "--db", db)
    assert res.returncode == 0 and "fired 1 timer(s)" in res.stdout, res.stdout + res.stderr
    assert "every_hour" not in bpm("schedules", "--db", db).stdout  # ended: not listed
    ended = bpm("schedules", "--all", "--db", db).stdout
    assert "every_hour" in ended and "ended" in ended
    listed = bpm("instances", "--db", db)
    assert listed.stdout.count("nightly") == 1


EXTERNAL_WITH_LEASE = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
    xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn" id="d" targetNamespace="x">
  <bpmn:process id="leased" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge" />
    <bpmn:serviceTask id="charge" camunda:type="external" camunda:topic="pay"
        bpm:lease="PT5M" />
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="inline" />
    <bpmn:serviceTask id="inline" bpm:handler="h" bpm:lease="PT5M" />
    <bpmn:sequenceFlow id="f3" sourceRef="inline" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_lint_warns_that_bpm_lease_on_an_external_task_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "leased.bpmn"
    path.write_text(EXTERNAL_WITH_LEASE)
    res = bpm_here("lint", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    warnings = [line for line in lines(res.stdout) if ": warning: " in line]
    assert len(warnings) == 1, warnings  # the inline task's lease is honoured
    assert "'charge'" in warnings[0] and "bpm:lease" in warnings[0]
    assert "lockDuration" in warnings[0]
    assert bpm_here("lint", "--strict", str(path)).returncode == 1
