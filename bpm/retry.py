"""RetryPolicy and the deterministic backoff shared with A3S Flow.

``max_attempts`` counts the first attempt. Exponential delays use deterministic full
jitter, so a restarted process computes the same delay without stored random state.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, replace
from datetime import timedelta
from enum import StrEnum

_JITTER_DOMAIN = b"a3s-flow.retry-jitter.v1"


class FailureAction(StrEnum):
    """What happens when the last attempt fails."""

    INCIDENT = "incident"
    FAIL = "fail"
    CONTINUE = "continue"
    COMPENSATE = "compensate"  # the saga: undo the completed steps, newest first


class BackoffKind(StrEnum):
    NONE = "none"
    FIXED = "fixed"
    EXPONENTIAL = "exponential"


def _ms(delta: timedelta) -> int:
    return int(delta / timedelta(milliseconds=1))


def jitter_u64(run_id: str, step_id: str, failed_attempt: int) -> int:
    """The first 8 bytes (big-endian) of the SHA-256 jitter digest of DESIGN section 7."""
    run = run_id.encode()
    step = step_id.encode()
    digest = hashlib.sha256(
        _JITTER_DOMAIN
        + struct.pack(">Q", len(run))
        + run
        + struct.pack(">Q", len(step))
        + step
        + struct.pack(">I", failed_attempt & 0xFFFFFFFF)
    ).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass(frozen=True)
class RetryPolicy:
    """How often a failing step runs and how long it waits between attempts."""

    max_attempts: int = 3
    kind: BackoffKind = BackoffKind.NONE
    initial: timedelta = timedelta(0)
    maximum: timedelta = timedelta(0)
    on_exhausted: FailureAction = FailureAction.INCIDENT

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_attempts", max(1, int(self.max_attempts)))
        if self.kind is BackoffKind.EXPONENTIAL:
            initial = max(self.initial, timedelta(milliseconds=1))
            object.__setattr__(self, "initial", initial)
            object.__setattr__(self, "maximum", max(self.maximum, initial))
        if self.initial < timedelta(0) or self.maximum < timedelta(0):
            raise ValueError("retry delays cannot be negative")

    @classmethod
    def default(cls) -> RetryPolicy:
        """Three attempts in all, no delay, an incident when they are used up."""
        return cls()

    @classmethod
    def none(cls) -> RetryPolicy:
        """Run once; a failure is final."""
        return cls(max_attempts=1)

    @classmethod
    def fixed(cls, max_attempts: int, delay: timedelta | float) -> RetryPolicy:
        """``max_attempts`` in all, ``delay`` (a timedelta or seconds) between them."""
        d = delay if isinstance(delay, timedelta) else timedelta(seconds=delay)
        return cls(max_attempts=max_attempts, kind=BackoffKind.FIXED, initial=d, maximum=d)

    @classmethod
    def exponential(
        cls, max_attempts: int, initial: timedelta | float, maximum: timedelta | float
    ) -> RetryPolicy:
        """Exponential cap with deterministic full jitter between 1 ms and the cap."""
        i = initial if isinstance(initial, timedelta) else timedelta(seconds=initial)
        m = maximum if isinstance(maximum, timedelta) else timedelta(seconds=maximum)
        return cls(max_attempts=max_attempts, kind=BackoffKind.EXPONENTIAL, initial=i, maximum=m)

    def continue_on_failure(self) -> RetryPolicy:
        """After the last failure, continue on the error path instead of stopping."""
        return replace(self, on_exhausted=FailureAction.CONTINUE)

    def fail_instance(self) -> RetryPolicy:
        """After the last failure, end the whole instance as ``failed``."""
        return replace(self, on_exhausted=FailureAction.FAIL)

    def compensate_on_failure(self) -> RetryPolicy:
        """After the last failure, compensate the instance (the saga): cancel what still
        runs, run the compensation handlers of the completed steps newest first, and end
        the instance ``compensated``."""
        return replace(self, on_exhausted=FailureAction.COMPENSATE)

    def open_incident(self) -> RetryPolicy:
        """After the last failure, open an incident an operator can retry (the default)."""
        return replace(self, on_exhausted=FailureAction.INCIDENT)

    def has_attempt_after(self, failed_attempt: int) -> bool:
        """True when attempt ``failed_attempt + 1`` is allowed."""
        return failed_attempt < self.max_attempts

    def delay(self, failed_attempt: int, run_id: str, step_id: str) -> timedelta:
        """The wait after failed attempt ``failed_attempt`` (1-based) of ``step_id``."""
        if self.kind is BackoffKind.NONE:
            return timedelta(0)
        if self.kind is BackoffKind.FIXED:
            return self.initial
        initial_ms = _ms(self.initial)
        max_ms = _ms(self.maximum)
        shift = min(max(failed_attempt - 1, 0), 63)
        cap = min(initial_ms * (1 << shift), max_ms)
        cap = max(cap, 1)
        return timedelta(milliseconds=1 + jitter_u64(run_id, step_id, failed_attempt) % cap)

    def to_dict(self) -> dict[str, object]:
        return {
            "max_attempts": self.max_attempts,
            "kind": self.kind.value,
            "initial_ms": _ms(self.initial),
            "maximum_ms": _ms(self.maximum),
            "on_exhausted": self.on_exhausted.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> RetryPolicy:
        return cls(
            max_attempts=int(str(data["max_attempts"])),
            kind=BackoffKind(str(data["kind"])),
            initial=timedelta(milliseconds=int(str(data["initial_ms"]))),
            maximum=timedelta(milliseconds=int(str(data["maximum_ms"]))),
            on_exhausted=FailureAction(str(data["on_exhausted"])),
        )
