"""What the Celery workers of the Flask shop load (``BPM_HANDLERS=flaskshop.worker``).

Creates the app, so that its ``process_completed`` / ``process_failed`` receivers run in
the worker that finishes an instance, and registers the checkout handlers.
"""

from __future__ import annotations

import examples.checkout_handlers  # noqa: F401  (registers the handlers)
from flaskshop import create_app

app = create_app()
