"""Forms of user tasks and start events: Camunda's generated forms (``camunda:formData``)
and Camunda Forms (``.form`` JSON from Camunda Modeler, ``camunda:formRef`` /
``formKey="camunda-forms:deployment:x.form"`` / Zeebe's ``formId``), validated on the
server when submitted: a missing required field or a number out of range is refused naming
the field, and nothing changes."""

from __future__ import annotations

from bpm.forms.camunda_forms import check_camunda_form, form_id
from bpm.forms.generated import FormInvalid, check_generated, generated_values

__all__ = ["FormInvalid", "check_camunda_form", "check_generated", "form_id", "generated_values"]
