"""``BPM_TEST_CONTAINERS=1``: PostgreSQL and Redis from testcontainers, when Docker answers.

Without a Docker engine (or without the variable) the tests use the local services
(``scripts/services.sh`` starts them). The containers live as long as the test session.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any


def docker_answers() -> bool:
    """True when a Docker engine responds (the docker CLI alone is not enough)."""
    try:
        import docker

        client: Any = docker.from_env(timeout=3)
        return bool(client.ping())
    except Exception:
        return False


def start_services() -> None:
    """Start PostgreSQL 16 and Redis 7 containers and point the tests at them."""
    if not docker_answers():
        print(
            "BPM_TEST_CONTAINERS=1 but no Docker engine answers: using the local services",
            file=sys.stderr,
        )
        return
    from testcontainers.postgres import PostgresContainer
    from testcontainers.redis import RedisContainer

    pg: Any = PostgresContainer(
        "postgres:16", username="root", password="bpm-test", dbname="test", driver=None
    )
    pg.start()
    redis: Any = RedisContainer("redis:7")
    redis.start()
    atexit.register(pg.stop)
    atexit.register(redis.stop)
    host, port = redis.get_container_host_ip(), redis.get_exposed_port(6379)
    os.environ["BPM_TEST_PG_DSN"] = pg.get_connection_url()
    os.environ["BPM_TEST_REDIS_URL"] = f"redis://{host}:{port}/9"
    os.environ["BPM_TEST_BROKER_URL"] = f"redis://{host}:{port}/10"
