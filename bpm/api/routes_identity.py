"""Identity endpoints of Camunda 7: users (``/user``), groups (``/group``), memberships
(``/group/{id}/members/{userId}``), ``/identity/groups`` and ``/identity/verify``.

Administrators (an operator key, or a member of ``camunda-admin``) see and change
everything. A user sees their own profile and the groups they are in, changes their own
profile, and their own password only with their current one (``authenticatedUserPassword``,
as Camunda asks). A password is never answered, logged or kept other than as its hash.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Authenticator, Principal, forbidden, principal
from bpm.api.bodies import Body
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.errors import InvalidOperation
from bpm.identity import Group, GroupQuery, IdentityProvider, User, UserQuery
from bpm.identity.checks import check_id
from bpm.identity.passwords import MAX_LENGTH, MIN_LENGTH

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
Text = Annotated[str | None, Field(None, max_length=255)]


class ProfileDto(Body):
    id: str | None = Field(None, max_length=255)
    firstName: Text = None
    lastName: Text = None
    email: Text = None


class NewProfileDto(ProfileDto):
    id: str = Field(min_length=1, max_length=255)


class CredentialsDto(Body):
    password: str = Field(min_length=MIN_LENGTH, max_length=MAX_LENGTH)
    authenticatedUserPassword: str | None = Field(None, max_length=MAX_LENGTH)


class UserCreateDto(Body):
    profile: NewProfileDto
    credentials: CredentialsDto | None = None


class GroupDto(Body):
    id: str | None = Field(None, max_length=255)
    name: Text = None
    type: Text = None


class NewGroupDto(GroupDto):
    id: str = Field(min_length=1, max_length=255)


class VerifyDto(Body):
    username: str = Field(max_length=255)
    password: str = Field(max_length=MAX_LENGTH)


class UserProfileOut(s.Dto):
    id: str
    firstName: str | None
    lastName: str | None
    email: str | None


class GroupOut(s.Dto):
    id: str
    name: str | None
    type: str | None


class AuthenticationResultOut(s.Dto):
    authenticatedUser: str | None
    authenticated: bool


def _identity(request: Request) -> IdentityProvider:
    identity: IdentityProvider = request.app.state.identity
    return identity


def _auth(request: Request) -> Authenticator:
    auth: Authenticator = request.app.state.auth
    return auth


def profile_json(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "firstName": user.first_name,
        "lastName": user.last_name,
        "email": user.email,
    }


def group_json(group: Group) -> dict[str, Any]:
    return {"id": group.id, "name": group.name, "type": group.type}


def _no_user(user_id: str) -> ApiError:
    return ApiError(404, "InvalidRequestException", f"User with id {user_id} does not exist")


def _no_group(group_id: str) -> ApiError:
    return ApiError(404, "InvalidRequestException", f"Group with id {group_id} does not exist")


def _is_self(who: Principal, user_id: str) -> bool:
    return who.person is not None and who.person.id == user_id


def _checked(kind: str, value: str) -> str:
    try:
        return check_id(kind, value)
    except InvalidOperation as exc:
        raise bad_request(str(exc)) from None


USER_FILTERS = (
    ("id", "string"), ("idIn", "list"), ("firstName", "string"), ("firstNameLike", "string"),
    ("lastName", "string"), ("lastNameLike", "string"), ("email", "string"),
    ("emailLike", "string"), ("memberOfGroup", "string"),
)  # fmt: skip
USER_SORTS = ("userId", "firstName", "lastName", "email")
GROUP_FILTERS = (
    ("id", "string"), ("idIn", "list"), ("name", "string"), ("nameLike", "string"),
    ("type", "string"), ("member", "string"),
)  # fmt: skip
GROUP_SORTS = ("id", "name", "type")


def _user_query(request: Request, who: Principal) -> UserQuery:
    p = Params.of_query(request.query_params)
    p.refuse(("memberOfTenant", "potentialStarter"))
    ids = p.texts("idIn")
    one = p.text("id")
    if one is not None:
        ids = (one,) if ids is None else tuple(x for x in ids if x == one)
    if not who.admin:  # a user sees themselves only
        mine = who.person.id if who.person else ""
        ids = (mine,) if ids is None else tuple(x for x in ids if x == mine)
    return UserQuery(
        ids=ids,
        first_name=p.text("firstName"),
        first_name_like=p.text("firstNameLike"),
        last_name=p.text("lastName"),
        last_name_like=p.text("lastNameLike"),
        email=p.text("email"),
        email_like=p.text("emailLike"),
        member_of_group=p.text("memberOfGroup"),
        sorting=p.sorting(USER_SORTS),
    )


def _group_query(request: Request, who: Principal) -> GroupQuery:
    p = Params.of_query(request.query_params)
    p.refuse(("memberOfTenant",))
    ids = p.texts("idIn")
    one = p.text("id")
    if one is not None:
        ids = (one,) if ids is None else tuple(x for x in ids if x == one)
    member = p.text("member")
    if not who.admin:  # a user sees the groups they are in only
        mine = who.person.id if who.person else ""
        if member is not None and member != mine:
            ids = ()
        member = mine
    return GroupQuery(
        ids=ids,
        name=p.text("name"),
        name_like=p.text("nameLike"),
        type=p.text("type"),
        member=member,
        sorting=p.sorting(GROUP_SORTS),
    )


def _reader(who: Principal) -> None:
    """Worker keys have no business here; users read what they may see."""
    if who.key is not None and who.key.topics is not None:
        raise forbidden(f"API key '{who.key.id}' is limited to topics and may not read users")


@router.get(
    "/user",
    response_model=list[UserProfileOut],
    openapi_extra=oa.query(USER_FILTERS, oa.PAGING, oa.sorting(USER_SORTS)),
)
async def users(request: Request, who: Who) -> Response:
    """Users matching every filter (a user who is no admin: themselves only)."""
    _reader(who)
    at = page(request.query_params)
    q = _user_query(request, who)
    found = await run_in_threadpool(
        lambda: _identity(request).users(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([profile_json(u) for u in found])


@router.get("/user/count", response_model=s.CountDto, openapi_extra=oa.query(USER_FILTERS))
async def count_users(request: Request, who: Who) -> Response:
    _reader(who)
    q = _user_query(request, who)
    n = await run_in_threadpool(lambda: _identity(request).count_users(q))
    return JSONResponse({"count": n})


@router.post("/user/create", status_code=204, responses=oa.errors(400, 403))
async def create_user(body: UserCreateDto, request: Request, who: Who) -> Response:
    """``{"profile": {"id", "firstName", "lastName", "email"}, "credentials":
    {"password"}}``: an admin only."""
    who.check_admin("create users")
    if not body.profile.id:
        raise bad_request("profile.id is required")
    user = User(body.profile.id, body.profile.firstName, body.profile.lastName, body.profile.email)
    password = body.credentials.password if body.credentials else None
    await run_in_threadpool(_identity(request).create_user, user, password)
    return Response(status_code=204)


@router.get("/user/{user_id}/profile", response_model=UserProfileOut, responses=oa.errors(404))
async def profile(user_id: str, request: Request, who: Who) -> Response:
    _reader(who)
    if not who.admin and not _is_self(who, user_id):
        raise _no_user(user_id)  # another user's existence is not told
    found = await run_in_threadpool(_identity(request).user, user_id)
    if found is None:
        raise _no_user(user_id)
    return JSONResponse(profile_json(found))


@router.put("/user/{user_id}/profile", status_code=204, responses=oa.errors(400, 403, 404))
async def update_profile(user_id: str, body: ProfileDto, request: Request, who: Who) -> Response:
    """Replace first name, last name and e-mail (the id cannot change): an admin, or the
    user themselves."""
    _reader(who)
    if not who.admin and not _is_self(who, user_id):
        raise forbidden(f"'{who.name}' may not change the profile of user '{user_id}'")
    if body.id is not None and body.id != user_id:
        raise bad_request("a user's id cannot change: profile.id must be the user's own")
    user = User(user_id, body.firstName, body.lastName, body.email)
    await run_in_threadpool(_identity(request).update_profile, user)
    return Response(status_code=204)


@router.put("/user/{user_id}/credentials", status_code=204, responses=oa.errors(400, 403, 404))
async def credentials(user_id: str, body: CredentialsDto, request: Request, who: Who) -> Response:
    """A new password. A user changing their own sends their current one as
    ``authenticatedUserPassword``; an admin changing another's sends their own (an operator
    key: none, its secret proved it)."""
    _reader(who)
    if not who.admin and not _is_self(who, user_id):
        raise forbidden(f"'{who.name}' may not change the password of user '{user_id}'")
    identity = _identity(request)
    if who.person is not None:
        given = body.authenticatedUserPassword or ""
        ok = await run_in_threadpool(identity.check_password, who.person.id, given)
        if not ok:
            raise bad_request(
                "authenticatedUserPassword must be the password of the signed-in user "
                f"'{who.person.id}'"
            )
    await run_in_threadpool(identity.set_password, user_id, body.password)
    return Response(status_code=204)


@router.delete("/user/{user_id}", status_code=204, responses=oa.errors(403, 404))
async def delete_user(user_id: str, request: Request, who: Who) -> Response:
    who.check_admin("delete users")
    await run_in_threadpool(_identity(request).delete_user, user_id)
    return Response(status_code=204)


@router.get(
    "/group",
    response_model=list[GroupOut],
    openapi_extra=oa.query(GROUP_FILTERS, oa.PAGING, oa.sorting(GROUP_SORTS)),
)
async def groups(request: Request, who: Who) -> Response:
    """Groups matching every filter (a user who is no admin: the groups they are in)."""
    _reader(who)
    at = page(request.query_params)
    q = _group_query(request, who)
    found = await run_in_threadpool(
        lambda: _identity(request).groups(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([group_json(g) for g in found])


@router.get("/group/count", response_model=s.CountDto, openapi_extra=oa.query(GROUP_FILTERS))
async def count_groups(request: Request, who: Who) -> Response:
    _reader(who)
    q = _group_query(request, who)
    n = await run_in_threadpool(lambda: _identity(request).count_groups(q))
    return JSONResponse({"count": n})


@router.post("/group/create", status_code=204, responses=oa.errors(400, 403))
async def create_group(body: NewGroupDto, request: Request, who: Who) -> Response:
    who.check_admin("create groups")
    if not body.id:
        raise bad_request("id is required")
    await run_in_threadpool(_identity(request).create_group, Group(body.id, body.name, body.type))
    return Response(status_code=204)


async def _visible_group(request: Request, who: Principal, group_id: str) -> Group:
    identity = _identity(request)
    if not who.admin:
        mine = who.person.groups if who.person else frozenset()
        if group_id not in mine:
            raise _no_group(group_id)
    found = await run_in_threadpool(identity.group, group_id)
    if found is None:
        raise _no_group(group_id)
    return found


@router.get("/group/{group_id}", response_model=GroupOut, responses=oa.errors(404))
async def group(group_id: str, request: Request, who: Who) -> Response:
    _reader(who)
    return JSONResponse(group_json(await _visible_group(request, who, group_id)))


@router.put("/group/{group_id}", status_code=204, responses=oa.errors(400, 403, 404))
async def update_group(group_id: str, body: GroupDto, request: Request, who: Who) -> Response:
    who.check_admin("change groups")
    if body.id is not None and body.id != group_id:
        raise bad_request("a group's id cannot change: id must be the group's own")
    await run_in_threadpool(_identity(request).update_group, Group(group_id, body.name, body.type))
    return Response(status_code=204)


@router.delete("/group/{group_id}", status_code=204, responses=oa.errors(403, 404))
async def delete_group(group_id: str, request: Request, who: Who) -> Response:
    who.check_admin("delete groups")
    await run_in_threadpool(_identity(request).delete_group, group_id)
    return Response(status_code=204)


@router.put("/group/{group_id}/members/{user_id}", status_code=204, responses=oa.errors(403, 404))
async def add_member(group_id: str, user_id: str, request: Request, who: Who) -> Response:
    who.check_admin("change group memberships")
    _checked("group", group_id)
    _checked("user", user_id)
    await run_in_threadpool(_identity(request).add_member, group_id, user_id)
    return Response(status_code=204)


@router.delete(
    "/group/{group_id}/members/{user_id}", status_code=204, responses=oa.errors(403, 404)
)
async def remove_member(group_id: str, user_id: str, request: Request, who: Who) -> Response:
    who.check_admin("change group memberships")
    await run_in_threadpool(_identity(request).remove_member, group_id, user_id)
    return Response(status_code=204)


class GroupInfoOut(s.Dto):
    groups: list[dict[str, Any]]
    groupUsers: list[dict[str, Any]]


@router.get(
    "/identity/groups",
    response_model=GroupInfoOut,
    openapi_extra=oa.query((("userId", "string"),), required=("userId",)),
)
async def identity_groups(request: Request, who: Who) -> Response:
    """The groups of ``userId`` and the users who share one with them (Camunda's
    GroupInfoDto); a user who is no admin may ask about themselves only."""
    _reader(who)
    user_id = Params.of_query(request.query_params).text("userId")
    if not user_id:
        raise bad_request("userId is required")
    if not who.admin and not _is_self(who, user_id):
        raise forbidden(f"'{who.name}' may not read the groups of user '{user_id}'")
    identity = _identity(request)

    def read() -> dict[str, Any]:
        ids = identity.groups_of(user_id)
        found = identity.groups(GroupQuery(ids=tuple(sorted(ids))))
        people: dict[str, User] = {}
        for g in found:
            for u in identity.users(UserQuery(member_of_group=g.id), limit=1000):
                people.setdefault(u.id, u)
        return {
            "groups": [{"id": g.id, "name": g.name} for g in found],
            "groupUsers": [
                {"id": u.id, "firstName": u.first_name, "lastName": u.last_name,
                 "displayName": u.display_name}
                for u in sorted(people.values(), key=lambda u: u.id)
            ],
        }  # fmt: skip

    return JSONResponse(await run_in_threadpool(read))


@router.post("/identity/verify", response_model=AuthenticationResultOut)
async def verify(body: VerifyDto, request: Request, who: Who) -> Response:
    """Whether ``password`` is ``username``'s: ``{"authenticatedUser", "authenticated"}``.
    Slowed like a sign-in (per user and per address: 429 while tries must wait)."""
    _reader(who)
    auth = _auth(request)
    address = request.client.host if request.client else None

    def check() -> bool:
        try:
            auth.sign_in(body.username, body.password, address=address)
        except ApiError as exc:
            if exc.status == 429:
                raise
            return False
        return True

    ok = await run_in_threadpool(check)
    return JSONResponse({"authenticatedUser": body.username if ok else None, "authenticated": ok})
