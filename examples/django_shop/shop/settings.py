"""Settings of the Django shop example. Everything that differs per machine is an env var:

``SHOP_DATABASE_URL`` (default ``postgresql://root@127.0.0.1:5432/shop``): the database of
the shop *and* of the engine (one database, one transaction per request);
``BPM_BROKER_URL`` (default ``redis://127.0.0.1:6379/0``) and ``BPM_QUEUE``: where new
steps are published; ``SHOP_SECRET_KEY``.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlsplit

DATABASE_URL = os.environ.get("SHOP_DATABASE_URL", "postgresql://root@127.0.0.1:5432/shop")


def database_from_url(url: str) -> dict[str, Any]:
    """A ``DATABASES`` entry for a postgresql:// URL (PostgreSQL through psycopg 3)."""
    parts = urlsplit(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.path.lstrip("/"),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


SECRET_KEY = os.environ.get("SHOP_SECRET_KEY", "only-for-the-example-never-in-production")
DEBUG = os.environ.get("SHOP_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "bpm.contrib.django",
    "orders",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "shop.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
WSGI_APPLICATION = "shop.wsgi.application"
DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

# The engine shares the "default" connection: start_process() inside transaction.atomic()
# commits or rolls back with the order, and publishes to the broker only on commit.
BPM = {
    "DATABASE": "default",
    "BROKER_URL": os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0"),
    "QUEUE": os.environ.get("BPM_QUEUE", "bpm"),
    "COCKPIT_URL": os.environ.get("SHOP_COCKPIT_URL") or None,
}
