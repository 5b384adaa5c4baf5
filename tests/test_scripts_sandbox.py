"""The Python script sandbox (bpm.scripts): what a script may do, and the escape corpus.

Every attempt is refused at deploy (compile_python raises) or stopped at run time (the
sandbox raises ScriptError); the process running the tests, like a worker, carries on.
"""

from __future__ import annotations

import os

import pytest

from bpm.scripts import Limits, ScriptError, compile_python, run, run_in_sandbox
from bpm.scripts.client import shutdown

FAST = Limits(cpu_seconds=0.5, memory_bytes=64 * 2**20)


def sandboxed(source: str, variables: dict[str, object] | None = None, limits: Limits = FAST):
    return run_in_sandbox(source, variables or {}, limits)


def test_variables_are_names_and_assignments_are_updates() -> None:
    out = sandboxed(
        "total = price * quantity\nitems.append(3)\nunchanged = unchanged\nlabel = f'n={total}'",
        {"price": 3, "quantity": 4, "items": [1, 2], "unchanged": {"a": 1}},
    )
    assert out.updates == {"total": 12, "items": [1, 2, 3], "label": "n=12"}
    assert out.result is None


def test_the_last_expression_is_the_result() -> None:
    assert sandboxed("x = 2\nx * 21").result == 42


def test_allowed_modules_and_what_is_converted() -> None:
    out = sandboxed(
        "import math, json, re\nfrom datetime import date, timedelta\nimport decimal\n"
        "r = math.floor(2.5)\nd = date(2026, 1, 2) + timedelta(days=1)\n"
        "q = decimal.Decimal('2.50') * 2\nw = decimal.Decimal('1.25')\n"
        "m = re.match(r'(\\d+)', '42x').group(1)\nj = json.loads('[1]')\n"
        "def helper(v):\n    return v + 1\nh = helper(1)"
    )
    assert out.updates == {
        "r": 2,
        "d": "2026-01-03",
        "q": 5,
        "w": 1.25,
        "m": "42",
        "j": [1],
        "h": 2,
    }


def test_a_value_that_is_not_json_is_named() -> None:
    with pytest.raises(ScriptError, match="variable 's' holds a set"):
        sandboxed("s = {1, 2}")


# -- refused at deploy ----------------------------------------------------------------------

REFUSED_AT_DEPLOY = {
    "class chain": "x = ().__class__.__bases__[0].__subclasses__()",
    "mro chain": "x = [].__class__.__mro__[1]",
    "__import__": "os = __import__('os')",
    "import os": "import os",
    "from os import": "from os import system",
    "import subprocess": "import subprocess as s",
    "relative import": "from . import x",
    "__builtins__": "b = __builtins__",
    "globals": "g = __globals__",
    "gi_frame": "g = (i for i in [1])\nf = g.gi_frame.f_back",
    "f_back": "def f():\n    pass\nx = f.f_back",
    "tb_frame": "try:\n    1/0\nexcept Exception as e:\n    f = e.tb_frame",
    "exec": "exec('1')",
    "eval": "eval('1')",
    "dunder in f-string": "s = f'{x.__class__}'",
    "dunder attribute write": "x.__dict__ = 1",
    "underscore name": "_secret = 1",
    "syntax error": "x = (",
}


@pytest.mark.parametrize("source", REFUSED_AT_DEPLOY.values(), ids=REFUSED_AT_DEPLOY.keys())
def test_refused_at_deploy(source: str) -> None:
    with pytest.raises(ScriptError):
        compile_python(source)


def test_a_refusal_names_the_line() -> None:
    with pytest.raises(ScriptError, match=r"(?i)line 2.*__class__"):
        compile_python("x = 1\ny = x.__class__")


def test_a_script_too_long_is_refused() -> None:
    with pytest.raises(ScriptError, match="characters"):
        compile_python("x = 1\n" * 20000)


# -- stopped at run time --------------------------------------------------------------------

STOPPED_AT_RUN = {
    "format attribute": ("s = '{0.__class__}'.format(1)", "'format' may not be read"),
    "format via str": ("s = str.format('{0.__class__}', 1)", "'format' may not be read"),
    "format_map": ("s = '{x.__class__}'.format_map({'x': 1})", "'format_map' may not be read"),
    "getattr computed": ("x = getattr((), '__cl' + 'ass__')", "may not be read"),
    "getattr frame": ("g = (i for i in [1])\nf = getattr(g, 'gi_' + 'frame')", "may not be"),
    "hasattr probes nothing": ("x = hasattr((), '__class__')\nassert x", "AssertionError"),
    "module internals": ("import re\nx = re.functools", "no attribute 'functools'"),
    "import computed": ("m = 'o' + 's'\nimport math\ny = math.os", "no attribute 'os'"),
    "infinite loop": ("while True:\n    pass", "CPU time"),
    "loop swallowing": ("while True:\n    try:\n        pass\n    except:\n        pass", "CPU"),
    "huge string": ("x = 'a' * 10**10", "out of memory"),
    "huge list": ("x = [0] * 10**9", "out of memory"),
    "growing list": ("x = []\nwhile True:\n    x.append('a' * 1000)", "memory|CPU|stopped"),
    # run in C: stopped by RLIMIT_CPU (or, on a machine too busy to give it the CPU, by the
    # wall-clock bound)
    "huge integer in C": ("x = 10**10**8", "CPU time|ran longer"),
    "catastrophic regex": ("import re\nre.match('(a+)+$', 'a' * 40 + 'b')", "CPU time|ran longer"),
    "deep recursion": ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
    "raise": ("raise ValueError('no')", "ValueError: no"),
}


@pytest.mark.parametrize(("source", "says"), STOPPED_AT_RUN.values(), ids=STOPPED_AT_RUN.keys())
def test_stopped_at_run_time(source: str, says: str) -> None:
    compile_python(source)  # deploys...
    with pytest.raises(ScriptError, match=says):  # ...and is stopped when it runs
        sandboxed(source)
    assert sandboxed("ok = 1").updates == {"ok": 1}  # the sandbox (and this process) lives on


def test_the_variables_given_are_not_changed() -> None:
    variables = {"items": [1]}
    with pytest.raises(ScriptError):
        run(compile_python("items.append(2)\nraise ValueError('x')"), variables, FAST)
    assert variables == {"items": [1]}


def test_a_killed_sandbox_process_is_replaced() -> None:
    from bpm.scripts import client

    sandboxed("x = 1")
    for helper in list(client._idle):
        os.kill(helper.proc.pid, 9)
        helper.proc.wait()
    assert sandboxed("x = 2").updates == {"x": 2}
    shutdown()
    assert sandboxed("x = 3").updates == {"x": 3}


def test_limits_from_the_environment() -> None:
    limits = Limits.from_env({"BPM_SCRIPT_CPU_SECONDS": "0.25", "BPM_SCRIPT_MEMORY_MB": "32"})
    assert (limits.cpu_seconds, limits.memory_bytes) == (0.25, 32 * 2**20)
    with pytest.raises(ScriptError):
        Limits.from_env({"BPM_SCRIPT_CPU_SECONDS": "0"})


def test_variables_that_are_not_json_are_refused_before_the_run() -> None:
    with pytest.raises(ScriptError, match="cannot be handed"):
        sandboxed("x = 1", {"bad": object()})
