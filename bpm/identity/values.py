"""Values of the identity service: users, groups, tenants and the queries on them."""

from __future__ import annotations

from dataclasses import dataclass

#: Members of this group are administrators (Camunda's name for it).
ADMIN_GROUP = "camunda-admin"
MAX_ID = 255


@dataclass(frozen=True)
class User:
    """A person who signs in: an id and a profile (never the password)."""

    id: str
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None

    @property
    def display_name(self) -> str:
        full = " ".join(x for x in (self.first_name, self.last_name) if x)
        return full or self.id


@dataclass(frozen=True)
class Group:
    """A group of users; user tasks name groups as their candidates."""

    id: str
    name: str | None = None
    type: str | None = None


@dataclass(frozen=True)
class Tenant:
    """A tenant: a name only, for filtering."""

    id: str
    name: str | None = None


@dataclass(frozen=True)
class Person:
    """Who a request acts for: a user id, its groups, and whether it administers."""

    id: str
    groups: frozenset[str] = frozenset()

    @property
    def admin(self) -> bool:
        return ADMIN_GROUP in self.groups


@dataclass(frozen=True)
class UserQuery:
    """Which users to list; every field given must match (AND)."""

    ids: tuple[str, ...] | None = None
    first_name: str | None = None
    first_name_like: str | None = None
    last_name: str | None = None
    last_name_like: str | None = None
    email: str | None = None
    email_like: str | None = None
    member_of_group: str | None = None
    # (sort key of bpm.store.identity.USER_SORTS, ascending)
    sorting: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class GroupQuery:
    """Which groups to list; every field given must match (AND)."""

    ids: tuple[str, ...] | None = None
    name: str | None = None
    name_like: str | None = None
    type: str | None = None
    member: str | None = None
    sorting: tuple[tuple[str, bool], ...] = ()
