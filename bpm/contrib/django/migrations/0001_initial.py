"""The admin's stand-in models (no tables: ``managed = False``)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):  # type: ignore[misc]  # django ships no type hints
    initial = True
    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.CreateModel(
            name="ProcessInstance",
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
            options={
                "verbose_name": "process instance",
                "db_table": "bpm_admin_no_table_instances",
                "managed": False,
                "default_permissions": ("view",),
            },
        ),
        migrations.CreateModel(
            name="Incident",
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
            options={
                "verbose_name": "incident",
                "db_table": "bpm_admin_no_table_incidents",
                "managed": False,
                "default_permissions": ("view",),
            },
        ),
    ]
