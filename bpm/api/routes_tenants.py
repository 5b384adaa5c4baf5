"""Tenants of Camunda 7 (``/tenant``): names only, with users and groups as members.

Administrators (an operator key, ``camunda-admin``) see and change every tenant; a user
sees the tenants they belong to, directly or through one of their groups (another tenant
answers 404, as if it did not exist) and changes none. A tenant names a deployment
(``tenant-id``) and so its definitions: ``tenantIdIn`` / ``withoutTenantId`` of
``/deployment``, ``/task``, ``/history/task`` and ``/process-instance`` match it, and a
task's or an instance's ``tenantId`` is it. Tenants grant nothing.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, forbidden, principal
from bpm.api.bodies import Body
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.engine import Engine
from bpm.identity.tenants import Tenants
from bpm.identity.values import Tenant
from bpm.store.tenants import TENANT_SORTS, TenantQuery

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]

TENANT_FILTERS = (
    ("id", "string"), ("name", "string"), ("nameLike", "string"), ("userMember", "string"),
    ("groupMember", "string"), ("includingGroupsOfUser", "boolean"),
)  # fmt: skip


class TenantDto(Body):
    id: str | None = Field(None, max_length=255)
    name: str | None = Field(None, max_length=255)


class NewTenantDto(TenantDto):
    id: str = Field(min_length=1, max_length=255)


class TenantOut(s.Dto):
    id: str
    name: str | None


def _tenants(request: Request) -> Tenants:
    engine: Engine = request.app.state.engine
    return Tenants(engine.core)


def _no_tenant(tenant_id: str) -> ApiError:
    return ApiError(404, "InvalidRequestException", f"Tenant with id {tenant_id} does not exist")


def _reader(who: Principal) -> None:
    if who.key is not None and who.key.topics is not None:
        raise forbidden(f"API key '{who.key.id}' is limited to topics and may not read tenants")


def _query(request: Request, who: Principal) -> TenantQuery:
    p = Params.of_query(request.query_params)
    one = p.text("id")
    user = p.text("userMember")
    groups: tuple[str, ...] = ()
    ids: tuple[str, ...] | None = None if one is None else (one,)
    if user is not None and p.true("includingGroupsOfUser"):
        groups = tuple(sorted(request.app.state.identity.groups_of(user)))
    if not who.admin:  # a user: the tenants they belong to, directly or through a group
        mine = who.person.id if who.person else ""
        if user is not None and user != mine:
            ids = ()
        user = mine
        groups = tuple(sorted(who.person.groups)) if who.person else ()
    return TenantQuery(
        ids=ids,
        name=p.text("name"),
        name_like=p.text("nameLike"),
        user_member=user,
        member_groups=groups,
        group_member=p.text("groupMember"),
        sorting=p.sorting(tuple(TENANT_SORTS)),
    )


def tenant_json(t: Tenant) -> dict[str, Any]:
    return {"id": t.id, "name": t.name}


@router.get(
    "/tenant",
    response_model=list[TenantOut],
    responses=oa.errors(400),
    openapi_extra=oa.query(TENANT_FILTERS, oa.PAGING, oa.sorting(tuple(TENANT_SORTS))),
)
async def tenants(request: Request, who: Who) -> Response:
    """Tenants matching every filter (a user who is no admin: the tenants they are in)."""
    _reader(who)
    at = page(request.query_params)

    def read() -> list[Tenant]:
        return _tenants(request).find(_query(request, who), offset=at.offset, limit=at.limit)

    return JSONResponse([tenant_json(t) for t in await run_in_threadpool(read)])


@router.get(
    "/tenant/count",
    response_model=s.CountDto,
    responses=oa.errors(400),
    openapi_extra=oa.query(TENANT_FILTERS),
)
async def count(request: Request, who: Who) -> Response:
    _reader(who)
    n = await run_in_threadpool(lambda: _tenants(request).count(_query(request, who)))
    return JSONResponse({"count": n})


@router.post("/tenant/create", status_code=204, responses=oa.errors(400, 403))
async def create(body: NewTenantDto, request: Request, who: Who) -> Response:
    """``{"id", "name"}``: an admin only."""
    who.check_admin("create tenants")
    await run_in_threadpool(_tenants(request).create, Tenant(body.id, body.name))
    return Response(status_code=204)


@router.get("/tenant/{tenant_id}", response_model=TenantOut, responses=oa.errors(404))
async def one(tenant_id: str, request: Request, who: Who) -> Response:
    _reader(who)

    def read() -> list[Tenant]:
        q = _query(request, who)
        return _tenants(request).find(TenantQuery(
            ids=(tenant_id,), user_member=q.user_member if not who.admin else None,
            member_groups=q.member_groups if not who.admin else (),
        ))  # fmt: skip

    found = await run_in_threadpool(read)
    if not found:
        raise _no_tenant(tenant_id)
    return JSONResponse(tenant_json(found[0]))


@router.put("/tenant/{tenant_id}", status_code=204, responses=oa.errors(400, 403, 404))
async def update(tenant_id: str, body: TenantDto, request: Request, who: Who) -> Response:
    who.check_admin("change tenants")
    if body.id is not None and body.id != tenant_id:
        raise bad_request("a tenant's id cannot change: id must be the tenant's own")
    await run_in_threadpool(_tenants(request).rename, Tenant(tenant_id, body.name))
    return Response(status_code=204)


@router.delete("/tenant/{tenant_id}", status_code=204, responses=oa.errors(403, 404))
async def delete(tenant_id: str, request: Request, who: Who) -> Response:
    who.check_admin("delete tenants")
    await run_in_threadpool(_tenants(request).delete, tenant_id)
    return Response(status_code=204)


async def _member(
    request: Request, who: Principal, tenant_id: str, kind: str, member: str, add: bool
) -> Response:
    who.check_admin("change tenant memberships")
    tenants = _tenants(request)
    if add:
        await run_in_threadpool(tenants.add_member, tenant_id, kind, member)
    else:
        await run_in_threadpool(tenants.remove_member, tenant_id, kind, member)
    return Response(status_code=204)


MEMBER: dict[str, Any] = {"status_code": 204, "responses": oa.errors(400, 403, 404)}


@router.put("/tenant/{tenant_id}/user-members/{user_id}", **MEMBER)
async def add_user(tenant_id: str, user_id: str, request: Request, who: Who) -> Response:
    return await _member(request, who, tenant_id, "user", user_id, True)


@router.delete("/tenant/{tenant_id}/user-members/{user_id}", **MEMBER)
async def remove_user(tenant_id: str, user_id: str, request: Request, who: Who) -> Response:
    return await _member(request, who, tenant_id, "user", user_id, False)


@router.put("/tenant/{tenant_id}/group-members/{group_id}", **MEMBER)
async def add_group(tenant_id: str, group_id: str, request: Request, who: Who) -> Response:
    return await _member(request, who, tenant_id, "group", group_id, True)


@router.delete("/tenant/{tenant_id}/group-members/{group_id}", **MEMBER)
async def remove_group(tenant_id: str, group_id: str, request: Request, who: Who) -> Response:
    return await _member(request, who, tenant_id, "group", group_id, False)
