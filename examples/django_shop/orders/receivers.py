"""The order follows its instance: these receivers run in the process that ended the instance
(normally the Celery worker that ran the last step), after the engine's commit."""

from __future__ import annotations

from typing import Any

from bpm.contrib.django.signals import process_completed, process_failed
from bpm.runtime.records import Instance
from orders.models import Order


def checkout_completed(sender: str, instance: Instance, **kwargs: Any) -> None:
    shipped = "tracking" in instance.variables
    Order.objects.filter(pk=instance.variables["order_id"]).update(
        status=Order.SHIPPED if shipped else Order.REJECTED
    )


def checkout_failed(sender: str, instance: Instance, **kwargs: Any) -> None:
    Order.objects.filter(pk=instance.variables["order_id"]).update(status=Order.PAYMENT_FAILED)


def connect() -> None:
    """Called once by the app config when Django starts."""
    process_completed.connect(checkout_completed, sender="checkout")
    process_failed.connect(checkout_failed, sender="checkout")
