"""A Celery app whose beat is django-celery-beat's ``DatabaseScheduler``, with the engine
installed (``celery -A tests.e2e.djbeat_app beat``): its schedule lives in the database,
where the scheduler copies the app's entries (the engine's timer sweeps among them) at
start. ``DJANGO_SETTINGS_MODULE=tests.e2e.djbeat_settings``."""

from __future__ import annotations

import os

import django
from celery import Celery

from bpm.contrib.celery import install

django.setup()

app = Celery("djbeat", broker=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/10"))
app.conf.update(
    beat_scheduler="django_celery_beat.schedulers:DatabaseScheduler",
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    timezone="UTC",
)
install(app)
