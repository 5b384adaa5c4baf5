"""The Django app config of the adapter."""

from __future__ import annotations

from django.apps import AppConfig


class BpmConfig(AppConfig):  # type: ignore[misc]  # django ships no type hints
    name = "bpm.contrib.django"
    label = "bpm"
    verbose_name = "BPM engine"
