"""Read-only admin pages for process instances and open incidents, served by the engine.

Listed under "BPM engine" in the admin index for staff with the view permission. Each page
links to the cockpit when ``settings.BPM['COCKPIT_URL']`` is set. Nothing here writes:
operators act through the cockpit, the REST API or ``manage.py bpm``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path

from bpm.contrib.django import get_engine
from bpm.contrib.django.models import Incident, ProcessInstance
from bpm.contrib.django.settings import read_settings
from bpm.errors import BpmError, NotFound
from bpm.runtime.states import InstanceState

PAGE_SIZE = 100


class _ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[misc]  # django ships no type hints
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def _context(self, request: HttpRequest, title: str, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": title,
            "cockpit_url": read_settings().cockpit_url,
            **extra,
        }


@admin.register(ProcessInstance)
class ProcessInstanceAdmin(_ReadOnlyAdmin):
    """Instances, newest first (filter with ``?state=active``), and one instance's trail."""

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("", view(self.changelist_view), name="bpm_processinstance_changelist"),
            path("<str:instance_id>/", view(self.instance_view), name="bpm_instance_detail"),
        ]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            raise Http404
        state = request.GET.get("state") or None
        try:
            rows = get_engine().instances(state=state, limit=PAGE_SIZE)
            error = None
        except BpmError as exc:
            rows, error = [], str(exc)
        return TemplateResponse(
            request,
            "bpm/admin/instances.html",
            self._context(
                request,
                "Process instances",
                instances=rows,
                state=state or "",
                states=[s.value for s in InstanceState],
                error=error,
                page_size=PAGE_SIZE,
            ),
        )

    def instance_view(self, request: HttpRequest, instance_id: str) -> HttpResponse:
        if not self.has_view_permission(request):
            raise Http404
        engine = get_engine()
        try:
            inst = engine.get_instance(instance_id)
        except NotFound as exc:
            raise Http404(str(exc)) from exc
        return TemplateResponse(
            request,
            "bpm/admin/instance.html",
            self._context(
                request,
                f"Instance {inst.id}",
                instance=inst,
                history=engine.history(inst.id),
                incidents=engine.incidents(inst.id),
                tasks=engine.user_tasks(inst.id),
            ),
        )


@admin.register(Incident)
class IncidentAdmin(_ReadOnlyAdmin):
    """Open incidents, oldest first."""

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "",
                self.admin_site.admin_view(self.changelist_view),
                name="bpm_incident_changelist",
            )
        ]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            raise Http404
        return TemplateResponse(
            request,
            "bpm/admin/incidents.html",
            self._context(
                request, "Open incidents", incidents=get_engine().incidents(limit=PAGE_SIZE)
            ),
        )
