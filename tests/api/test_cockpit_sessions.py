"""Key roles and cockpit sessions, as values: parsing, signing, tampering, expiry."""

from __future__ import annotations

import pytest

from bpm.api.auth import OPERATOR, VIEWER, Authenticator, Principal, parse_api_keys
from bpm.api.cockpit_auth import Sessions
from bpm.errors import ConfigurationError


def test_roles_in_api_keys() -> None:
    ops, view, worker = parse_api_keys("ops:s1, view:s2:role=viewer, w:s3:a|b")
    assert ops.role == OPERATOR and ops.topics is None
    assert view.role == VIEWER and view.topics is None
    assert worker.topics == frozenset({"a", "b"})
    assert Principal(ops).may_act and not Principal(ops).read_only
    assert not Principal(view).may_act and Principal(view).read_only
    assert not Principal(worker).may_act
    assert parse_api_keys("x:y:role=operator")[0].role == OPERATOR


@pytest.mark.parametrize(
    ("text", "words"),
    [("x:y:role=admin", "role=viewer or role=operator"), ("x:y:role=", "role=viewer")],
)
def test_unknown_roles_are_refused(text: str, words: str) -> None:
    with pytest.raises(ConfigurationError, match=words):
        parse_api_keys(text)


def test_sessions_are_signed_per_key_and_expire() -> None:
    keys = parse_api_keys("ops:s1,view:s2:role=viewer")
    auth = Authenticator(keys)
    sessions = Sessions(secret=b"server")
    cookie = sessions.issue(keys[0], now=1000.0)
    assert sessions.verify(cookie, auth, now=1001.0) == keys[0]
    assert sessions.verify(cookie, auth, now=1000.0 + sessions.ttl + 1) is None  # expired
    key_id, expires, nonce, mac = cookie.split(".")
    # claiming another key, or a later expiry, breaks the MAC
    other = Sessions(secret=b"server").issue(keys[1], now=1000.0).split(".")[0]
    assert sessions.verify(f"{other}.{expires}.{nonce}.{mac}", auth, now=1001.0) is None
    assert sessions.verify(f"{key_id}.{int(expires) + 99}.{nonce}.{mac}", auth, now=1001.0) is None
    assert sessions.verify("garbage", auth) is None
    assert sessions.verify("a.b.c.d", auth) is None
    # another server secret, or a changed key secret, ends the session
    assert Sessions(secret=b"other").verify(cookie, auth, now=1001.0) is None
    rotated = Authenticator(parse_api_keys("ops:new,view:s2:role=viewer"))
    assert sessions.verify(cookie, rotated, now=1001.0) is None
    # CSRF tokens belong to one session
    second = sessions.issue(keys[0], now=1000.0)
    assert sessions.csrf(keys[0], cookie) != sessions.csrf(keys[0], second)
    assert sessions.csrf(keys[0], cookie) == sessions.csrf(keys[0], cookie)
