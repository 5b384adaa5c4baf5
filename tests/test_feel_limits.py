"""Hostile FEEL ends with a clear error within its bounds, never a hang or a crash.

``timeout`` marks are a guard against a regression that hangs, not a speed assertion.
"""

from __future__ import annotations

import pytest

from bpm import feel
from bpm.errors import ExpressionError
from bpm.feel import FeelLimitError, Limits

pytestmark = pytest.mark.timeout(60)


def test_deep_nesting_is_refused_at_compile_time() -> None:
    with pytest.raises(ExpressionError, match="nests deeper than 64"):
        feel.compile_expression("(" * 5000 + "1" + ")" * 5000)
    with pytest.raises(ExpressionError, match="levels deep"):
        feel.compile_expression("1" + " + 1" * 5000)


def test_an_overlong_expression_is_refused() -> None:
    with pytest.raises(ExpressionError, match="characters long"):
        feel.compile_expression('"' + "a" * 200_000 + '"')


def test_for_over_a_million_items_stops_at_the_list_limit() -> None:
    text = "for i in 1..2000000 return i"
    with pytest.raises(FeelLimitError, match="built a list of 100001 items") as err:
        feel.evaluate(text)
    assert text in str(err.value)


def test_a_huge_range_is_a_value_but_iterating_it_spends_steps() -> None:
    assert feel.evaluate("5 in [1..1000000000000]") is True
    with pytest.raises(FeelLimitError, match="took more than 1000 steps"):
        feel.compile_expression("some x in [1..1000000000000] satisfies x < 0").evaluate(
            limits=Limits(steps=1000)
        )


def test_nested_loops_spend_one_budget() -> None:
    expr = feel.compile_expression("count(for a in 1..1000, b in 1..1000 return 1)")
    with pytest.raises(FeelLimitError, match="steps"):
        expr.evaluate(limits=Limits(steps=50_000, items=10**7))


def test_unbounded_recursion_through_a_user_function() -> None:
    text = "{f: function(n) f(n + 1), r: f(1)}.r"
    with pytest.raises(FeelLimitError, match="deeper than 100") as err:
        feel.evaluate(text)
    assert text in str(err.value)


def test_string_doubling_stops_at_the_size_limit() -> None:
    with pytest.raises(FeelLimitError, match="built a string of"):
        feel.evaluate('{f: function(s) f(s + s), r: f("ab")}.r')
    with pytest.raises(FeelLimitError, match="built a string of"):
        feel.compile_expression('string join(for i in 1..5000 return "0123456789")').evaluate(
            limits=Limits(string_length=10_000)
        )


def test_limits_apply_per_evaluation() -> None:
    expr = feel.compile_expression("count(for i in 1..600 return i)")
    limits = Limits(steps=1000)
    assert expr.evaluate(limits=limits) == 600
    assert expr.evaluate(limits=limits) == 600  # a new budget each time
