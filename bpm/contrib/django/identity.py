"""Django's users and groups as the task list's (read-only): a Django user *is* a
task-list user, a Django group a candidate group (by its name), and a superuser is in
``camunda-admin``. Passwords are Django's (``check_password``, whatever hasher the project
configured); users and groups are changed in Django's admin, so every write is refused.

``create_app(engine, identity=DjangoIdentity())`` serves the REST API and the task list
with them (Django set up first).
"""

from __future__ import annotations

import hashlib
from typing import Any

from bpm.identity.file import _page, _sorted, like
from bpm.identity.provider import ReadOnlyWrites
from bpm.identity.values import ADMIN_GROUP, Group, GroupQuery, User, UserQuery

#: Users (or groups) one query looks through: this provider is for teams, not a directory.
MAX_SCAN = 10_000


def _user(u: Any) -> User:
    return User(u.get_username(), u.first_name or None, u.last_name or None, u.email or None)


class DjangoIdentity(ReadOnlyWrites):
    """The active users and the groups of ``django.contrib.auth``."""

    def _model(self) -> Any:
        from django.contrib.auth import get_user_model

        return get_user_model()

    def _find(self, user_id: str) -> Any:
        model = self._model()
        try:
            return model.objects.get(**{model.USERNAME_FIELD: user_id, "is_active": True})
        except model.DoesNotExist:
            return None

    def user(self, user_id: str) -> User | None:
        found = self._find(user_id)
        return None if found is None else _user(found)

    def _users(self, q: UserQuery) -> list[User]:
        model = self._model()
        rows = model.objects.filter(is_active=True)
        if q.member_of_group is not None:
            if q.member_of_group == ADMIN_GROUP:
                rows = rows.filter(is_superuser=True)
            else:
                rows = rows.filter(groups__name=q.member_of_group)
        out = []
        for u in rows[:MAX_SCAN]:
            user = _user(u)
            if q.ids is not None and user.id not in q.ids:
                continue
            checks = (
                (user.first_name, q.first_name, q.first_name_like),
                (user.last_name, q.last_name, q.last_name_like),
                (user.email, q.email, q.email_like),
            )
            if all(
                (equal is None or value == equal)
                and (pattern is None or (value is not None and like(pattern).fullmatch(value)))
                for value, equal, pattern in checks
            ):
                out.append(user)
        fields = {
            "userId": "id",
            "firstName": "first_name",
            "lastName": "last_name",
            "email": "email",
        }
        return _sorted(out, q.sorting, fields)

    def users(self, q: UserQuery, *, offset: int = 0, limit: int | None = None) -> list[User]:
        return _page(self._users(q), offset, limit)

    def count_users(self, q: UserQuery) -> int:
        return len(self._users(q))

    def _all_groups(self) -> list[Group]:
        from django.contrib.auth.models import Group as DjangoGroup

        names = DjangoGroup.objects.order_by("name").values_list("name", flat=True)[:MAX_SCAN]
        return [Group(ADMIN_GROUP, "Administrators (superusers)"), *(Group(n, n) for n in names)]

    def group(self, group_id: str) -> Group | None:
        return next((g for g in self._all_groups() if g.id == group_id), None)

    def _groups(self, q: GroupQuery) -> list[Group]:
        mine = self.groups_of(q.member) if q.member is not None else None
        out = [
            g
            for g in self._all_groups()
            if (q.ids is None or g.id in q.ids)
            and (q.name is None or g.name == q.name)
            and (q.name_like is None or (g.name and like(q.name_like).fullmatch(g.name)))
            and (q.type is None or g.type == q.type)
            and (mine is None or g.id in mine)
        ]
        return _sorted(out, q.sorting, {"id": "id", "name": "name", "type": "type"})

    def groups(self, q: GroupQuery, *, offset: int = 0, limit: int | None = None) -> list[Group]:
        return _page(self._groups(q), offset, limit)

    def count_groups(self, q: GroupQuery) -> int:
        return len(self._groups(q))

    def groups_of(self, user_id: str) -> frozenset[str]:
        found = self._find(user_id)
        if found is None:
            return frozenset()
        names = set(found.groups.values_list("name", flat=True))
        if found.is_superuser:
            names.add(ADMIN_GROUP)
        return frozenset(names)

    def check_password(self, user_id: str, password: str) -> bool:
        found = self._find(user_id)
        if found is None:
            self._model()().set_password(password)  # the same hashing cost: no user oracle
            return False
        return bool(found.check_password(password))

    def password_version(self, user_id: str) -> str | None:
        found = self._find(user_id)
        if found is None:
            return None
        return hashlib.sha256((found.password or "").encode()).hexdigest()
