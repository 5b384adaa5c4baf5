"""Telling a dead lease holder from a live one, when that can be proven.

A lease owner is ``host:pid`` (:func:`bpm.engine.core.default_worker_id`). On the same host
a process that no longer exists (or is a zombie waiting to be reaped) holds nothing: its
step may be taken back at once instead of when its lease runs out. Celery redelivers the
message of a child that was killed (``task_reject_on_worker_lost``) to a process of the same
host, usually a sibling, which is exactly the one that can tell.

Anything else is not proof: an owner on another host, an owner id that is not
``host:pid``, a pid that is alive (perhaps reused by another program: then the lease
expires as usual, which is slower but safe).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def parse_owner(owner: str) -> tuple[str, int] | None:
    """``host:pid`` -> (host, pid); None for an owner id of another shape."""
    host, sep, pid = owner.rpartition(":")
    if not sep or not host or not pid.isdigit():
        return None
    return host, int(pid)


def pid_is_gone(pid: int) -> bool:
    """True when no process ``pid`` runs on this host (a zombie counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's process: alive
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        # "pid (comm) S ...": the state follows the last ')' (comm may contain spaces)
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


def provably_dead(owner: str, *, host: str | None = None) -> bool:
    """True only when ``owner`` is a process of this host that no longer runs."""
    parsed = parse_owner(owner)
    if parsed is None:
        return False
    owner_host, pid = parsed
    if owner_host != (host or socket.gethostname()):
        return False
    if pid == os.getpid():
        return False  # this very process: alive by definition
    return pid_is_gone(pid)
