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
instance that waits on an incident has not failed: it is still active.
"""

from __future__ import annotations

from django.dispatch import Signal

from bpm.runtime.records import Instance
from bpm.runtime.states import InstanceState

process_completed = Signal()
process_failed = Signal()


def send_instance_signal(instance: Instance) -> None:
    """The listener the app config subscribes to :data:`bpm.events.instance_listeners`."""
    if instance.state is InstanceState.COMPLETED:
        process_completed.send(sender=instance.definition_key, instance=instance)
    elif instance.state is InstanceState.FAILED:
        process_failed.send(sender=instance.definition_key, instance=instance)
