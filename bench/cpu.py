"""CPU time per role (API server, worker processes, PostgreSQL backends) during a timed run.

Throughput on a shared 2-core machine moves with whatever else runs; the CPU seconds a run
consumes per task barely do. A :class:`CpuMeter` samples ``/proc/<pid>/stat`` of each role's
processes every ``interval`` seconds while a run is timed and keeps, per process, the CPU it
used inside the window (a process that exits keeps its last reading). With the CPU per task
of each side, a throughput ratio can be explained: on ``n`` cores a side cannot go faster
than ``n / cpu_per_task`` tasks per second.

Linux only (``/proc``); elsewhere every figure is zero.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psycopg

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far; None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[1].split()  # after "(comm)", which may hold spaces
    return (int(fields[11]) + int(fields[12])) / _TICK


def process_tree(root: int) -> set[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(raw.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def backends_of(admin_dsn: str, database: str) -> Callable[[], Iterable[int]]:
    """A role: the PostgreSQL backend processes connected to ``database`` (read through a
    connection to the admin database, so the meter's own backend is not counted)."""
    conn = psycopg.connect(admin_dsn, autocommit=True)

    def pids() -> list[int]:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchall()
        return [int(r[0]) for r in rows]

    pids.close = conn.close  # type: ignore[attr-defined]
    return pids


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds used inside the window, per role."""

    seconds: Mapping[str, float]

    def per_item_ms(self, items: int) -> dict[str, float]:
        out = {role: s * 1000 / items for role, s in self.seconds.items()}
        out["total"] = sum(self.seconds.values()) * 1000 / items
        return out

    def describe(self, items: int, unit: str = "task") -> str:
        parts = [f"{role} {ms:.2f}" for role, ms in self.per_item_ms(items).items()]
        return f"CPU ms per {unit}: " + ", ".join(parts)


class CpuMeter:
    """Samples the roles' processes from :meth:`start` to :meth:`stop`."""

    def __init__(
        self, roles: Mapping[str, Callable[[], Iterable[int]]], interval: float = 0.1
    ) -> None:
        self.roles = roles
        self.interval = interval
        self._first: dict[tuple[str, int], float] = {}
        self._last: dict[tuple[str, int], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = False

    def start(self) -> None:
        self._sample(initial=True)
        self._started = True
        self._thread.start()

    def stop(self) -> CpuUse:
        self._stop.set()
        self._thread.join()
        self._sample(initial=False)
        used: dict[str, float] = dict.fromkeys(self.roles, 0.0)
        for key, last in self._last.items():
            used[key[0]] += max(0.0, last - self._first.get(key, 0.0))
        for role in self.roles.values():
            close = getattr(role, "close", None)
            if close is not None:
                close()
        return CpuUse(used)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample(initial=False)

    def _sample(self, *, initial: bool) -> None:
        for name, pids in self.roles.items():
            try:
                current = list(pids())
            except Exception:  # a role that cannot be listed now is sampled next tick
                continue
            for pid in current:
                value = cpu_seconds(pid)
                if value is None:
                    continue
                key = (name, pid)
                if initial:
                    self._first[key] = value
                # a process born inside the window counts from zero
                self._last[key] = value
