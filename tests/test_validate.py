"""Model validation, ISO 8601 timer expressions and retry specs (no XML involved)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from bpm.bpmn import RetrySpecError, parse_retry, parse_retry_cycle
from bpm.errors import DeploymentError
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.model.validate import check_model, validate
from bpm.retry import RetryPolicy
from bpm.timeexpr import (
    TimerError,
    check,
    parse_cycle,
    parse_date,
    parse_duration,
    resolve,
    variable_name,
)

NOW = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


def model(*items: n.Node | n.Flow) -> ProcessModel:
    nodes = {x.id: x for x in items if isinstance(x, n.Node)}
    flows = tuple(x for x in items if isinstance(x, n.Flow))
    return ProcessModel(key="p", nodes=nodes, flows=flows)


def simple(*extra: n.Node | n.Flow) -> ProcessModel:
    return model(
        n.StartEvent("s"),
        n.ServiceTask("t", handler="h"),
        n.EndEvent("e"),
        n.Flow("f1", "s", "t"),
        n.Flow("f2", "t", "e"),
        *extra,
    )


def messages(m: ProcessModel) -> list[str]:
    with pytest.raises(DeploymentError) as info:
        validate(m)
    return [str(p) for p in info.value.problems]


def test_valid_model_passes_unchanged() -> None:
    m = simple()
    assert validate(m) == m
    assert check_model(m) == ([], [])


def test_all_problems_are_listed() -> None:
    m = model(
        n.ServiceTask("t", handler="h", topic="x", line=3),
        n.Flow("f", "t", "missing", line=4),
    )
    found = messages(m)
    assert any("no start event" in x for x in found)
    assert any("target 'missing'" in x and "line 4" in x for x in found)
    assert any("both handler" in x and "line 3" in x for x in found)


def test_boundary_events_are_reachable_through_their_task() -> None:
    m = simple(
        n.BoundaryEvent("b", attached_to="t", timer=n.TimerSpec(n.TimerKind.DURATION, "PT1M")),
        n.BoundaryEvent("err", attached_to="t", error_code="E"),
        n.Flow("fb", "b", "e"),
        n.Flow("fe", "err", "e"),
    )
    assert validate(m) == m


def test_error_boundary_without_outgoing_flow_ends_its_path() -> None:
    m = simple(n.BoundaryEvent("err", attached_to="t"))  # BPMN: the token ends there
    assert validate(m) == m
    # a gateway too (BPMN 13.2.1's implicit end, as Camunda deploys it: issue 21, item 9)
    gateway = simple(n.ExclusiveGateway("g"), n.Flow("f3", "t", "g"))
    assert validate(gateway) == gateway
    # an event-based gateway without events after it would wait for ever
    waits = simple(n.EventBasedGateway("g"), n.Flow("f3", "t", "g"))
    assert any("event-based gateway 'g' has no outgoing" in x for x in messages(waits))


def test_non_interrupting_error_boundary_is_refused() -> None:
    m = simple(
        n.BoundaryEvent("err", attached_to="t", cancel_activity=False), n.Flow("x", "err", "e")
    )
    assert any("always interrupt" in x for x in messages(m))


def test_exclusive_without_default_warns() -> None:
    m = model(
        n.StartEvent("s"),
        n.ExclusiveGateway("g"),
        n.EndEvent("e"),
        n.Flow("f1", "s", "g"),
        n.Flow("a", "g", "e", "x > 1"),
        n.Flow("b", "g", "e", "x <= 1"),
    )
    checked = validate(m)
    assert checked == m
    assert any("'g' has no default flow" in w for w in checked.warnings)


def test_unconditioned_non_default_flow_out_of_exclusive_is_taken_with_a_warning() -> None:
    m = model(
        n.StartEvent("s"),
        n.ExclusiveGateway("g", default_flow="a"),
        n.EndEvent("e"),
        n.Flow("f1", "s", "g"),
        n.Flow("a", "g", "e"),
        n.Flow("b", "g", "e"),
        n.Flow("c", "g", "e", "x > 1"),
    )
    (warning,) = validate(m).warnings
    assert "'b' leaves exclusive gateway 'g' without a condition" in warning
    assert "so c are never taken" in warning


def test_condition_on_a_flow_leaving_an_activity_is_accepted() -> None:
    # Issue 20 item 3: BPMN's conditional flows out of activities are run, not refused.
    m = simple(n.Flow("f3", "t", "e", "x > 1"))
    assert validate(m) == m and m.branching == frozenset({"t"})
    bad = simple(n.Flow("f3", "t", "e", "x >"))
    assert any("flow 'f3'" in x and "does not compile" in x for x in messages(bad))
    # leaving a start event too, as Camunda's suite uses them (issue 21, item 10)
    on_start = model(n.StartEvent("s"), n.EndEvent("e"), n.Flow("f1", "s", "e", "x > 1"))
    assert validate(on_start) == on_start
    bad_start = model(n.StartEvent("s"), n.EndEvent("e"), n.Flow("f1", "s", "e", "x >"))
    assert any("flow 'f1'" in x for x in messages(bad_start))
    on_end_of_catch = model(
        n.StartEvent("s"),
        n.TimerCatchEvent("w", timer=n.TimerSpec(n.TimerKind.DURATION, "PT1M")),
        n.EndEvent("e"),
        n.Flow("f1", "s", "w"),
        n.Flow("f2", "w", "e", "x > 1"),
    )
    assert any("not a gateway or an activity" in x for x in messages(on_end_of_catch))


def test_timer_catch_without_timer_and_with_bad_spec() -> None:
    base = (n.StartEvent("s"), n.EndEvent("e"), n.Flow("f1", "s", "w"), n.Flow("f2", "w", "e"))
    assert any("has no timer" in x for x in messages(model(n.TimerCatchEvent("w"), *base)))
    bad = n.TimerCatchEvent("w", timer=n.TimerSpec(n.TimerKind.DATE, "tomorrow"))
    assert any("not an ISO 8601 date" in x for x in messages(model(bad, *base)))
    ok = n.TimerCatchEvent("w", timer=n.TimerSpec(n.TimerKind.DATE, "${deadline}"))
    assert validate(model(ok, *base)).nodes["w"] == ok


# -- timeexpr ----------------------------------------------------------------------------


def test_parse_duration() -> None:
    assert parse_duration("PT5M") == timedelta(minutes=5)
    assert parse_duration(" P1DT2H ") == timedelta(days=1, hours=2)
    assert parse_duration("PT0S") == timedelta(0)
    assert parse_duration("P1M", relative_to=datetime(2026, 2, 1, tzinfo=UTC)) == timedelta(28)
    for bad in ("5 minutes", "PT5X", "", "-PT5S"):
        with pytest.raises(TimerError):
            parse_duration(bad)


def test_parse_date() -> None:
    assert parse_date("2026-12-01T09:00:00Z") == datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert parse_date("2026-12-01T10:00:00+01:00") == datetime(2026, 12, 1, 9, tzinfo=UTC)
    naive = parse_date("2026-12-01T09:00:00")
    assert naive == datetime(2026, 12, 1, 9, tzinfo=UTC) and naive.tzinfo is UTC
    with pytest.raises(TimerError, match="not an ISO 8601 date"):
        parse_date("next tuesday")


def test_parse_cycle() -> None:
    assert parse_cycle("R3/PT10S") == (3, timedelta(seconds=10))
    assert parse_cycle("R/PT1H") == (None, timedelta(hours=1))
    for bad in ("R0/PT1S", "PT10S", "R3/PT0S", "R3/2026-01-01T00:00:00Z/PT1H", "0 0 * * *"):
        with pytest.raises(TimerError):
            parse_cycle(bad)


def test_check_accepts_variable_references_only_in_plain_form() -> None:
    assert variable_name("${deadline}") == "deadline"
    assert variable_name("${a.b}") is None
    check(n.TimerSpec(n.TimerKind.DURATION, "${wait}"))
    with pytest.raises(TimerError, match="plain variable reference"):
        check(n.TimerSpec(n.TimerKind.DURATION, "${wait * 2}"))


def test_resolve() -> None:
    d = n.TimerKind.DURATION
    assert resolve(n.TimerSpec(d, "PT5M"), {}, NOW) == NOW + timedelta(minutes=5)
    assert resolve(n.TimerSpec(d, "P1M"), {}, NOW) == datetime(2026, 2, 28, 12, tzinfo=UTC)
    assert resolve(n.TimerSpec(d, "${w}"), {"w": "PT1H"}, NOW) == NOW + timedelta(hours=1)
    assert resolve(n.TimerSpec(d, "${w}"), {"w": 30}, NOW) == NOW + timedelta(seconds=30)
    date = n.TimerSpec(n.TimerKind.DATE, "${deadline}")
    assert resolve(date, {"deadline": "2026-03-01T00:00:00Z"}, NOW) == datetime(
        2026, 3, 1, tzinfo=UTC
    )
    aware = datetime(2026, 3, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    assert resolve(date, {"deadline": aware}, NOW) == datetime(2026, 3, 1, tzinfo=UTC)
    cycle = n.TimerSpec(n.TimerKind.CYCLE, "R3/PT10S")
    assert resolve(cycle, {}, NOW.replace(tzinfo=None)) == NOW + timedelta(seconds=10)


@pytest.mark.parametrize(
    ("variables", "fragment"),
    [({}, "'deadline', which is not set"), ({"deadline": 5}, "needs an ISO 8601 string"),
     ({"deadline": "soon"}, "variable 'deadline': 'soon' is not an ISO 8601 date")],
)  # fmt: skip
def test_resolve_errors(variables: dict[str, object], fragment: str) -> None:
    with pytest.raises(TimerError) as info:
        resolve(n.TimerSpec(n.TimerKind.DATE, "${deadline}"), variables, NOW)
    assert fragment in str(info.value)


# -- retry specs ------------------------------------------------------------------------


def test_parse_retry() -> None:
    assert parse_retry("exponential(8, PT1S, PT30S)") == RetryPolicy.exponential(8, 1, 30)
    assert parse_retry("fixed(3, PT2S)") == RetryPolicy.fixed(3, 2)
    assert parse_retry(" fixed( 3 , 2.5 ) ") == RetryPolicy.fixed(3, 2.5)
    assert parse_retry("none()") == RetryPolicy.none()
    assert parse_retry("default()") == RetryPolicy.default()
    assert parse_retry_cycle("R4/PT5S") == RetryPolicy.fixed(4, 5)


@pytest.mark.parametrize(
    "spec",
    ["", "fixed", "fixed(3)", "fixed(0, PT1S)", "fixed(x, PT1S)", "fixed(3, soon)",
     "exponential(3, PT30S, PT1S)", "sometimes()", "none(1)", "fixed(3, -PT1S)"],
)  # fmt: skip
def test_parse_retry_errors(spec: str) -> None:
    with pytest.raises(RetrySpecError, match="retry"):
        parse_retry(spec)


def test_a_lease_on_an_external_task_is_ignored_with_a_warning() -> None:
    """``bpm:lease`` (``lease=``) bounds an inline step; an external task's lock is what
    its worker asks for (``lockDuration``): deploy says so, naming the element."""
    from bpm.builder import Process

    model = (
        Process("leased")
        .start("s")
        .service_task("charge", topic="pay", lease="PT5M")
        .service_task("inline", handler="h", lease="PT5M")
        .end("e")
        .sequence("s", "charge", "inline", "e")
        .build()
    )
    (warning,) = validate(model).warnings
    assert "'charge'" in warning and "lease" in warning and "lockDuration" in warning
