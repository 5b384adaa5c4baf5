"""FEEL's builtin function library (DMN 1.5 §10.3.4), gathered from its modules by name."""

from __future__ import annotations

from bpm.feel import builtins_lists, builtins_text, builtins_time
from bpm.feel.library import BUILTINS

__all__ = ["BUILTINS", "builtins_lists", "builtins_text", "builtins_time"]
