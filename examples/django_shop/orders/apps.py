"""The orders app: connects its signal receivers when Django starts."""

from __future__ import annotations

from django.apps import AppConfig


class OrdersConfig(AppConfig):  # type: ignore[misc]  # django ships no type hints
    name = "orders"

    def ready(self) -> None:
        from orders import receivers

        receivers.connect()
