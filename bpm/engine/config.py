"""Engine settings as one typed value, from code or from ``BPM_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta

from bpm.errors import ConfigurationError
from bpm.runtime.walker import DEFAULT_MAX_STEPS
from bpm.runtime.work import (
    DEFAULT_MAX_INSTANCE_VARIABLE_BYTES,
    DEFAULT_MAX_UPDATE_BYTES,
    DEFAULT_MAX_VARIABLE_BYTES,
)


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number") from None


@dataclass(frozen=True)
class EngineConfig:
    """Tunable limits and timings. Every field has a safe default."""

    max_variable_bytes: int = DEFAULT_MAX_VARIABLE_BYTES
    # every variable of one update (a request, a handler's result) together, and every
    # variable of one instance together: what one instance may cost in memory is bounded
    max_update_bytes: int = DEFAULT_MAX_UPDATE_BYTES
    max_instance_variable_bytes: int = DEFAULT_MAX_INSTANCE_VARIABLE_BYTES
    # timer cycles repeating more often than this are refused at deploy
    min_timer_cycle: timedelta = timedelta(seconds=1)
    # Short, so that the step of a worker that died runs again soon; a running handler keeps
    # its lease by the heartbeat (bpm/engine/heartbeat.py), however long it runs.
    default_lease: timedelta = timedelta(seconds=30)
    redispatch_after: timedelta = timedelta(seconds=5)
    pool_size: int = 5
    # Claim the next inline step in the same transaction that finishes the current one,
    # and run it right away in this worker instead of a broker round trip.
    continue_inline: bool = True
    # Steps one ``run_token`` call may run before it hands the rest back to the broker,
    # and how long it may keep taking more Ready steps from the database.
    max_inline_steps: int = 1000
    drain_for: timedelta = timedelta(seconds=2)
    # At most this many steps are claimed and finished in one transaction; fewer when the
    # handlers are slow: a batch holds about ``batch_window`` of handler time, so a slow
    # handler never makes quick steps behind it wait (1 turns batching off).
    batch_size: int = 32
    batch_window: timedelta = timedelta(milliseconds=20)
    # Where Ready steps are published (a Celery broker URL); None: nothing publishes and
    # beat's sweeper finds new steps. See :func:`bpm.dispatch.default_dispatcher`.
    broker_url: str | None = None
    queue: str = "bpm"
    # How deep call activities may nest (a process calling itself needs a way out).
    max_call_depth: int = 32
    # Nodes one transaction may move tokens through (gateways, events, pass-through
    # tasks); past it the token fails with a ``runawayLoop`` incident instead of holding
    # the instance lock for ever. Deploy already refuses loops made only of such nodes.
    max_steps_per_transaction: int = DEFAULT_MAX_STEPS
    # Whether the history keeps the values of the variables each event wrote (start
    # variables, handler results, task completions, messages), not only their names:
    # what ``bpm trail export`` needs to make a test of an instance (docs/testing.md).
    # Off by default: every value is then stored twice.
    history_values: bool = False
    # A streaming replica of the database for the reads that only show data (history,
    # cockpit lists and counts; bpm/engine/replica.py), and how far behind it may be
    # before those reads go to the primary instead. None: every read on the primary.
    read_url: str | None = None
    read_max_lag: timedelta = timedelta(seconds=30)
    # Batches (bpm/engine/batches.py): items per chunk (Camunda's invocationsPerBatchJob),
    # how long a worker holds a chunk it claimed, and how long a chunk's message may go
    # unanswered before beat's sweeper publishes it again.
    batch_chunk_size: int = 50
    batch_lease: timedelta = timedelta(seconds=60)
    batch_redispatch_after: timedelta = timedelta(seconds=10)
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def from_env(cls) -> EngineConfig:
        """Read ``BPM_DEFAULT_LEASE_SECONDS``, ``BPM_REDISPATCH_AFTER_SECONDS``,
        ``BPM_MAX_VARIABLE_BYTES``, ``BPM_MAX_UPDATE_BYTES``,
        ``BPM_MAX_INSTANCE_VARIABLE_BYTES``, ``BPM_MIN_TIMER_CYCLE_SECONDS``,
        ``BPM_POOL_SIZE``, ``BPM_BATCH_SIZE``, ``BPM_MAX_CALL_DEPTH``,
        ``BPM_MAX_STEPS_PER_TRANSACTION``, ``BPM_HISTORY_VALUES`` (1: on), ``BPM_BROKER_URL``,
        ``BPM_QUEUE``, ``BPM_DATABASE_READ_URL``, ``BPM_DATABASE_READ_MAX_LAG``
        (seconds), ``BPM_BATCH_CHUNK_SIZE``, ``BPM_BATCH_LEASE_SECONDS`` and
        ``BPM_BATCH_REDISPATCH_SECONDS``."""
        max_lag = _env_float("BPM_DATABASE_READ_MAX_LAG", 30)
        if max_lag < 0:
            raise ConfigurationError(
                f"BPM_DATABASE_READ_MAX_LAG={max_lag:g} cannot be negative: give the seconds "
                "a read replica may be behind before reads go to the primary"
            )
        return cls(
            max_variable_bytes=int(
                _env_float("BPM_MAX_VARIABLE_BYTES", DEFAULT_MAX_VARIABLE_BYTES)
            ),
            max_update_bytes=int(_env_float("BPM_MAX_UPDATE_BYTES", DEFAULT_MAX_UPDATE_BYTES)),
            max_instance_variable_bytes=int(
                _env_float("BPM_MAX_INSTANCE_VARIABLE_BYTES", DEFAULT_MAX_INSTANCE_VARIABLE_BYTES)
            ),
            min_timer_cycle=timedelta(seconds=_env_float("BPM_MIN_TIMER_CYCLE_SECONDS", 1)),
            default_lease=timedelta(seconds=_env_float("BPM_DEFAULT_LEASE_SECONDS", 30)),
            redispatch_after=timedelta(seconds=_env_float("BPM_REDISPATCH_AFTER_SECONDS", 5)),
            pool_size=int(_env_float("BPM_POOL_SIZE", 5)),
            batch_size=max(1, int(_env_float("BPM_BATCH_SIZE", 32))),
            max_call_depth=max(1, int(_env_float("BPM_MAX_CALL_DEPTH", 32))),
            max_steps_per_transaction=max(
                1, int(_env_float("BPM_MAX_STEPS_PER_TRANSACTION", DEFAULT_MAX_STEPS))
            ),
            history_values=os.environ.get("BPM_HISTORY_VALUES", "").strip().lower()
            in ("1", "true", "yes", "on"),
            broker_url=os.environ.get("BPM_BROKER_URL", "").strip() or None,
            queue=os.environ.get("BPM_QUEUE", "").strip() or "bpm",
            read_url=os.environ.get("BPM_DATABASE_READ_URL", "").strip() or None,
            read_max_lag=timedelta(seconds=max_lag),
            batch_chunk_size=max(1, min(1000, int(_env_float("BPM_BATCH_CHUNK_SIZE", 50)))),
            batch_lease=timedelta(seconds=max(1.0, _env_float("BPM_BATCH_LEASE_SECONDS", 60))),
            batch_redispatch_after=timedelta(
                seconds=max(0.0, _env_float("BPM_BATCH_REDISPATCH_SECONDS", 10))
            ),
        )
