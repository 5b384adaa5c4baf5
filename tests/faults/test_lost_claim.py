"""A claim lost in a database crash runs its handler again; the idempotency key makes its
effect once (issue 18 item 12, ``docs/faults.md``).

The claim is the one asynchronous commit (DESIGN section 11): PostgreSQL answers it before
its WAL reaches the disk. Whether a real crash catches a claim in that window is a matter
of microseconds, so the test holds the window open: the cluster's WAL writer is stopped
(``SIGSTOP``) and nothing else may flush the WAL (no autovacuum, no background writer, no
checkpoint for the test's minute; no durable commit after the claim: the worker runs a
first step before, so its lease keeper's first beat, at once when its thread starts, is
behind it, and with a 120 s lease the next one is 40 s away). Killing the WAL writer is then a
real crash: the postmaster ends every backend and recovers from the WAL on disk, where the
claim never was. The handler ran meanwhile and made its effect; after recovery the step
is Ready again (checked first: the premise of the test) and runs again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from bpm import Engine, TokenState
from bpm.builder import Process
from tests.e2e.handlers import pid_key, release_key, runs_key
from tests.faults.checks import trails
from tests.faults.conftest import Database, Start, StartMany, together
from tests.faults.handlers import effects_key, seen_key
from tests.support import eventually

pytestmark = pytest.mark.slow

QUIET = {"autovacuum": "off", "bgwriter_lru_maxpages": "0", "checkpoint_timeout": "1h"}


@pytest.fixture
def quiet_wal(pg: Database) -> Iterator[None]:
    """Nothing but a commit flushes the WAL while the test runs (reset afterwards)."""
    cluster = pg.cluster
    for name, value in QUIET.items():
        cluster.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    cluster.execute("SELECT pg_reload_conf()")
    eventually(
        lambda: all(cluster.execute(f"SHOW {n}")[0][0] == v for n, v in QUIET.items()),
        timeout=10,
        what="the settings to apply",
    )
    yield
    eventually(cluster.answers, timeout=60, what="the cluster to answer")
    for name in QUIET:
        cluster.execute(f"ALTER SYSTEM RESET {name}")
    cluster.execute("SELECT pg_reload_conf()")


def charge_model() -> object:
    return (
        Process("lost-claim")
        .start("s")
        .service_task("charge", handler="effect-once")
        .end("e")
        .sequence("s", "charge", "e")
        .build()
    )


def test_a_claim_lost_in_a_crash_reruns_the_handler_and_the_key_makes_the_effect_once(
    fault_engine: Engine,
    pg: Database,
    workers: StartMany,
    beats: Start,
    ledger: redis.Redis,
    tag: str,
    quiet_wal: None,
) -> None:
    fault_engine.deploy(charge_model())
    together(lambda: workers(1, BPM_DEFAULT_LEASE_SECONDS="120"), beats)
    warm = fault_engine.start("lost-claim", {"tag": f"{tag}-warm"}).id
    eventually(lambda: fault_engine.get_instance(warm).ended, what="the first step to run")
    pg.cluster.hold_wal_in_memory()
    # A durable commit: the backend flushes its own WAL, the instance survives the crash.
    iid = fault_engine.start("lost-claim", {"tag": tag, "block": True}).id
    eventually(lambda: ledger.get(pid_key(tag, "charge")), what="the handler to run")
    assert ledger.get(effects_key(tag)) == "1"
    (tok,) = fault_engine.get_instance(iid).tokens
    assert tok.state is TokenState.EXECUTING and tok.attempt == 1  # seen, not yet on disk

    pg.cluster.crash_losing_wal()

    # The premise: recovery brought the step back as it was before the claim. (Nobody can
    # claim it yet: the only worker process is inside the handler.)
    (back,) = fault_engine.get_instance(iid).tokens
    assert back.state is TokenState.READY and back.attempt == 0, back
    ledger.rpush(release_key(tag, "charge"), "go")

    done = eventually(
        lambda: (i := fault_engine.get_instance(iid)).ended and i,
        timeout=60,
        what="the instance to complete",
    )
    assert done.state.value == "completed" and done.variables["charged"] is True
    assert ledger.get(runs_key(tag, "charge")) == "2"  # the handler ran twice...
    assert ledger.get(effects_key(tag)) == "1"  # ...its effect happened once
    seen = ledger.lrange(seen_key(tag), 0, -1)
    assert len(seen) == 2 and len(set(seen)) == 1, seen  # same attempt, same key
    assert seen[0] == f"1|{iid}:charge:{tok.id}"
    trail = trails(fault_engine, [iid])[iid]
    # The first claim left no trace (its history went with it); the finish of the first
    # run was dropped, the second run's applied once.
    runs = [e.payload["attempt"] for e in trail if e.type == "token_executing"]
    assert runs == [1]
    assert sum(1 for e in trail if e.type == "token_completed" and e.node_id == "charge") == 1
