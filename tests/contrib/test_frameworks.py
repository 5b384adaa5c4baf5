"""Django and Flask apps start instances through their adapters, on real PostgreSQL."""

from __future__ import annotations

import pytest

from bpm import ConfigurationError, Engine, InstanceState
from tests.engine_helpers import order_process


@pytest.fixture
def deployed(pg_database_url: str) -> str:
    engine = Engine(pg_database_url)
    engine.deploy(order_process())
    engine.close()
    return pg_database_url


def test_flask_view_starts_an_instance(deployed: str) -> None:
    from flask import Flask, jsonify

    from bpm.contrib.flask import BPM, current_engine

    app = Flask(__name__)
    app.config["BPM_DATABASE_URL"] = deployed
    BPM(app)

    @app.post("/orders/<int:amount>")
    def order(amount: int) -> object:
        inst = current_engine().start("order", {"amount": amount}, business_key="web-1")
        return jsonify(id=inst.id, state=inst.state.value)

    res = app.test_client().post("/orders/150")
    assert res.status_code == 200
    body = res.get_json()
    assert body["state"] == "active"
    check = Engine(deployed)
    inst = check.get_instance(body["id"])
    assert (inst.business_key, inst.variables, inst.state) == (
        "web-1",
        {"amount": 150},
        InstanceState.ACTIVE,
    )
    check.close()


def test_flask_without_a_url_says_what_to_set() -> None:
    from flask import Flask

    from bpm.contrib.flask import BPM

    with pytest.raises(ConfigurationError, match="BPM_DATABASE_URL"):
        BPM(Flask(__name__))
    app = Flask(__name__)
    with app.app_context(), pytest.raises(ConfigurationError, match="no BPM extension"):
        from bpm.contrib.flask import current_engine

        current_engine()


def test_django_get_engine_starts_an_instance(deployed: str) -> None:
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(INSTALLED_APPS=["bpm.contrib.django"], BPM_DATABASE_URL=deployed)
        django.setup()
    from bpm.contrib.django import get_engine, reset_engine

    reset_engine()
    settings.BPM_DATABASE_URL = deployed
    try:
        engine = get_engine()
        assert get_engine() is engine
        inst = engine.start("order", {"amount": 10}, idempotency_key="django-1")
        assert engine.get_instance(inst.id).variables == {"amount": 10}
        settings.BPM_DISPATCHER = "no.such.factory"
        reset_engine()
        with pytest.raises(ConfigurationError, match="BPM_DISPATCHER"):
            get_engine()
    finally:
        settings.BPM_DISPATCHER = None
        reset_engine()
