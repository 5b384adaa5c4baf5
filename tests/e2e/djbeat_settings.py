"""Django settings of the django-celery-beat e2e test: only ``django_celery_beat``, on the
test's PostgreSQL database (``BPM_DATABASE_URL``, the engine's own)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

_url = urlsplit(os.environ.get("BPM_DATABASE_URL", "postgresql+psycopg://root@127.0.0.1/bpm"))

SECRET_KEY = "djbeat-e2e-only"
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = ["django_celery_beat"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _url.path.lstrip("/"),
        "USER": _url.username or "",
        "PASSWORD": _url.password or "",
        "HOST": _url.hostname or "",
        "PORT": str(_url.port or ""),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
