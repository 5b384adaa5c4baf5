"""The Flask shop example: ``create_app()`` wires Flask-SQLAlchemy and the BPM extension on
one PostgreSQL database, so a view's rows and its instance commit together."""

from __future__ import annotations

import os
from typing import Any

from flask import Flask

from bpm.contrib.flask import BPM
from flaskshop.models import db

bpm = BPM(db=db)


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """The app; ``SHOP_DATABASE_URL`` and ``BPM_BROKER_URL`` come from the environment."""
    app = Flask("flaskshop")
    app.config.update(
        SQLALCHEMY_DATABASE_URI=os.environ.get(
            "SHOP_DATABASE_URL", "postgresql+psycopg://root@127.0.0.1:5432/shop"
        ),
        BPM_BROKER_URL=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0"),
        BPM_QUEUE=os.environ.get("BPM_QUEUE", "bpm"),
    )
    app.config.update(config or {})
    db.init_app(app)
    bpm.init_app(app)
    from flaskshop import receivers, views

    app.register_blueprint(views.shop)
    receivers.connect(app)

    @app.cli.command("create-tables")
    def create_tables() -> None:
        """Create the shop's own tables (the engine's come from `bpm db upgrade`)."""
        db.create_all()

    return app
