"""The shop's own rows in the admin (the engine's pages come with bpm.contrib.django)."""

from __future__ import annotations

from django.contrib import admin

from orders.models import Order, Product

admin.site.register(Product)
admin.site.register(Order)
