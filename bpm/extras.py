"""Which pip extra of bpm-celery brings which module, so a missing one is named.

``pip install bpm-celery`` is the engine, the CLI and the embedded mode; the Celery
workers, the REST API and the integrations come as extras (README "Install"). A command
that needs an extra that is not installed says which one in one line, never a traceback.
"""

from __future__ import annotations

from bpm.errors import ConfigurationError

# top-level module -> the extra that installs it
EXTRA_OF_MODULE: dict[str, str] = {
    "celery": "celery",
    "kombu": "celery",
    "redis": "celery",
    "fastapi": "api",
    "starlette": "api",
    "uvicorn": "api",
    "multipart": "api",
    "python_multipart": "api",
    "httpx": "worker",
    "prometheus_client": "prometheus",
    "flask": "flask",
    "flask_sqlalchemy": "flask",
    "django": "django",
}


def extra_for(exc: ImportError) -> str | None:
    """The extra whose module ``exc`` found missing, or None (not one of ours)."""
    name = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or not name:
        return None
    return EXTRA_OF_MODULE.get(name.split(".")[0])


def install_hint(extra: str) -> str:
    return f'pip install "bpm-celery[{extra}]"'


def missing_extra(exc: ImportError, needed_for: str) -> ConfigurationError | None:
    """``needed_for`` ("bpm api", "publishing to BPM_BROKER_URL") needs the extra ``exc``
    found missing: the error that says which one to install, or None if ``exc`` is about
    another module."""
    extra = extra_for(exc)
    if extra is None:
        return None
    module = str(exc.name).split(".")[0]
    return ConfigurationError(
        f"{needed_for} needs the '{extra}' extra ({module} is not installed): {install_hint(extra)}"
    )
