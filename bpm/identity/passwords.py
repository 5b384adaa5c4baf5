"""Passwords are kept as argon2id hashes (argon2-cffi, its recommended parameters: RFC 9106's
low-memory choice) and never anywhere else: not in a row, a log, a history event or an
answer. A hash made with older parameters is replaced at the next successful sign-in."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from bpm.errors import InvalidOperation

_HASHER = PasswordHasher()
MIN_LENGTH = 8
#: argon2 hashes what it is given: a bound keeps a request from making it hash megabytes.
MAX_LENGTH = 1024
#: Verified against when the user does not exist, so a missing user costs the same time
#: as a wrong password (no user enumeration by timing).
_DUMMY = _HASHER.hash("no such user: the same cost as a wrong password")


def use_parameters(hasher: PasswordHasher) -> PasswordHasher:
    """Hash new passwords with ``hasher``'s parameters from now on; returns the previous
    hasher. Hashes already made keep verifying (each names its parameters); one made with
    other parameters is replaced at its next successful sign-in. Tests use cheap ones."""
    global _HASHER
    previous, _HASHER = _HASHER, hasher
    return previous


def check_policy(password: object) -> str:
    """The password if it may be set, else :class:`InvalidOperation` saying why."""
    if not isinstance(password, str):
        raise InvalidOperation("password must be a string")
    if len(password) < MIN_LENGTH:
        raise InvalidOperation(f"password must have at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise InvalidOperation(f"password must have at most {MAX_LENGTH} characters")
    if "\0" in password:
        raise InvalidOperation("password must not contain NUL")
    return password


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify(hashed: str | None, password: str) -> bool:
    """True when ``password`` matches ``hashed`` (None: no password set, always False,
    after the same work)."""
    if len(password) > MAX_LENGTH:
        return False
    try:
        return _HASHER.verify(hashed or _DUMMY, password) and hashed is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(hashed: str) -> bool:
    try:
        return _HASHER.check_needs_rehash(hashed)
    except InvalidHashError:
        return False
