"""Finding the Camunda Form (``.form`` JSON) a task or start event refers to, among the
resources that deployments kept: ``formKey="camunda-forms:deployment:x.form"`` (the file
deployed with the process), ``camunda:formRef`` / Zeebe's ``formId`` by the form's ``id``
with binding ``deployment`` (the same deployment), ``latest`` (the newest deployment that
has it) or ``version`` (the n-th distinct content of it, oldest first)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bpm.engine import DeploymentQuery, Engine
from bpm.forms.camunda_forms import form_id
from bpm.runtime.records import ProcessDefinition

PREFIX = "camunda-forms:deployment:"
#: Deployments looked through for a form by id (newest first).
SCAN = 500


def _forms_of(engine: Engine, deployment_id: str, key: str) -> list[tuple[str, bytes]]:
    out = []
    for res in engine.deployment_resources(deployment_id):
        if not res.name.lower().endswith(".form"):
            continue
        full = engine.deployment_resource(deployment_id, res.id)
        if full.data is not None and form_id(full.data) == key:
            out.append((full.checksum, full.data))
    return out


def find_form(
    engine: Engine,
    definition: ProcessDefinition,
    form_key: str | None,
    form_ref: Mapping[str, str] | None,
) -> dict[str, Any] | None:
    """The form's JSON document, or None when the model names no deployed Camunda Form or
    it cannot be found."""
    data: bytes | None = None
    if form_key and form_key.startswith(PREFIX) and definition.deployment_id:
        found = engine.deployment_resource_named(definition.deployment_id, form_key[len(PREFIX) :])
        data = found.data if found else None
    elif form_ref and form_ref.get("key"):
        key = form_ref["key"]
        binding = form_ref.get("binding", "latest")
        if binding == "deployment" and definition.deployment_id:
            forms = _forms_of(engine, definition.deployment_id, key)
            data = forms[0][1] if forms else None
        else:
            newest = DeploymentQuery(sorting=(("deploymentTime", False),))
            versions: list[tuple[str, bytes]] = []
            for dep in engine.deployments(newest, limit=SCAN):
                versions += _forms_of(engine, dep.id, key)
                if binding == "latest" and versions:
                    break
            if binding == "latest":
                data = versions[0][1] if versions else None
            else:
                distinct: list[bytes] = []
                seen: set[str] = set()
                for checksum, body in reversed(versions):  # oldest first
                    if checksum not in seen:
                        seen.add(checksum)
                        distinct.append(body)
                try:
                    wanted = int(form_ref.get("version", ""))
                except ValueError:
                    wanted = 0
                data = distinct[wanted - 1] if 0 < wanted <= len(distinct) else None
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None
