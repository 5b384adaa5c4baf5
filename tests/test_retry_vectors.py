"""The deterministic backoff pinned to the seed's vectors (DESIGN section 7).

The expected values are not computed by :mod:`bpm.retry`: the two delays are the seed's
own vectors, and :func:`reference_delay_ms` is the rule written out again from DESIGN
section 7, so a change to the formula (the cap's exponent, the ``1 +``, the byte order,
the length prefixes, the width of the attempt) fails here.
"""

from __future__ import annotations

import hashlib
import struct
from datetime import timedelta

import pytest

from bpm import RetryPolicy
from bpm.retry import jitter_u64

MS = timedelta(milliseconds=1)


def reference_delay_ms(initial_ms: int, max_ms: int, run: str, step: str, attempt: int) -> int:
    """DESIGN section 7, word for word."""
    cap = min(initial_ms * 2 ** min(attempt - 1, 63), max_ms)
    r, s = run.encode(), step.encode()
    digest = hashlib.sha256(
        b"a3s-flow.retry-jitter.v1"
        + len(r).to_bytes(8, "big")
        + r
        + len(s).to_bytes(8, "big")
        + s
        + attempt.to_bytes(4, "big")
    ).digest()
    return 1 + int.from_bytes(digest[:8], "big") % cap


def test_the_seed_vectors() -> None:
    """``exponential(8, 100ms, 400ms)``, run ``run-1``, step ``step-1``: 90 ms, 179 ms."""
    policy = RetryPolicy.exponential(8, 100 * MS, 400 * MS)
    assert policy.delay(1, "run-1", "step-1") == 90 * MS
    assert policy.delay(2, "run-1", "step-1") == 179 * MS


def test_the_reference_gives_the_seed_vectors() -> None:
    """The reference below is only trusted because it reproduces the seed's numbers."""
    assert reference_delay_ms(100, 400, "run-1", "step-1", 1) == 90
    assert reference_delay_ms(100, 400, "run-1", "step-1", 2) == 179


@pytest.mark.parametrize("attempt", range(1, 12))
@pytest.mark.parametrize(
    ("run", "step"), [("run-1", "step-1"), ("0b6f6f1e-instance", "charge"), ("é", "ü" * 40)]
)
def test_every_attempt_follows_the_reference(run: str, step: str, attempt: int) -> None:
    policy = RetryPolicy.exponential(8, 100 * MS, 30_000 * MS)
    expected = reference_delay_ms(100, 30_000, run, step, attempt)
    assert policy.delay(attempt, run, step) == expected * MS
    assert 1 <= expected <= min(100 * 2 ** (attempt - 1), 30_000)


def test_the_cap_stops_growing_at_the_maximum_and_the_shift_at_63() -> None:
    policy = RetryPolicy.exponential(99, 1 * MS, 5 * MS)
    for attempt in (3, 4, 64, 65, 1000):
        assert policy.delay(attempt, "r", "s") == reference_delay_ms(1, 5, "r", "s", attempt) * MS


def test_the_jitter_digest_is_big_endian_over_the_length_prefixed_fields() -> None:
    """The digest's input, built by hand (struct, not int.to_bytes) for one case."""
    data = b"a3s-flow.retry-jitter.v1" + struct.pack(">Q", 5) + b"run-1"
    data += struct.pack(">Q", 6) + b"step-1" + struct.pack(">I", 2)
    expected = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
    assert jitter_u64("run-1", "step-1", 2) == expected
    assert 1 + expected % 200 == 179
