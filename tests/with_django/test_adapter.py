"""bpm.contrib.django on the shop project: transactions shared with views, signals,
``manage.py bpm``, the read-only admin pages and settings errors (real PostgreSQL)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from bpm import ConfigurationError, Engine, InstanceState, NotFound
from bpm.errors import VariableError
from bpm.runtime.records import Instance
from tests.engine_helpers import QueueDispatcher
from tests.support import eventually
from tests.with_django.conftest import SHOP, plain_url


@pytest.fixture
def queued(shop_engine: Engine) -> QueueDispatcher:
    q = QueueDispatcher()
    shop_engine.dispatcher = q
    return q


def new_product() -> Any:
    from orders.models import Product

    return Product.objects.create(sku=f"sku-{uuid.uuid4().hex[:10]}", stock=1)


def test_start_process_commits_with_the_view_and_publishes_only_on_commit(
    shop_engine: Engine, queued: QueueDispatcher
) -> None:
    from django.db import transaction
    from orders.models import Product

    from bpm.contrib.django import start_process

    key = f"bk-{uuid.uuid4().hex}"
    with transaction.atomic():
        product = new_product()
        inst = start_process("checkout", {"amount": 10, "order_id": 0}, business_key=key)
        assert queued.published == []  # nothing leaves before the commit
        assert shop_engine.instances(business_key=key) == []  # others do not see it yet
    assert len(queued.published) == 1
    assert shop_engine.get_instance(inst.id).state is InstanceState.ACTIVE
    assert Product.objects.filter(pk=product.pk).exists()


def test_a_rolled_back_view_leaves_no_instance_no_rows_and_publishes_nothing(
    shop_engine: Engine, queued: QueueDispatcher
) -> None:
    from django.db import transaction
    from orders.models import Product

    from bpm.contrib.django import start_process

    key = f"bk-{uuid.uuid4().hex}"
    sku = ""
    with pytest.raises(RuntimeError), transaction.atomic():
        sku = new_product().sku
        start_process("checkout", {"amount": 10, "order_id": 0}, business_key=key)
        raise RuntimeError("the view failed")
    assert shop_engine.instances(business_key=key) == []
    assert not Product.objects.filter(sku=sku).exists()
    assert queued.published == []


def test_an_engine_error_rolls_back_only_its_own_savepoint(
    shop_engine: Engine, queued: QueueDispatcher
) -> None:
    from django.db import transaction
    from orders.models import Product

    from bpm.contrib.django import start_process

    with transaction.atomic():
        product = new_product()
        with pytest.raises(NotFound, match="no process definition"):
            start_process("no-such-process")
        with pytest.raises(VariableError, match="not JSON"):
            start_process("checkout", {"bad": object()})
    assert Product.objects.filter(pk=product.pk).exists()  # the view's rows committed
    assert queued.published == []


def test_concurrent_requests_with_one_idempotency_key_make_one_instance(
    shop_engine: Engine, queued: QueueDispatcher, shop_db: str
) -> None:
    from django.db import connections, transaction

    from bpm.contrib.django import start_process

    key = f"idem-{uuid.uuid4().hex}"
    first_started, release = threading.Event(), threading.Event()
    ids: dict[str, str] = {}

    def request(name: str, hold: bool) -> None:
        try:
            with transaction.atomic():
                inst = start_process("checkout", {"amount": 5, "order_id": 0}, idempotency_key=key)
                ids[name] = inst.id
                if hold:  # keep the first transaction open while the second one inserts
                    first_started.set()
                    release.wait(20)
        finally:
            connections.close_all()

    first = threading.Thread(target=request, args=("first", True))
    first.start()
    assert first_started.wait(20)
    second = threading.Thread(target=request, args=("second", False))
    second.start()

    def second_waits_on_the_first() -> bool:
        with psycopg.connect(plain_url(shop_db), autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
        return bool(row and row[0] >= 1)

    eventually(second_waits_on_the_first, what="the second insert to wait on the first")
    release.set()
    first.join(20)
    second.join(20)
    assert ids["first"] == ids["second"]
    found = [i for i in shop_engine.instances(definition_key="checkout") if i.id == ids["first"]]
    assert len(found) == 1 and found[0].idempotency_key == key
    assert len(queued.published) == 1  # the second request published nothing


@pytest.fixture
def heard() -> Iterator[list[tuple[str, Instance]]]:
    from bpm.contrib.django.signals import process_completed, process_failed

    got: list[tuple[str, Instance]] = []

    def completed(sender: str, instance: Instance, **_: Any) -> None:
        got.append(("completed", instance))

    def failed(sender: str, instance: Instance, **_: Any) -> None:
        got.append(("failed", instance))

    process_completed.connect(completed, sender="checkout")
    process_failed.connect(failed, sender="checkout")
    yield got
    process_completed.disconnect(completed, sender="checkout")
    process_failed.disconnect(failed, sender="checkout")


def waiting_for_approval(engine: Engine) -> Instance:
    """A checkout instance at its approval task (its first step run in this process)."""
    import examples.checkout_handlers  # noqa: F401  (registers the handlers)
    from bpm.contrib.django import start_process

    inst = start_process("checkout", {"amount": 500, "order_id": 0})
    (ready,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "reserve"]
    # runs on Django's connection too (and maybe other Ready steps left by earlier tests:
    # a worker takes several steps per transaction when they are queued)
    assert engine.run_token(ready.id) >= 1
    assert [t.node_id for t in engine.user_tasks(inst.id)] == ["approve"]
    return inst


def test_signals_fire_after_the_commit_that_ended_the_instance_and_never_on_rollback(
    shop_engine: Engine, queued: QueueDispatcher, heard: list[tuple[str, Instance]]
) -> None:
    from django.db import transaction

    from bpm.contrib.django import complete_user_task

    inst = waiting_for_approval(shop_engine)
    heard.clear()  # the run above may have ended other tests' leftover instances
    (task,) = shop_engine.user_tasks(inst.id)
    with pytest.raises(RuntimeError), transaction.atomic():
        complete_user_task(task.id, {"approved": False})  # the instance ends here ...
        raise RuntimeError("... but the view fails")
    assert heard == []
    assert shop_engine.get_instance(inst.id).state is InstanceState.ACTIVE

    with transaction.atomic():
        complete_user_task(task.id, {"approved": False})
        assert heard == []  # not before the commit
    assert [(kind, i.id, i.state) for kind, i in heard] == [
        ("completed", inst.id, InstanceState.COMPLETED)
    ]
    assert heard[0][1].variables["approved"] is False


def test_a_failing_receiver_is_logged_and_the_others_still_run(
    shop_engine: Engine,
    queued: QueueDispatcher,
    heard: list[tuple[str, Instance]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from bpm.contrib.django import complete_user_task
    from bpm.contrib.django.signals import process_completed

    def broken(sender: str, **_: Any) -> None:
        raise ValueError("receiver bug")

    inst = waiting_for_approval(shop_engine)
    heard.clear()  # the run above may have ended other tests' leftover instances
    process_completed.connect(broken, sender="checkout")
    try:
        (task,) = shop_engine.user_tasks(inst.id)
        complete_user_task(task.id, {"approved": False})
    finally:
        process_completed.disconnect(broken, sender="checkout")
    assert [(kind, i.id) for kind, i in heard] == [("completed", inst.id)]
    assert "receiver bug" in caplog.text
    assert shop_engine.get_instance(inst.id).state is InstanceState.COMPLETED


def manage(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPM_")}
    env.update(SHOP_DATABASE_URL=plain_url(db), COLUMNS="200", PYTHONPATH=str(SHOP.parents[1]))
    return subprocess.run(
        [sys.executable, "manage.py", "bpm", *args],
        cwd=SHOP,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_manage_py_bpm_runs_the_cli_on_the_project_database(
    shop_engine: Engine, queued: QueueDispatcher, shop_db: str
) -> None:
    from bpm.contrib.django import start_process

    key = f"cli-{uuid.uuid4().hex[:8]}"
    inst = start_process("checkout", {"amount": 1, "order_id": 0}, business_key=key)
    listed = manage("instances", "--limit", "500", db=shop_db)
    assert listed.returncode == 0, listed.stderr
    assert inst.id in listed.stdout and key in listed.stdout
    shown = manage("show", inst.id, "--json", db=shop_db)
    assert shown.returncode == 0 and f'"business_key": "{key}"' in shown.stdout
    bad = manage("start", "no-such-process", db=shop_db)
    assert bad.returncode == 2 and "no process definition" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_call_command_bpm_raises_command_error_on_failure(shop_engine: Engine) -> None:
    from django.core.management import CommandError, call_command

    call_command("bpm", "instances", "--limit", "1")
    with pytest.raises(CommandError, match="exited with code 2"):
        call_command("bpm", "show", "no-such-instance")


@pytest.fixture
def staff_client(shop_db: str) -> Any:
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.create_superuser(f"admin-{uuid.uuid4().hex[:8]}", "a@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_admin_lists_instances_and_incidents_read_only(
    shop_engine: Engine, queued: QueueDispatcher, staff_client: Any
) -> None:
    from django.test import Client, override_settings

    from bpm.contrib.django import start_process

    key = f"adm-{uuid.uuid4().hex[:8]}"
    inst = start_process("checkout", {"amount": 3, "order_id": 0}, business_key=key)
    index = staff_client.get("/admin/").content.decode()
    assert "/admin/bpm/processinstance/" in index and "/admin/bpm/incident/" in index
    page = staff_client.get("/admin/bpm/processinstance/?state=active")
    assert page.status_code == 200 and inst.id in page.content.decode()
    detail = staff_client.get(f"/admin/bpm/processinstance/{inst.id}/").content.decode()
    assert key in detail and "instance_started" in detail and "reserve" in detail
    assert staff_client.get("/admin/bpm/processinstance/no-such-id/").status_code == 404
    assert staff_client.get("/admin/bpm/incident/").status_code == 200
    assert staff_client.get("/admin/bpm/processinstance/add/").status_code == 404
    assert "Open the cockpit" not in page.content.decode()
    with override_settings(BPM={"DATABASE": "default", "COCKPIT_URL": "/cockpit"}):
        linked = staff_client.get("/admin/bpm/incident/").content.decode()
    assert 'href="/cockpit"' in linked
    anonymous = Client().get("/admin/bpm/processinstance/")
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]


def test_settings_mistakes_say_what_to_write(shop_engine: Engine) -> None:
    from django.test import override_settings

    from bpm.contrib.django.settings import engine_from_settings, read_settings

    with (
        override_settings(BPM={"BROKER": "redis://"}),
        pytest.raises(ConfigurationError, match=r"unknown key.*BROKER.*known keys.*BROKER_URL"),
    ):
        read_settings()
    with (
        override_settings(BPM=["not", "a", "dict"]),
        pytest.raises(ConfigurationError, match="must be a dict"),
    ):
        read_settings()
    with (
        override_settings(BPM={"DATABASE": "other"}),
        pytest.raises(ConfigurationError, match="'other' is not in DATABASES"),
    ):
        read_settings()
    with (
        override_settings(BPM={"DISPATCHER": "no.such.factory"}),
        pytest.raises(ConfigurationError, match="DISPATCHER"),
    ):
        engine_from_settings()
    conf = read_settings()
    assert conf.share_transactions and conf.database_url.startswith("postgresql+psycopg://")
