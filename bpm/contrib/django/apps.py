"""The Django app config of the adapter: handlers and signals are wired when Django starts."""

from __future__ import annotations

import importlib

from django.apps import AppConfig


class BpmConfig(AppConfig):  # type: ignore[misc]  # django ships no type hints
    name = "bpm.contrib.django"
    label = "bpm"
    verbose_name = "BPM engine"
    default_auto_field = "django.db.models.AutoField"

    def ready(self) -> None:
        from bpm.contrib.django.settings import read_settings
        from bpm.contrib.django.signals import send_instance_signal
        from bpm.events import instance_listeners

        for module in read_settings().handlers:
            importlib.import_module(module)
        instance_listeners.subscribe(send_instance_signal)
