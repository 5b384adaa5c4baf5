"""Deployments keep every resource: forms and other files beside the BPMN, versions that
follow the files deployed together, Camunda's duplicate filters, and deleting a deployment
(refused with instances, cascading on request, the previous version's start events back).
Both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpm import Engine
from bpm.engine import DeploymentQuery
from bpm.errors import DeploymentError, InvalidOperation, NotFound
from tests.engine_helpers import table_dump

FORMS = Path(__file__).resolve().parent / "data" / "forms"
MODELER = Path(__file__).resolve().parent / "data" / "modeler"
BPMN = (FORMS / "approval.bpmn").read_bytes()
REVIEW = (FORMS / "expense-review.form").read_bytes()
REQUEST = (FORMS / "expense-request.form").read_bytes()


def modeler_deploy(engine: Engine, *files: tuple[str, bytes], **kw: object) -> object:
    return engine.create_deployment(
        *files, name="approval", source="Camunda Modeler", duplicate_filtering=True, **kw
    )


def test_every_file_is_kept_and_read_back(engine: Engine) -> None:
    d = engine.create_deployment(
        ("approval.bpmn", BPMN),
        ("expense-review.form", REVIEW),
        ("notes/readme.txt", b"not BPMN"),
        name="approval",
        source="Camunda Modeler",
        tenant_id="acme",
    )
    assert d.new and [x.key for x in d.definitions] == ["approval"]
    assert d.definitions[0].tenant_id == "acme"
    stored = engine.deployment_resources(d.id or "")
    names = sorted(x.name for x in stored)
    assert names == ["approval.bpmn", "expense-review.form", "notes/readme.txt"]
    form = next(x for x in stored if x.name == "expense-review.form")
    assert form.data is None  # a listing leaves the bytes out
    assert engine.deployment_resource(d.id or "", form.id).data == REVIEW
    named = engine.deployment_resource_named(d.id or "", "approval.bpmn")
    assert named is not None and named.data == BPMN
    record = engine.deployment(d.id or "")
    assert (record.name, record.source, record.tenant_id) == ("approval", "Camunda Modeler", "acme")


def test_a_form_only_deployment_and_the_bpmn_test_by_suffix(engine: Engine) -> None:
    d = engine.create_deployment(("expense-review.form", REVIEW), name="forms")
    assert d.new and d.definitions == () and len(d.resources) == 1
    # the same files under the same name again: nothing new
    again = engine.create_deployment(("expense-review.form", REVIEW), name="forms")
    assert not again.new and again.id == d.id
    # an .xml that is BPMN is read as BPMN; a .dmn is kept (and loaded: tests/test_decisions.py)
    dmn = (Path(__file__).resolve().parent / "data" / "dmn" / "pricing.dmn").read_bytes()
    x = engine.create_deployment(("process.xml", BPMN), ("rules.dmn", dmn))
    assert [p.key for p in x.definitions] == ["approval"]
    with pytest.raises(DeploymentError, match="no executable process"):
        engine.deploy(b'{"id": "x"}', resource="x.form")


def test_a_changed_form_makes_a_new_version_an_unchanged_request_nothing(
    engine: Engine,
) -> None:
    first = modeler_deploy(engine, ("approval.bpmn", BPMN), ("expense-review.form", REVIEW))
    assert first.new and first.definitions[0].version == 1  # type: ignore[attr-defined]
    same = modeler_deploy(engine, ("approval.bpmn", BPMN), ("expense-review.form", REVIEW))
    assert not same.new and same.id == first.id  # type: ignore[attr-defined]
    assert same.definitions == first.definitions  # type: ignore[attr-defined]
    edited = REVIEW.replace(b'"Comment"', b'"Your comment"')
    second = modeler_deploy(engine, ("approval.bpmn", BPMN), ("expense-review.form", edited))
    assert second.new and second.definitions[0].version == 2  # type: ignore[attr-defined]
    assert second.definitions[0].deployment_id == second.id  # type: ignore[attr-defined]
    # without the filter too: the process and its form are unchanged, nothing is stored
    plain = engine.create_deployment(
        ("approval.bpmn", BPMN), ("expense-review.form", edited), name="approval"
    )
    assert not plain.new and plain.definitions[0].version == 2
    # the BPMN alone, as before resources were kept: its model is unchanged, but it is
    # deployed without its form now, which is a change
    alone = engine.create_deployment(("approval.bpmn", BPMN))
    assert alone.new and alone.definitions[0].version == 3
    assert engine.count_deployments() == 3


def test_deploy_changed_only_leaves_out_unchanged_files(engine: Engine) -> None:
    kw = {"name": "approval", "source": "Camunda Modeler", "changed_only": True}
    first = engine.create_deployment(("approval.bpmn", BPMN), ("expense-review.form", REVIEW), **kw)
    edited = REVIEW.replace(b'"Comment"', b'"Remark"')
    second = engine.create_deployment(
        ("approval.bpmn", BPMN), ("expense-review.form", edited), **kw
    )
    assert second.new and second.id != first.id
    assert [x.name for x in engine.deployment_resources(second.id or "")] == ["expense-review.form"]
    # the unchanged process is not deployed again: its current version is answered
    assert [x.version for x in second.definitions] == [1]
    third = engine.create_deployment(("approval.bpmn", BPMN), ("expense-review.form", edited), **kw)
    assert not third.new and third.id == second.id


def test_duplicate_filtering_is_per_name_and_source(engine: Engine) -> None:
    a = engine.create_deployment(("readme.txt", b"v1"), name="docs", duplicate_filtering=True)
    b = engine.create_deployment(
        ("readme.txt", b"v1"), name="docs", source="elsewhere", duplicate_filtering=True
    )
    assert a.new and b.new and a.id != b.id
    c = engine.create_deployment(("readme.txt", b"v1"), name="docs", duplicate_filtering=True)
    assert not c.new and c.id == a.id


def test_refused_requests_store_nothing(engine: Engine) -> None:
    before = table_dump(engine)
    broken = BPMN.replace(b'targetRef="done"', b'targetRef="nowhere"')
    with pytest.raises(DeploymentError):
        engine.create_deployment(("approval.bpmn", broken), ("expense-review.form", REVIEW))
    with pytest.raises(DeploymentError, match="twice"):
        engine.create_deployment(("a.form", REVIEW), ("a.form", REQUEST))
    with pytest.raises(DeploymentError, match="tenant id"):
        engine.create_deployment(("a.form", REVIEW), tenant_id="t" * 65)
    with pytest.raises(DeploymentError, match="resource name"):
        engine.create_deployment(("x" * 256 + ".form", REVIEW))
    assert table_dump(engine) == before


def test_deployments_are_listed_filtered_and_paged(engine: Engine) -> None:
    ids = [
        engine.create_deployment((f"{i}.txt", str(i).encode()), name=f"docs-{i}").id
        for i in range(3)
    ]
    engine.create_deployment(("t.txt", b"t"), name="tenant-docs", tenant_id="acme")
    assert [d.id for d in engine.deployments(DeploymentQuery(name_like="docs-%"))] == ids
    newest = engine.deployments(
        DeploymentQuery(sorting=(("deploymentTime", False),)), offset=1, limit=2
    )
    assert [d.id for d in newest] == [ids[2], ids[1]]
    assert engine.count_deployments(DeploymentQuery(tenant_ids=("acme",))) == 1
    both = DeploymentQuery(tenant_ids=("acme",), include_without_tenant=True)
    assert engine.count_deployments(both) == 4
    assert engine.count_deployments(DeploymentQuery(without_tenant=True)) == 3
    with pytest.raises(NotFound):
        engine.deployment("nope")


def test_delete_is_refused_while_instances_exist_then_cascades(engine: Engine) -> None:
    d = engine.create_deployment(("approval.bpmn", BPMN), ("expense-review.form", REVIEW))
    inst = engine.start("approval")
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="1 dependent process instances"):
        engine.delete_deployment(d.id or "")
    assert table_dump(engine) == before
    engine.delete_deployment(d.id or "", cascade=True)
    with pytest.raises(NotFound):
        engine.get_instance(inst.id)
    assert engine.definitions("approval") == []
    with pytest.raises(NotFound):
        engine.deployment(d.id or "")
    with pytest.raises(NotFound):
        engine.delete_deployment(d.id or "")


def test_deleting_the_newest_version_gives_the_start_events_back(engine: Engine) -> None:
    v1 = engine.create_deployment(MODELER / "timer_start.bpmn")
    changed = (MODELER / "timer_start.bpmn").read_bytes().replace(b"R3/PT1H", b"R2/PT2H")
    v2 = engine.create_deployment(("timer_start.bpmn", changed))
    [live] = engine.schedules("nightly")
    assert live.definition_id == v2.definitions[0].id
    engine.delete_deployment(v2.id or "")
    [back] = engine.schedules("nightly")
    assert back.definition_id == v1.definitions[0].id and back.expression == "R3/PT1H"
    assert engine.definition("nightly").version == 1
    inst = engine.start("nightly", start_event="by_hand")
    assert inst.definition_id == v1.definitions[0].id
