"""Django's users and groups as the task list's (``bpm.contrib.django.identity``): a Django
user signs in with their Django password, their groups are candidate groups, a superuser
administers, and every write is refused (Django's admin owns them)."""

from __future__ import annotations

import uuid

import pytest

from bpm.errors import Forbidden
from bpm.identity import ADMIN_GROUP, Group, GroupQuery, User, UserQuery


def test_django_users_sign_in_and_their_groups_are_candidate_groups(shop_db: str) -> None:
    from django.contrib.auth.models import Group as DjangoGroup
    from django.contrib.auth.models import User as DjangoUser

    from bpm.contrib.django.identity import DjangoIdentity

    tag = uuid.uuid4().hex[:8]
    group = DjangoGroup.objects.create(name=f"sales-{tag}")
    ann = DjangoUser.objects.create_user(
        f"ann-{tag}", "ann@example.com", "pw-ann-123", first_name="Ann"
    )
    ann.groups.add(group)
    boss = DjangoUser.objects.create_superuser(f"boss-{tag}", "b@example.com", "pw-boss-123")
    gone = DjangoUser.objects.create_user(f"gone-{tag}", password="pw-gone-123", is_active=False)
    identity = DjangoIdentity()
    assert identity.check_password(ann.username, "pw-ann-123")
    assert not identity.check_password(ann.username, "wrong")
    assert not identity.check_password(gone.username, "pw-gone-123")  # inactive: nobody
    assert not identity.check_password(f"nobody-{tag}", "x")
    assert identity.groups_of(ann.username) == {group.name}
    assert ADMIN_GROUP in identity.groups_of(boss.username)
    assert identity.user(ann.username) == User(ann.username, "Ann", None, "ann@example.com")
    members = identity.users(UserQuery(member_of_group=group.name))
    assert [u.id for u in members] == [ann.username]
    assert identity.group(group.name) == Group(group.name, group.name)
    assert [g.id for g in identity.groups(GroupQuery(member=ann.username))] == [group.name]
    before = identity.password_version(ann.username)
    ann.set_password("a new one 456")
    ann.save()
    assert identity.password_version(ann.username) != before  # ends task-list sessions
    with pytest.raises(Forbidden, match="read-only"):
        identity.create_user(User(f"eve-{tag}"), "pw-eve-123")
    with pytest.raises(Forbidden, match="read-only"):
        identity.add_member(group.name, boss.username)
    assert not DjangoUser.objects.filter(username=f"eve-{tag}").exists()
    assert list(boss.groups.all()) == []
