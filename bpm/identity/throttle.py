"""Slowing brute-force sign-ins, per user and per address.

Each failed sign-in is counted for the user id tried and for the client address. Past a
few free failures within the window, the next try must wait ``2 ** (failures - free)``
seconds (at most ``cap``); a try before then is refused without checking the password, so
guessing costs the guesser time, not the server argon2 work. A success clears the user's
count. Counts live in the process (several API processes each keep their own: the bound
holds per process). Old entries are dropped, so the table stays small.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_ENTRIES = 10_000


@dataclass
class _Count:
    failures: int = 0
    last: float = 0.0


@dataclass
class SignInThrottle:
    """Counts failed sign-ins; :meth:`wait` says how long a new try must wait."""

    free_per_user: int = 5
    free_per_address: int = 20
    window: float = 900.0
    cap: float = 900.0
    clock: Callable[[], float] = time.monotonic
    _counts: dict[str, _Count] = field(default_factory=dict)

    def _delay(self, name: str, free: int, now: float) -> float:
        count = self._counts.get(name)
        if count is None or now - count.last > self.window:
            return 0.0
        over = count.failures - free
        if over < 0:
            return 0.0
        due = count.last + min(2.0**over, self.cap)
        return max(0.0, due - now)

    def wait(self, user: str, address: str | None, *, now: float | None = None) -> float:
        """Seconds a try for ``user`` from ``address`` must still wait (0: go ahead)."""
        at = self.clock() if now is None else now
        user_wait = self._delay("u:" + user, self.free_per_user, at)
        address_wait = self._delay("a:" + address, self.free_per_address, at) if address else 0.0
        return max(user_wait, address_wait)

    def failed(self, user: str, address: str | None, *, now: float | None = None) -> None:
        at = self.clock() if now is None else now
        for name in ("u:" + user, *(["a:" + address] if address else [])):
            count = self._counts.pop(name, None) or _Count()
            if at - count.last > self.window:
                count = _Count()
            count.failures += 1
            count.last = at
            self._counts[name] = count  # re-inserted: the dict's order is oldest first
        while len(self._counts) > MAX_ENTRIES:
            del self._counts[next(iter(self._counts))]

    def succeeded(self, user: str) -> None:
        self._counts.pop("u:" + user, None)
