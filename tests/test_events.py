"""Instance listeners hear about ended instances once, after the commit that ended them."""

from __future__ import annotations

import logging

import pytest

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.dispatch import NullDispatcher
from bpm.errors import NotFound
from bpm.events import instance_listeners
from bpm.runtime.records import Instance


def test_listeners_hear_after_commit_and_a_failing_listener_is_only_logged(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine = Engine(database_url, dispatcher=NullDispatcher())
    engine.deploy(
        Process("quick").start("s").user_task("t").end("e").sequence("s", "t", "e").build()
    )
    heard: list[tuple[Instance, InstanceState]] = []

    def listener(inst: Instance) -> None:
        # Called after the commit: another connection already sees the ended instance.
        heard.append((inst, engine.get_instance(inst.id).state))

    def broken(inst: Instance) -> None:
        raise RuntimeError("listener bug")

    stop = instance_listeners.subscribe(listener)
    stop_broken = instance_listeners.subscribe(broken)
    assert instance_listeners.subscribe(listener) is not None  # subscribing twice: once
    try:
        inst = engine.start("quick")
        assert heard == []  # waiting at the user task: not ended
        (task,) = engine.user_tasks(inst.id)
        with caplog.at_level(logging.ERROR, logger="bpm.events"):
            engine.complete_user_task(task.id)
        assert [(i.id, i.state, seen) for i, seen in heard] == [
            (inst.id, InstanceState.COMPLETED, InstanceState.COMPLETED)
        ]
        assert "listener bug" in caplog.text
        with pytest.raises(NotFound, match="not open"):
            engine.complete_user_task(task.id)  # rejected: nothing ends, nothing heard
        assert len(heard) == 1
    finally:
        stop()
        stop_broken()
        engine.close()
    other = engine.start("quick")
    (task,) = engine.user_tasks(other.id)
    engine.complete_user_task(task.id)
    assert len(heard) == 1  # unsubscribed
