"""Placeholder module replaced by the lead: instance commands."""

from __future__ import annotations
