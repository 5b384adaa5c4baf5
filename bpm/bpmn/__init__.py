"""BPMN 2.0 XML (as saved by Camunda Modeler) -> :class:`bpm.model.ProcessModel`.

>>> from bpm.bpmn import parse_bpmn
>>> model = parse_bpmn(open("examples/order.bpmn", "rb").read(), "order.bpmn")
"""

from __future__ import annotations

from bpm.bpmn.namespaces import BPM_NS, BPMN_NS, CAMUNDA_NS
from bpm.bpmn.parser import BpmnFile, parse_bpmn, parse_bpmn_file
from bpm.bpmn.retryspec import RetrySpecError, parse_retry, parse_retry_cycle

__all__ = [
    "BPMN_NS",
    "BPM_NS",
    "CAMUNDA_NS",
    "BpmnFile",
    "RetrySpecError",
    "parse_bpmn",
    "parse_bpmn_file",
    "parse_retry",
    "parse_retry_cycle",
]
