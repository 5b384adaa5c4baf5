"""A trail becomes a test: bpm trail export, then bpm.testing.replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bpm import BpmnError, Engine, EngineConfig, InvalidOperation
from bpm.builder import Process
from bpm.cli import app
from bpm.handlers import HandlerRegistry
from bpm.local import LocalLoop
from bpm.testing import BpmTest, ReplayMismatch, assert_that, export_case, replay


def model(*, extra_task: bool = False) -> Process:
    p = (
        Process("case")
        .start("s")
        .service_task("a", handler="case.a")
        .user_task("u")
        .receive_message("m", "paid", correlation_key="order")
        .service_task("x", topic="pick")
        .timer("w", duration="PT1H")
        .service_task("b", handler="case.b")
        .boundary_error("err", attached_to="b", error_code="declined")
        .end("e")
        .end("e2")
        .sequence("s", "a", "u", "m", "x", "w")
        .sequence("b", "e")
        .sequence("err", "e2")
    )
    if extra_task:
        return p.user_task("check").sequence("w", "check", "b")
    return p.sequence("w", "b")


def record(kit: BpmTest) -> str:
    """Run an instance through every kind of input; returns its id."""
    kit.deploy(model())
    kit.mock("case.a", answers=[RuntimeError("flaky"), {"reserved": 1}])
    kit.mock("case.b", raises=BpmnError("declined", "card declined", {"reason": "limit"}))
    inst = kit.start("case", {"order": "o-1", "amount": 120})
    kit.complete(inst, "u", {"approved": True})
    kit.correlate("paid", {"paid": 120}, correlation_key="o-1")
    kit.fail(inst, "x", "scanner jammed", retries=1)
    kit.complete(inst, "x", {"picked": 3})
    kit.advance("PT1H")
    assert_that(inst, kit).is_completed().has_passed("e2")
    return inst.id


def test_an_exported_case_replays_on_the_same_model(bpm: BpmTest) -> None:
    source = BpmTest.create()
    try:
        case = export_case(source.engine, record(source))
        then = source.variables(case["instance"])
    finally:
        source.close()
    kinds = [(s["kind"], s["node"]) for s in case["steps"]]
    assert kinds == [
        ("handler", "a"),
        ("handler", "a"),
        ("user_task", "u"),
        ("message", "m"),
        ("external_failure", "x"),
        ("external_task", "x"),
        ("timer", "w"),
        ("handler", "b"),
    ]
    assert case["start"]["variables"] == {"order": "o-1", "amount": 120}
    assert case["steps"][1]["variables"] == {"reserved": 1}
    assert case["steps"][3]["variables"] == {"paid": 120}
    assert case["steps"][7]["code"] == "declined"
    bpm.deploy(model())
    again = replay(json.loads(json.dumps(case)))
    assert_that(again).is_completed().has_passed("e2").has_variables(**then)


def test_a_changed_model_fails_at_the_first_step_that_differs(bpm: BpmTest) -> None:
    source = BpmTest.create()
    try:
        case = export_case(source.engine, record(source))
    finally:
        source.close()
    bpm.deploy(model(extra_task=True))  # now a check waits between the timer and b
    with pytest.raises(ReplayMismatch) as caught:
        replay(case)
    assert caught.value.step == 8
    assert "step 8: the handler of 'b' threw declined; the replay never ran it" in str(caught.value)


def test_current_handlers_must_return_what_they_returned(bpm: BpmTest) -> None:
    source = BpmTest.create()
    try:
        case = export_case(source.engine, record(source))
    finally:
        source.close()
    bpm.deploy(model())
    bpm.mock("case.a", returns={"reserved": 2})  # the "current" code answers otherwise
    bpm.mock("case.b", raises=BpmnError("declined"))
    with pytest.raises(ReplayMismatch, match=r"step 1: the handler of 'a' failed: "):
        replay(case, handlers="current")


def test_a_case_file_path_and_a_missing_model(bpm: BpmTest, tmp_path: Path) -> None:
    source = BpmTest.create()
    try:
        case = export_case(source.engine, record(source))
    finally:
        source.close()
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    with pytest.raises(ValueError, match="process 'case' is not deployed"):
        replay(path)
    with pytest.raises(ValueError, match="not a case file"):
        replay({"format": "something else"})


def test_export_needs_the_values_in_the_history(tmp_path: Path) -> None:
    registry = HandlerRegistry()
    registry.register("case.a", lambda ctx: {"r": 1})
    engine = Engine(f"sqlite:///{tmp_path / 'bpm.db'}", registry=registry)
    try:
        engine.upgrade()
        loop = LocalLoop(engine)
        engine.deploy(
            Process("plain")
            .start("s")
            .service_task("a", handler="case.a")
            .end("e")
            .sequence("s", "a", "e")
        )
        inst = engine.start("plain", {"n": 1})
        loop.run_instance(inst.id)
        before = engine.history(inst.id)
        with pytest.raises(InvalidOperation, match="BPM_HISTORY_VALUES=1"):
            export_case(engine, inst.id)
        assert engine.history(inst.id) == before
    finally:
        engine.close()


def test_the_cli_exports_what_replay_runs(bpm: BpmTest, tmp_path: Path) -> None:
    registry = HandlerRegistry()
    registry.register("case.a", lambda ctx: {"r": ctx.variables["n"] * 2})
    url = f"sqlite:///{tmp_path / 'bpm.db'}"
    engine = Engine(url, registry=registry, config=EngineConfig(history_values=True))
    plain = (
        Process("plain")
        .start("s")
        .service_task("a", handler="case.a")
        .user_task("u")
        .end("e")
        .sequence("s", "a", "u", "e")
    )
    try:
        engine.upgrade()
        loop = LocalLoop(engine)
        engine.deploy(plain)
        inst = engine.start("plain", {"n": 21})
        loop.run_instance(inst.id)
        engine.complete_user_task(engine.user_tasks(inst.id)[0].id, {"ok": True})
        loop.run_instance(inst.id)
    finally:
        engine.close()
    result = CliRunner().invoke(app, ["trail", "export", inst.id, "--db", url])
    assert result.exit_code == 0, result.output
    (tmp_path / "case.json").write_text(result.output)
    bpm.deploy(plain)
    again = replay(tmp_path / "case.json")
    assert_that(again).is_completed().has_variables(n=21, r=42, ok=True)
    missing = CliRunner().invoke(app, ["trail", "export", "no-such-id", "--db", url])
    assert missing.exit_code == 2 and "no-such-id" in missing.output


def events(*, cancellable: bool = True) -> Process:
    p = (
        Process("events")
        .start("s")
        .receive_signal("go", "go-signal")
        .user_task("work")
        .end("done")
        .sequence("s", "go", "work", "done")
    )
    if cancellable:
        p = p.boundary_message("cancel", "work", "cancel-order").end("cancelled")
        p = p.sequence("cancel", "cancelled")
    return p


def test_signals_and_boundary_messages_are_replayed(bpm: BpmTest) -> None:
    source = BpmTest.create()
    try:
        source.deploy(events())
        inst = source.start("events")
        source.signal("go-signal", {"went": True})
        source.correlate("cancel-order", {"why": "late"}, instance=inst)
        assert_that(inst, source).is_completed().has_passed("cancelled")
        case = export_case(source.engine, inst.id)
    finally:
        source.close()
    assert [(s["kind"], s["node"]) for s in case["steps"]] == [
        ("signal", "go"),
        ("message", "cancel"),
    ]
    bpm.deploy(events())
    again = replay(case)
    assert_that(again).is_completed().has_passed("cancelled").has_variables(went=True, why="late")


def test_a_message_the_current_model_no_longer_waits_for_is_the_step_that_differs(
    bpm: BpmTest,
) -> None:
    source = BpmTest.create()
    try:
        source.deploy(events())
        inst = source.start("events")
        source.signal("go-signal")
        source.correlate("cancel-order", instance=inst)
        case = export_case(source.engine, inst.id)
    finally:
        source.close()
    bpm.deploy(events(cancellable=False))
    with pytest.raises(ReplayMismatch, match="step 2: message 'cancel-order' arrived at 'cancel'"):
        replay(case)
