"""What the Celery workers of the shop load (``BPM_HANDLERS=shop.worker``).

Sets Django up, so that the ``process_completed`` / ``process_failed`` receivers of
``orders`` run in the worker that finishes an instance and can use the ORM, and registers
the checkout handlers.
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
django.setup()

import examples.checkout_handlers  # noqa: E402, F401  (registers the handlers)
