"""Signals for apps that react to instances ending.

``process_completed`` and ``process_failed`` are sent with the process key as ``sender``
and the ended :class:`~bpm.runtime.records.Instance` (variables included) as ``instance``::

    @receiver(process_completed, sender="order")
    def order_done(sender, instance, **kwargs):
        Order.objects.filter(pk=instance.variables["order_id"]).update(status="shipped")

They are sent by the process that ended the instance, after its commit: usually the Celery
worker that ran the last step (start workers with Django set up, e.g. a ``BPM_HANDLERS``
module that calls ``django.setup()``), or the web process whose request completed the
last user task (then in ``on_commit``). They are never sent for a rolled-back change. An
instance that waits on an incident has not failed: it is still active. A receiver that
raises is logged; the others still run.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.dispatch import Signal

from bpm.runtime.records import Instance
from bpm.runtime.states import InstanceState

log = logging.getLogger("bpm.contrib.django")


def _same_object(sender: Any) -> Any:
    # Django matches senders by identity; a key read from the database is a new string.
    return sys.intern(sender) if isinstance(sender, str) else sender


class ProcessSignal(Signal):  # type: ignore[misc]  # django ships no type hints
    """A signal whose ``sender`` is a process key: equal keys are the same sender."""

    def connect(
        self, receiver: Any, sender: Any = None, weak: bool = True, dispatch_uid: Any = None
    ) -> None:
        super().connect(receiver, _same_object(sender), weak, dispatch_uid)

    def disconnect(self, receiver: Any = None, sender: Any = None, dispatch_uid: Any = None) -> Any:
        return super().disconnect(receiver, _same_object(sender), dispatch_uid)

    def send_robust(self, sender: Any, **named: Any) -> Any:
        return super().send_robust(_same_object(sender), **named)

    def send(self, sender: Any, **named: Any) -> Any:
        return super().send(_same_object(sender), **named)


process_completed = ProcessSignal()
process_failed = ProcessSignal()


def send_instance_signal(instance: Instance) -> None:
    """The listener the app config subscribes to :data:`bpm.events.instance_listeners`."""
    signal = {
        InstanceState.COMPLETED: process_completed,
        InstanceState.FAILED: process_failed,
    }.get(instance.state)
    if signal is None:
        return
    for receiver, result in signal.send_robust(sender=instance.definition_key, instance=instance):
        if isinstance(result, Exception):
            log.error(
                "receiver %r of %s failed for instance %s",
                receiver,
                instance.state.value,
                instance.id,
                exc_info=result,
            )
