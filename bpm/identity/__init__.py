"""Users, groups and memberships: who may see and do which user tasks.

``BPM_IDENTITY`` picks the provider of ``bpm api``: ``database`` (the default: the
engine's own tables, managed over ``/engine-rest/user`` and ``/group``) or
``file:/path/to/identity.json`` (read-only, :mod:`bpm.identity.file`). Django projects use
``bpm.contrib.django``'s provider: a Django user is a task-list user.
"""

from __future__ import annotations

import os

from bpm.engine.core import EngineCore
from bpm.errors import ConfigurationError
from bpm.identity.database import DatabaseIdentity
from bpm.identity.file import FileIdentity
from bpm.identity.provider import IdentityProvider, ReadOnlyIdentity
from bpm.identity.values import ADMIN_GROUP, Group, GroupQuery, Person, Tenant, User, UserQuery

ENV_VAR = "BPM_IDENTITY"

__all__ = [
    "ADMIN_GROUP",
    "DatabaseIdentity",
    "FileIdentity",
    "Group",
    "GroupQuery",
    "IdentityProvider",
    "Person",
    "ReadOnlyIdentity",
    "Tenant",
    "User",
    "UserQuery",
    "identity_from_env",
]


def identity_from_env(core: EngineCore, value: str | None = None) -> IdentityProvider:
    """The provider ``BPM_IDENTITY`` names (``value`` instead, when given)."""
    text = (value if value is not None else os.environ.get(ENV_VAR, "")).strip()
    if text in ("", "database"):
        return DatabaseIdentity(core)
    if text.startswith("file:"):
        return FileIdentity(text.removeprefix("file:"))
    raise ConfigurationError(f"{ENV_VAR}={text!r}: use 'database' or 'file:/path/to/identity.json'")
