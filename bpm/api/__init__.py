"""The REST API (FastAPI): ``/engine-rest``, compatible with Camunda 7 external-task clients.

>>> from bpm.api import create_app
>>> app = create_app()          # BPM_DATABASE_URL, BPM_API_KEYS from the environment
"""

from __future__ import annotations

from bpm.api.app import create_app

__all__ = ["create_app"]
