"""The identity provider seam: who the users and groups are, and whose password is whose.

Three providers: :class:`~bpm.identity.database.DatabaseIdentity` (the built-in tables,
writable), :class:`~bpm.identity.file.FileIdentity` (a JSON file for small teams, read-only)
and ``bpm.contrib.django``'s Django users and groups (read-only: Django's admin owns them).
The REST API, the task list and candidate resolution ask only this protocol.
"""

from __future__ import annotations

from typing import Protocol

from bpm.errors import Forbidden
from bpm.identity.values import Group, GroupQuery, User, UserQuery


class ReadOnlyIdentity(Forbidden):
    """A change asked of a provider that is read-only (Camunda: 403)."""

    def __init__(self) -> None:
        super().__init__(
            "Identity service implementation is read-only: users and groups are changed "
            "where they are kept (the file, or Django's admin)"
        )


class IdentityProvider(Protocol):
    """Users, groups and memberships; the writes raise :class:`ReadOnlyIdentity` when
    ``read_only``."""

    @property
    def read_only(self) -> bool: ...

    def user(self, user_id: str) -> User | None: ...

    def users(self, q: UserQuery, *, offset: int = 0, limit: int | None = None) -> list[User]: ...

    def count_users(self, q: UserQuery) -> int: ...

    def group(self, group_id: str) -> Group | None: ...

    def groups(
        self, q: GroupQuery, *, offset: int = 0, limit: int | None = None
    ) -> list[Group]: ...

    def count_groups(self, q: GroupQuery) -> int: ...

    def groups_of(self, user_id: str) -> frozenset[str]:
        """The ids of the groups ``user_id`` is a member of (none for an unknown user)."""
        ...

    def check_password(self, user_id: str, password: str) -> bool:
        """True when the user exists and ``password`` is theirs (same cost either way)."""
        ...

    def password_version(self, user_id: str) -> str | None:
        """Changes whenever the user's password does (sessions are keyed by it, so a new
        password ends them); None for an unknown user."""
        ...

    def create_user(self, user: User, password: str | None) -> None: ...

    def update_profile(self, user: User) -> None: ...

    def set_password(self, user_id: str, password: str) -> None: ...

    def delete_user(self, user_id: str) -> None: ...

    def create_group(self, group: Group) -> None: ...

    def update_group(self, group: Group) -> None: ...

    def delete_group(self, group_id: str) -> None: ...

    def add_member(self, group_id: str, user_id: str) -> None: ...

    def remove_member(self, group_id: str, user_id: str) -> None: ...


class ReadOnlyWrites:
    """The write half of a read-only provider: every write refused, nothing changed."""

    read_only = True

    def create_user(self, user: User, password: str | None) -> None:
        raise ReadOnlyIdentity()

    def update_profile(self, user: User) -> None:
        raise ReadOnlyIdentity()

    def set_password(self, user_id: str, password: str) -> None:
        raise ReadOnlyIdentity()

    def delete_user(self, user_id: str) -> None:
        raise ReadOnlyIdentity()

    def create_group(self, group: Group) -> None:
        raise ReadOnlyIdentity()

    def update_group(self, group: Group) -> None:
        raise ReadOnlyIdentity()

    def delete_group(self, group_id: str) -> None:
        raise ReadOnlyIdentity()

    def add_member(self, group_id: str, user_id: str) -> None:
        raise ReadOnlyIdentity()

    def remove_member(self, group_id: str, user_id: str) -> None:
        raise ReadOnlyIdentity()
