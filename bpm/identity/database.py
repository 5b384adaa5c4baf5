"""The built-in identity provider: users, groups and memberships in the engine's own
database (migration 0012), each call one short transaction."""

from __future__ import annotations

import hashlib

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation, NotFound
from bpm.identity import passwords
from bpm.identity.checks import check_id, checked_group, checked_user
from bpm.identity.values import Group, GroupQuery, User, UserQuery
from bpm.store import identity as store


class DatabaseIdentity:
    """Users and groups kept in the engine's tables; writable."""

    read_only = False

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def user(self, user_id: str) -> User | None:
        with self.core.tx() as conn:
            return store.user(conn, user_id)

    def users(self, q: UserQuery, *, offset: int = 0, limit: int | None = None) -> list[User]:
        with self.core.tx() as conn:
            return store.users(conn, q, offset=offset, limit=limit)

    def count_users(self, q: UserQuery) -> int:
        with self.core.tx() as conn:
            return store.count_users(conn, q)

    def group(self, group_id: str) -> Group | None:
        with self.core.tx() as conn:
            return store.group(conn, group_id)

    def groups(self, q: GroupQuery, *, offset: int = 0, limit: int | None = None) -> list[Group]:
        with self.core.tx() as conn:
            return store.groups(conn, q, offset=offset, limit=limit)

    def count_groups(self, q: GroupQuery) -> int:
        with self.core.tx() as conn:
            return store.count_groups(conn, q)

    def groups_of(self, user_id: str) -> frozenset[str]:
        with self.core.tx() as conn:
            return store.group_ids_of(conn, user_id)

    def check_password(self, user_id: str, password: str) -> bool:
        with self.core.tx() as conn:
            hashed = store.password_hash(conn, user_id)
        ok = passwords.verify(hashed, password)
        if ok and hashed is not None and passwords.needs_rehash(hashed):
            with self.core.tx() as conn:
                store.set_password_hash(conn, user_id, passwords.hash_password(password))
        return ok

    def password_version(self, user_id: str) -> str | None:
        with self.core.tx() as conn:
            if store.user(conn, user_id) is None:
                return None
            hashed = store.password_hash(conn, user_id) or ""
        return hashlib.sha256(hashed.encode()).hexdigest()

    def create_user(self, user: User, password: str | None) -> None:
        checked_user(user)
        hashed = (
            None if password is None else passwords.hash_password(passwords.check_policy(password))
        )
        with self.core.tx() as conn:
            if not store.insert_user(conn, user, hashed, self.core.now()):
                raise InvalidOperation(f"User with id '{user.id}' already exists")

    def update_profile(self, user: User) -> None:
        checked_user(user)
        with self.core.tx() as conn:
            if not store.update_profile(conn, user):
                raise _no_user(user.id)

    def set_password(self, user_id: str, password: str) -> None:
        hashed = passwords.hash_password(passwords.check_policy(password))
        with self.core.tx() as conn:
            if not store.set_password_hash(conn, user_id, hashed):
                raise _no_user(user_id)

    def delete_user(self, user_id: str) -> None:
        with self.core.tx() as conn:
            if not store.delete_user(conn, user_id):
                raise _no_user(user_id)

    def create_group(self, group: Group) -> None:
        checked_group(group)
        with self.core.tx() as conn:
            if not store.insert_group(conn, group):
                raise InvalidOperation(f"Group with id '{group.id}' already exists")

    def update_group(self, group: Group) -> None:
        checked_group(group)
        with self.core.tx() as conn:
            if not store.update_group(conn, group):
                raise _no_group(group.id)

    def delete_group(self, group_id: str) -> None:
        with self.core.tx() as conn:
            if not store.delete_group(conn, group_id):
                raise _no_group(group_id)

    def add_member(self, group_id: str, user_id: str) -> None:
        check_id("group", group_id)
        check_id("user", user_id)
        with self.core.tx() as conn:
            if store.group(conn, group_id) is None:
                raise _no_group(group_id)
            if store.user(conn, user_id) is None:
                raise _no_user(user_id)
            store.add_member(conn, group_id, user_id)

    def remove_member(self, group_id: str, user_id: str) -> None:
        with self.core.tx() as conn:
            if store.group(conn, group_id) is None:
                raise _no_group(group_id)
            if store.user(conn, user_id) is None:
                raise _no_user(user_id)
            store.remove_member(conn, group_id, user_id)


def _no_user(user_id: str) -> NotFound:
    return NotFound(f"User with id {user_id} does not exist")


def _no_group(group_id: str) -> NotFound:
    return NotFound(f"Group with id {group_id} does not exist")
