"""Products and orders of the shop; an order follows its checkout instance."""

from __future__ import annotations

from django.db import models


class Product(models.Model):  # type: ignore[misc]  # django ships no type hints
    sku = models.CharField(max_length=40, unique=True)
    stock = models.PositiveIntegerField(default=0)


class Order(models.Model):  # type: ignore[misc]
    PLACED = "placed"
    APPROVED = "approved"
    SHIPPED = "shipped"
    REJECTED = "rejected"
    PAYMENT_FAILED = "payment_failed"

    product = models.ForeignKey(Product, on_delete=models.PROTECT)
    quantity = models.PositiveIntegerField()
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    status = models.CharField(max_length=20, default=PLACED)
    # One order per client request id: a retried request finds the order it created.
    request_id = models.CharField(max_length=100, unique=True, null=True, blank=True)
    instance_id = models.CharField(max_length=36, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
