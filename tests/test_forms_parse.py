"""Forms in the model: generated forms (``camunda:formData``, Flowable ``formProperty``) on
user tasks and start events, start-event form references; models without forms keep
their checksum (the new fields are sparse)."""

from __future__ import annotations

from pathlib import Path

from bpm.bpmn import parse_bpmn_file
from bpm.model import nodes as n
from bpm.model.process import ProcessModel

FORMS = Path(__file__).resolve().parent / "data" / "forms"
MODELER = Path(__file__).resolve().parent / "data" / "modeler"


def test_generated_form_fields_are_read_with_types_defaults_and_constraints() -> None:
    parsed = parse_bpmn_file((FORMS / "generated.bpmn").read_bytes(), "generated.bpmn")
    [model] = parsed.models
    start = model.nodes["asked"]
    assert isinstance(start, n.StartEvent)
    days, kind = start.form_fields
    assert (days.id, days.type, days.label, days.default) == ("days", "long", "Days", "1")
    assert days.constraints == (("required", None), ("min", "1"), ("max", "30"))
    assert kind.values == (("holiday", "Holiday"), ("sick", "Sick leave"))
    approve = model.nodes["approve"]
    assert isinstance(approve, n.UserTask)
    assert [f.id for f in approve.form_fields] == ["approved", "note", "starts"]
    assert approve.form_fields[1].constraints == (("maxlength", "200"),)
    assert approve.form_fields[2].date_pattern == "yyyy-MM-dd"
    file = model.nodes["file"]
    assert isinstance(file, n.UserTask)
    ref, archive = file.form_fields
    assert ref.constraints == (("required", None),)
    assert archive.constraints == (("readonly", None),) and archive.values == (("a", "Archive A"),)
    # understood: no "not rendered" warning; the custom validator is named
    assert not any("not rendered" in w for w in parsed.warnings + model.warnings)
    assert any("constraint 'validator' is not checked" in w for w in model.warnings)
    again = ProcessModel.from_dict(model.to_dict())
    assert again.nodes["approve"] == approve and again.nodes["asked"] == start
    assert again.checksum() == model.checksum()


def test_models_without_forms_keep_their_checksum() -> None:
    for path in sorted(MODELER.glob("*.bpmn")):
        try:
            models = parse_bpmn_file(path.read_bytes(), path.name).models
        except Exception:
            continue
        for model in models:
            data = model.to_dict()
            assert "form_fields" not in str(data), path
