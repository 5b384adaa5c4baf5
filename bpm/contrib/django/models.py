"""Stand-ins that give the admin its "BPM engine" section; they have no table.

The admin pages read everything through the engine (:mod:`bpm.contrib.django.admin`),
never through these models, so the engine's schema stays the engine's business.
"""

from __future__ import annotations

from django.db import models


class ProcessInstance(models.Model):  # type: ignore[misc]  # django ships no type hints
    """The admin's entry for process instances (read-only, served by the engine)."""

    class Meta:
        managed = False
        db_table = "bpm_admin_no_table_instances"
        verbose_name = "process instance"
        default_permissions = ("view",)


class Incident(models.Model):  # type: ignore[misc]
    """The admin's entry for open incidents (read-only, served by the engine)."""

    class Meta:
        managed = False
        db_table = "bpm_admin_no_table_incidents"
        verbose_name = "incident"
        default_permissions = ("view",)
