"""Assertions shared by the e2e tests: waiting for instances and reading their trail."""

from __future__ import annotations

from bpm import Engine, InstanceState
from bpm.runtime.records import HistoryEvent, Instance, Token
from tests.support import eventually


def wait_ended(engine: Engine, instance_id: str, *, timeout: float = 20.0) -> Instance:
    """Poll until the instance ended; fail unless it completed."""
    inst = eventually(
        lambda: (i := engine.get_instance(instance_id)).ended and i,
        timeout=timeout,
        what=f"instance {instance_id} to end",
    )
    assert inst.state is InstanceState.COMPLETED, (inst.state, engine.history(instance_id))
    return inst


def token_at(engine: Engine, instance_id: str, node_id: str) -> Token:
    """The one token of the instance at ``node_id``."""
    found = [t for t in engine.get_instance(instance_id).tokens if t.node_id == node_id]
    assert len(found) == 1, found
    return found[0]


def events(
    history: list[HistoryEvent], type_: str, token_id: str | None = None
) -> list[HistoryEvent]:
    return [e for e in history if e.type == type_ and (token_id is None or e.token_id == token_id)]


def assert_trail_consistent(engine: Engine, inst: Instance) -> list[HistoryEvent]:
    """Every token's transitions chain (each from = the previous to) and end where its row is.

    Returns the history. This is what "history lists every token transition in order" means
    for each token: no state change of a row is missing from the trail.
    """
    history = engine.history(inst.id)
    seqs = [e.seq for e in history]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    tokens = {t.id: t for t in engine.get_instance(inst.id).tokens}
    seen: dict[str, str] = {}
    for e in history:
        if e.token_id is None or e.to_state is None:
            continue
        if e.type == "token_created":
            assert e.token_id not in seen, e
        else:
            assert e.from_state == seen.get(e.token_id), (e, seen.get(e.token_id))
        seen[e.token_id] = e.to_state
    # A token that passed through nodes within one transaction has no row, only its trail,
    # and ended in that transaction; every row's state is where its trail ends.
    assert set(tokens) <= set(seen)
    for token_id, state in seen.items():
        if token_id in tokens:
            assert tokens[token_id].state.value == state, (token_id, state, tokens[token_id])
        else:
            assert state in ("completed", "terminated"), (token_id, state)
    return history
