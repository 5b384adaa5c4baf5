"""FEEL semantics (DMN 1.5 chapter 10): values, operators, names, builtins, unary tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from bpm import feel
from bpm.errors import ExpressionError
from bpm.feel import YearsMonths


def ev(text: str, **variables: Any) -> Any:
    return feel.compile_expression(text).evaluate(variables)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + 2 * 3", Decimal(7)),
        ("10 / 4", Decimal("2.5")),
        ("1 / 3", Decimal("0.3333333333333333333333333333333333")),  # 34 digits
        ("3 ** 4 ** 5", Decimal(3486784401)),  # left associative
        ("-3 ** 2", Decimal(9)),  # unary minus binds tighter
        ("1 / 0", None),
        ('"a" + 1', None),
        ('"foo" + "bar"', "foobar"),
        ("0.1 + 0.2 = 0.3", True),  # decimal, not binary floating point
        ("10 ** 6144 * 10", None),  # beyond decimal128: null
    ],
)
def test_arithmetic(text: str, expected: Any) -> None:
    assert ev(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true and null", None),
        ("false and null", False),
        ("true or null", True),
        ("false or null", None),
        ("null = null", True),
        ("1 = null", False),
        ('1 = "1"', None),
        ("not(null)", None),
        ("1 < 2 and 2 < 3", True),
        ("5 between 1 and 10", True),
        ("[1, 2] = [1, 2]", True),
        ("{a: 1} = {a: 1}", True),
        ("{a: 1} = {a: 2}", False),
    ],
)
def test_three_valued_logic_and_equality(text: str, expected: Any) -> None:
    assert ev(text) is expected


def test_names_with_spaces_and_symbols_are_read_with_the_scope() -> None:
    expr = feel.compile_expression(
        "Monthly Salary * 12 - Loan-to-Value", names=["Monthly Salary", "Loan-to-Value"]
    )
    assert expr.evaluate({"Monthly Salary": 1000, "Loan-to-Value": 20}) == Decimal(11980)
    # Without the name known, ``-`` is subtraction.
    assert ev("a-b", a=5, b=2) == Decimal(3)


def test_lists_filters_paths_and_contexts() -> None:
    people = [{"name": "Ann", "age": 30}, {"name": "Bob", "age": 17}]
    assert ev("people[age >= 18].name", people=people) == ["Ann"]
    assert ev("people[item.age < 18][1].name", people=people) == "Bob"
    assert ev("[10, 20, 30][-1]") == Decimal(30)
    assert ev("[10, 20, 30][4]") is None
    assert ev("{a: 1, b: a + 1, c: {d: b * 2}}.c.d") == Decimal(4)
    assert ev('{"a b": 1}.a b') == Decimal(1)


def test_iteration_quantifiers_and_conditionals() -> None:
    assert ev("for i in 1..3 return i * i") == [Decimal(1), Decimal(4), Decimal(9)]
    assert ev("for i in 3..1 return i") == [Decimal(3), Decimal(2), Decimal(1)]
    assert ev("for x in [1, 2], y in [10, 20] return x + y") == [
        Decimal(11),
        Decimal(21),
        Decimal(12),
        Decimal(22),
    ]
    assert ev("for i in 0..4 return if i = 0 then 1 else partial[-1] * i")[-1] == Decimal(24)
    assert ev("some x in [1, 5] satisfies x > 3") is True
    assert ev("every x in [1, 5] satisfies x > 3") is False
    assert ev('if null then "a" else "b"') == "b"


def test_ranges_and_in() -> None:
    assert ev("5 in [1..10]") is True
    assert ev("10 in [1..10)") is False
    assert ev("1 in ]1..10]") is False
    assert ev("5 in (< 3, > 4)") is True
    assert ev("5 in (null..10]") is None  # a null end is not an open end
    assert ev("(< 10).start") is None
    assert ev("[1..10].end included") is True
    assert ev('range("[1..10)") = [1..10)') is True


def test_user_functions_types_and_instance_of() -> None:
    assert ev("(function(a, b) a + b)(1, 2)") == Decimal(3)
    assert ev("{f: function(n) if n <= 1 then 1 else n * f(n - 1), r: f(10)}.r") == Decimal(3628800)
    assert ev('(function(a: number) a)("x")') is None  # wrong argument type
    assert ev("[1, 2] instance of list<number>") is True
    assert ev("{a: 1} instance of context<a: number>") is True
    assert ev("null instance of Any") is False
    assert ev("(function(a: string) a) instance of function<string> -> Any") is True


def test_named_arguments_and_builtins() -> None:
    assert ev('substring(string: "foobar", start position: 3, length: 2)') == "ob"
    assert ev('string join(["a", "b"], ", ")') == "a, b"
    assert ev('replace("abc", "b", "[$0]")') == "a[b]c"
    assert ev('matches("Hello", "^h", "i")') is True
    assert ev('split("a1b22c", "[0-9]+")') == ["a", "b", "c"]
    assert ev("decimal(2.5, 0)") == Decimal(2)  # half even
    assert ev("round half up(2.5, 0)") == Decimal(3)
    assert ev("floor(-1.5)") == Decimal(-2)
    assert ev("modulo(-12, 5)") == Decimal(3)
    assert ev("sum([1, 2, 3]) + count([1, 2]) + max(1, 5, 3)") == Decimal(13)
    assert ev("mean([1, 2, 3, 4])") == Decimal("2.5")
    assert ev("median([3, 1, 2])") == Decimal(2)
    assert ev("sort([3, 1, 2], function(x, y) x > y)") == [Decimal(3), Decimal(2), Decimal(1)]
    assert ev("distinct values([1, 1, 2])") == [Decimal(1), Decimal(2)]
    assert ev("flatten([1, [2, [3]]])") == [Decimal(1), Decimal(2), Decimal(3)]
    assert ev('get value({a: 1}, "a")') == Decimal(1)
    assert ev('context put({a: 1}, "b", 2)') == {"a": Decimal(1), "b": Decimal(2)}
    assert ev("string(123.450)") == "123.45"
    assert ev('number("1,000.5", ",", ".")') == Decimal("1000.5")
    assert ev("before(1, [2..3])") is True
    assert ev("overlaps([1..5], [3..8])") is True


def test_dates_times_and_durations() -> None:
    paris = ev('date and time("2024-03-01T10:00:00@Europe/Paris")')
    assert paris.utcoffset() == dt.timedelta(hours=1)
    assert ev('date("2024-01-31") + duration("P1M")') == dt.date(2024, 2, 29)
    assert ev('date("2024-03-02") - date("2024-03-01")') == dt.timedelta(days=1)
    assert ev('duration("P1Y2M")') == YearsMonths(14)
    assert ev('duration("P1DT2H")') == dt.timedelta(days=1, hours=2)
    assert ev('years and months duration(date("2020-05-15"), date("2021-05-14"))') == YearsMonths(
        11
    )
    assert ev('time("10:00:00+01:00") = time("09:00:00Z")') is True
    assert ev('@"2024-01-01T10:00:00Z" > @"2024-01-01T10:00:00+01:00"') is True
    assert ev('date("2024-02-30")') is None
    assert ev('day of week(date("2024-06-03"))') == "Monday"
    assert ev('string(@"P1DT2H30M")') == "P1DT2H30M"
    assert ev('date("2024-06-03").year + duration("P2Y").years') == Decimal(2026)


def test_python_values_in_and_out() -> None:
    value = ev("[a, b, c, d]", a=1, b=1.5, c=True, d=dt.date(2024, 1, 1))
    assert value == [Decimal(1), Decimal("1.5"), True, dt.date(2024, 1, 1)]
    assert isinstance(value[0], Decimal)


def test_unary_tests() -> None:
    tests = feel.compile_unary_tests('< 10, [20..30], "gold"')
    assert [tests.matches(v) for v in (5, 25, "gold", 15)] == [True, True, True, False]
    assert feel.compile_unary_tests("-").matches(None) is True
    assert feel.compile_unary_tests("not(1, 2)").matches(3) is True
    assert feel.compile_unary_tests("not(1, 2)").matches(2) is False
    assert feel.compile_unary_tests("? > limit").matches(6, {"limit": 5}) is True
    assert feel.compile_unary_tests("[1, 2, 3]").matches(2) is True
    assert feel.compile_unary_tests("null").matches(None) is True


@pytest.mark.parametrize(
    "text",
    ["1 +", "(1", "[1..", "{a: 1, a: 2}", "x instance of nosuchtype", "if 1 then 2", '"open'],
)
def test_syntax_errors_name_the_expression(text: str) -> None:
    with pytest.raises(ExpressionError, match=r"FEEL syntax|twice|unknown type|unterminated"):
        feel.compile_expression(text)


def test_xml_schema_regular_expressions() -> None:
    assert ev('matches("a\\nb", "a.b")') is False  # `.` matches no line end
    assert ev('matches("a\\nb", "a.b", "s")') is True
    assert ev('matches("ab\\n", "b$")') is False  # `$` is the end of the input
    assert ev('matches("e", "[a-z-[aeiou]]")') is False  # class subtraction
    assert ev('matches("hello world", "hello[ ]wor ld", "x")') is True
    assert ev('matches("abc", "\\p{IsBasicLatin}+")') is True
    assert ev('matches("abcd", "(a)[\\1]")') is None  # a back-reference in a class
    assert ev('matches("a", "a", "z")') is None  # an unknown flag


def test_singleton_lists_convert_where_one_value_is_expected() -> None:
    assert ev('upper case(["bob"])') == "BOB"
    assert ev('string join("a")') == "a"
    assert ev("reverse(1)") == [Decimal(1)]


def test_now_and_today_read_the_clock_given() -> None:
    at = dt.datetime(2030, 5, 6, 7, 8, 9, tzinfo=dt.UTC)
    expr = feel.compile_expression("[now(), today()]")
    assert expr.evaluate(now=at) == [at, dt.date(2030, 5, 6)]
