"""The API while its database is unreachable: 503 with Retry-After, connection kept.

A REAL ``bpm api`` process. The database is made unreachable the hard way: it refuses new
connections and every open one is terminated (``pg_terminate_backend``); later it is let
back in. A client on one keep-alive connection sees 503 + ``Retry-After`` while it is
away, and the same connection serves it again once the database is back.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.api.conftest import ApiServer
from tests.support import eventually, pg_admin_dsn

pytestmark = pytest.mark.slow


def _reachable(dbname: str, yes: bool) -> None:
    with psycopg.connect(pg_admin_dsn(), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{dbname}" WITH ALLOW_CONNECTIONS {str(yes).lower()}')
        if not yes:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, dict[str, str], object]:
    conn.request("GET", f"/engine-rest{path}")
    resp = conn.getresponse()
    body = json.loads(resp.read() or b"null")
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def test_503_with_retry_after_while_the_database_is_away(
    pg_database_url: str, tmp_path: Path
) -> None:
    server = ApiServer(pg_database_url, log=tmp_path / "api.log").start()
    dbname = str(make_url(pg_database_url).database)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        status, _, body = _get(conn, "/process-instance/count")
        assert status == 200 and body == {"count": 0}
        sock = conn.sock
        _reachable(dbname, False)
        for _ in range(3):  # a pooled connection that died, then refused new ones
            status, headers, body = _get(conn, "/process-instance/count")
            assert status == 503, (status, body)
            assert headers["retry-after"] == "5"
            assert headers.get("connection", "").lower() != "close"
            assert isinstance(body, dict) and body["type"] == "ProcessEngineException"
            assert "database is unavailable" in body["message"]
            assert conn.sock is sock  # the same keep-alive connection answered
        _reachable(dbname, True)
        status, _, body = eventually(
            lambda: (r := _get(conn, "/process-instance/count"))[0] == 200 and r,
            timeout=15,
            what="the API to answer again",
        )
        assert body == {"count": 0}
        assert conn.sock is sock
    finally:
        _reachable(dbname, True)
        conn.close()
        server.kill()


def test_a_server_started_while_the_database_is_away_serves_once_it_is_back(
    pg_database_url: str, tmp_path: Path
) -> None:
    """``bpm api`` does not refuse to start when its database does not answer yet (a
    database restarting beside it): it answers 503 + Retry-After, then serves."""
    dbname = str(make_url(pg_database_url).database)
    _reachable(dbname, False)
    log = tmp_path / "api.log"
    server = ApiServer(pg_database_url, log=log).start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        status, headers, body = _get(conn, "/process-instance/count")
        assert status == 503, (status, body)
        assert headers["retry-after"] == "5"
        assert "the database does not answer" in log.read_text()
        _reachable(dbname, True)

        def served() -> bool:
            status, _, body = _get(conn, "/process-instance/count")
            return status == 200 and body == {"count": 0}

        eventually(served, timeout=30, what="the API to serve once the database is back")
    finally:
        conn.close()
        _reachable(dbname, True)
        server.kill()
