"""URLs of the shop example: the JSON checkout API and the admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from orders import views

urlpatterns = [
    path("admin/", admin.site.urls),
    # A JSON API for scripts and the tests; a real shop keeps CSRF on its forms.
    path("checkout", csrf_exempt(views.checkout), name="checkout"),
    path("orders/<int:order_id>", views.order_detail, name="order-detail"),
    path("orders/<int:order_id>/approve", csrf_exempt(views.approve), name="order-approve"),
]
