"""A read-only identity provider from a JSON file, for small teams::

    {"users": [{"id": "ann", "firstName": "Ann", "email": "ann@example.com",
                "password": "$argon2id$v=19$m=65536,t=3,p=4$..."}],
     "groups": [{"id": "sales", "name": "Sales", "members": ["ann"]}]}

Passwords are argon2 hashes only (make one with
``python -c "from bpm.identity.passwords import hash_password as h; print(h(input()))"``):
a file with a plain password is refused when it is read. The file is read once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bpm.errors import ConfigurationError, InvalidOperation
from bpm.identity import passwords
from bpm.identity.checks import checked_group, checked_user
from bpm.identity.provider import ReadOnlyWrites
from bpm.identity.values import Group, GroupQuery, User, UserQuery

T = TypeVar("T")


def like(pattern: str) -> re.Pattern[str]:
    """SQL ``LIKE`` (``%`` any run, ``_`` one character) as a regular expression."""
    parts = ("." if c == "_" else ".*" if c == "%" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


def _page(items: list[T], offset: int, limit: int | None) -> list[T]:
    return items[offset : None if limit is None else offset + limit]


def _sorted(
    items: Iterable[T], sorting: tuple[tuple[str, bool], ...], field: dict[str, str]
) -> list[T]:
    out = sorted(items, key=lambda x: getattr(x, "id"))  # noqa: B009 - the tie-breaker
    for name, ascending in reversed(sorting):
        attr = field[name]
        out.sort(key=lambda x: getattr(x, attr) or "", reverse=not ascending)
    return out


@dataclass(frozen=True)
class _Entry:
    user: User
    hashed: str


class FileIdentity(ReadOnlyWrites):
    """Users and groups of a JSON file (read once); every write is refused."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            doc: Any = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"identity file {self.path}: {exc}") from None
        if not isinstance(doc, dict):
            raise ConfigurationError(f"identity file {self.path}: not a JSON object")
        self._users: dict[str, _Entry] = {}
        self._groups: dict[str, Group] = {}
        self._members: dict[str, set[str]] = {}
        try:
            for raw in doc.get("users", []):
                self._add_user(raw)
            for raw in doc.get("groups", []):
                self._add_group(raw)
        except (InvalidOperation, TypeError, AttributeError) as exc:
            raise ConfigurationError(f"identity file {self.path}: {exc}") from None

    def _add_user(self, raw: dict[str, Any]) -> None:
        user = checked_user(
            User(raw["id"], raw.get("firstName"), raw.get("lastName"), raw.get("email"))
        )
        hashed = raw.get("password") or ""
        if hashed and not str(hashed).startswith("$argon2"):
            raise InvalidOperation(
                f"user {user.id!r}: password must be an argon2 hash, never the password"
            )
        if user.id in self._users:
            raise InvalidOperation(f"user {user.id!r} appears twice")
        self._users[user.id] = _Entry(user, str(hashed))

    def _add_group(self, raw: dict[str, Any]) -> None:
        group = checked_group(Group(raw["id"], raw.get("name"), raw.get("type")))
        if group.id in self._groups:
            raise InvalidOperation(f"group {group.id!r} appears twice")
        self._groups[group.id] = group
        for member in raw.get("members", []):
            if member not in self._users:
                raise InvalidOperation(f"group {group.id!r}: no user {member!r}")
            self._members.setdefault(member, set()).add(group.id)

    def user(self, user_id: str) -> User | None:
        entry = self._users.get(user_id)
        return None if entry is None else entry.user

    def _users_matching(self, q: UserQuery) -> list[User]:
        def ok(u: User) -> bool:
            checks = (
                (u.first_name, q.first_name, q.first_name_like),
                (u.last_name, q.last_name, q.last_name_like),
                (u.email, q.email, q.email_like),
            )
            for value, equal, pattern in checks:
                if equal is not None and value != equal:
                    return False
                if pattern is not None and not (value and like(pattern).fullmatch(value)):
                    return False
            if q.ids is not None and u.id not in q.ids:
                return False
            return q.member_of_group is None or q.member_of_group in self.groups_of(u.id)

        fields = {
            "userId": "id",
            "firstName": "first_name",
            "lastName": "last_name",
            "email": "email",
        }
        return _sorted((e.user for e in self._users.values() if ok(e.user)), q.sorting, fields)

    def users(self, q: UserQuery, *, offset: int = 0, limit: int | None = None) -> list[User]:
        return _page(self._users_matching(q), offset, limit)

    def count_users(self, q: UserQuery) -> int:
        return len(self._users_matching(q))

    def group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def _groups_matching(self, q: GroupQuery) -> list[Group]:
        def ok(g: Group) -> bool:
            if q.ids is not None and g.id not in q.ids:
                return False
            if q.name is not None and g.name != q.name:
                return False
            if q.name_like is not None and not (g.name and like(q.name_like).fullmatch(g.name)):
                return False
            if q.type is not None and g.type != q.type:
                return False
            return q.member is None or g.id in self.groups_of(q.member)

        fields = {"id": "id", "name": "name", "type": "type"}
        return _sorted((g for g in self._groups.values() if ok(g)), q.sorting, fields)

    def groups(self, q: GroupQuery, *, offset: int = 0, limit: int | None = None) -> list[Group]:
        return _page(self._groups_matching(q), offset, limit)

    def count_groups(self, q: GroupQuery) -> int:
        return len(self._groups_matching(q))

    def groups_of(self, user_id: str) -> frozenset[str]:
        return frozenset(self._members.get(user_id, ()))

    def check_password(self, user_id: str, password: str) -> bool:
        entry = self._users.get(user_id)
        return passwords.verify(entry.hashed if entry and entry.hashed else None, password)

    def password_version(self, user_id: str) -> str | None:
        entry = self._users.get(user_id)
        return None if entry is None else hashlib.sha256(entry.hashed.encode()).hexdigest()
