"""Tenants: names only, with users and groups as members, kept in the engine's tables
whichever identity provider names the users (the database, a file, Django). One short
transaction each."""

from __future__ import annotations

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation, NotFound
from bpm.identity.checks import check_id
from bpm.identity.values import MAX_ID, Tenant
from bpm.store import tenants as tenant_store
from bpm.store.tenants import TenantQuery

MAX_NAME = MAX_ID


class Tenants:
    """Tenants (names only) and their user and group members (``engine.tenants``)."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def create(self, tenant: Tenant) -> None:
        check_id("tenant", tenant.id)
        if tenant.name is not None and (len(tenant.name) > MAX_NAME or "\0" in tenant.name):
            raise InvalidOperation(f"name must have at most {MAX_NAME} characters, no NUL")
        with self.core.tx() as conn:
            if not tenant_store.insert(conn, tenant):
                raise InvalidOperation(f"Tenant with id {tenant.id} already exists")

    def get(self, tenant_id: str) -> Tenant:
        with self.core.tx() as conn:
            found = tenant_store.one(conn, tenant_id)
        if found is None:
            raise NotFound(f"Tenant with id {tenant_id} does not exist")
        return found

    def rename(self, tenant: Tenant) -> None:
        if tenant.name is not None and (len(tenant.name) > MAX_NAME or "\0" in tenant.name):
            raise InvalidOperation(f"name must have at most {MAX_NAME} characters, no NUL")
        with self.core.tx() as conn:
            if not tenant_store.rename(conn, tenant):
                raise NotFound(f"Tenant with id {tenant.id} does not exist")

    def delete(self, tenant_id: str) -> None:
        with self.core.tx() as conn:
            if not tenant_store.remove(conn, tenant_id):
                raise NotFound(f"Tenant with id {tenant_id} does not exist")

    def add_member(self, tenant_id: str, kind: str, member_id: str) -> None:
        """Idempotent; :class:`NotFound` for an unknown tenant (nothing changed)."""
        check_id(kind, member_id)
        with self.core.tx() as conn:
            if tenant_store.one(conn, tenant_id) is None:
                raise NotFound(f"Tenant with id {tenant_id} does not exist")
            tenant_store.add_member(conn, tenant_id, kind, member_id)

    def remove_member(self, tenant_id: str, kind: str, member_id: str) -> None:
        with self.core.tx() as conn:
            if tenant_store.one(conn, tenant_id) is None:
                raise NotFound(f"Tenant with id {tenant_id} does not exist")
            tenant_store.remove_member(conn, tenant_id, kind, member_id)

    def find(self, q: TenantQuery, *, offset: int = 0, limit: int | None = None) -> list[Tenant]:
        with self.core.tx() as conn:
            return tenant_store.find(conn, q, offset=offset, limit=limit)

    def count(self, q: TenantQuery) -> int:
        with self.core.tx() as conn:
            return tenant_store.count(conn, q)
