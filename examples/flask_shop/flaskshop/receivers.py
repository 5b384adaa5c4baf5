"""The order follows its instance. These run in the process that ended the instance
(normally the Celery worker that ran the last step), after its commit, in a fresh app
context with its own session."""

from __future__ import annotations

from typing import Any

from flask import Flask

from bpm.contrib.flask import process_completed, process_failed
from bpm.runtime.records import Instance
from flaskshop.models import Order, db


def _set_status(instance: Instance, status: str) -> None:
    if instance.definition_key != "checkout":
        return
    order = db.session.get(Order, instance.variables["order_id"])
    if order is not None:
        order.status = status
        db.session.commit()


def checkout_completed(app: Flask, instance: Instance, **_: Any) -> None:
    _set_status(instance, "shipped" if "tracking" in instance.variables else "rejected")


def checkout_failed(app: Flask, instance: Instance, **_: Any) -> None:
    _set_status(instance, "payment_failed")


def connect(app: Flask) -> None:
    process_completed.connect(checkout_completed, sender=app)
    process_failed.connect(checkout_failed, sender=app)
