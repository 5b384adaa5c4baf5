"""What an id, a name or an e-mail may be before it is stored (one place for every
provider and the REST layer)."""

from __future__ import annotations

from bpm.errors import InvalidOperation
from bpm.identity.values import MAX_ID, Group, User


def check_id(kind: str, value: object) -> str:
    """A user or group id: 1 to 255 printable characters without ``/`` (it is a path
    segment of the REST API), else :class:`InvalidOperation` naming the field."""
    if not isinstance(value, str) or not value:
        raise InvalidOperation(f"{kind} id is required")
    if len(value) > MAX_ID:
        raise InvalidOperation(f"{kind} id must have at most {MAX_ID} characters")
    if not value.isprintable() or "/" in value or value != value.strip():
        raise InvalidOperation(f"{kind} id must be printable, without '/' or surrounding spaces")
    return value


def _text(field: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidOperation(f"{field} must be a string")
    if len(value) > MAX_ID:
        raise InvalidOperation(f"{field} must have at most {MAX_ID} characters")
    if "\0" in value:
        raise InvalidOperation(f"{field} must not contain NUL")
    return value or None


def checked_user(user: User) -> User:
    check_id("user", user.id)
    _text("firstName", user.first_name)
    _text("lastName", user.last_name)
    email = _text("email", user.email)
    if email is not None and ("@" not in email or any(c.isspace() for c in email)):
        raise InvalidOperation("email must look like name@host")
    return user


def checked_group(group: Group) -> Group:
    check_id("group", group.id)
    _text("name", group.name)
    _text("type", group.type)
    return group
