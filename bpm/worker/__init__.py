"""External-task worker SDK (httpx): long polls, heartbeats, retried reports.

>>> from bpm.worker import ExternalWorker, BpmnError
>>> worker = ExternalWorker("http://127.0.0.1:8080/engine-rest", worker_id="w1", api_key="s")
>>> @worker.subscribe("charge-card", lock_duration=30_000)
... def charge(task):
...     return {"charged": True}
>>> worker.run()    # doctest: +SKIP
"""

from __future__ import annotations

from bpm.worker.task import BpmnError, Task
from bpm.worker.worker import ExternalWorker, Subscription, WorkerRefused

__all__ = ["BpmnError", "ExternalWorker", "Subscription", "Task", "WorkerRefused"]
