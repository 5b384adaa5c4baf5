"""DMN 1.5 decisions: load a model, evaluate its decisions, invoke its functions.

::

    from bpm import dmn

    model = dmn.load("loan.dmn")                 # a path or XML text; DeploymentError if invalid
    model.evaluate("Approval", {"Age": 30, "Risk": "Low"})
    model.invoke("Installment", {"amount": 1000, "rate": 0.05, "term": 12})

Values are FEEL values in Python (:mod:`bpm.feel`): numbers come back as ``Decimal``.
"""

from __future__ import annotations

from bpm.dmn.loader import load
from bpm.dmn.model import DecisionModel, Evaluation
from bpm.dmn.tables import TableHit
from bpm.errors import DeploymentError

__all__ = ["DecisionModel", "DeploymentError", "Evaluation", "TableHit", "load"]
