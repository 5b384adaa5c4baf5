"""``bpm api`` (the REST API server) and ``bpm external-worker MODULE`` (an SDK worker)."""

from __future__ import annotations

import importlib
import os
import socket
import sys
import threading
from typing import Annotated, Any

import typer

from bpm import structured_logs
from bpm.cli.app import (
    DbOpt,
    app,
    database_url,
    err_console,
    fail,
    import_failed,
    open_engine,
    user_errors,
)


@app.command("api")
def api(
    host: Annotated[str, typer.Option("--host", help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8080,
    db: DbOpt = None,
    workers: Annotated[int, typer.Option("--workers", help="Server processes.")] = 1,
    insecure_no_auth: Annotated[
        bool,
        typer.Option("--insecure-no-auth", help="Serve without API keys (anyone may call)."),
    ] = False,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn's own log lines from this level on.")
    ] = "warning",
    access_log: Annotated[
        bool,
        typer.Option("--access-log/--no-access-log", help="Log each request (on stdout)."),
    ] = False,
) -> None:
    """Serve the Camunda-7-compatible REST API under /engine-rest and the cockpit at
    /cockpit (uvicorn); /health/live and /health/ready for load balancers.

    Keys: BPM_API_KEYS="id:secret[:topicA|topicB|role=viewer],...". Without keys the
    server refuses to start unless --insecure-no-auth is given. Prometheus metrics at
    /metrics (with --workers N, summed over the N processes). Once the port is bound it
    prints its URLs (REST API, cockpit, docs) and whether auth is on; a line when it stops.
    """
    import uvicorn
    from sqlalchemy.exc import OperationalError

    from bpm.api.auth import keys_from_env

    with user_errors():
        url = database_url(db, create=True)
        # no schema: say so now (the server starts, and is not ready until it is upgraded);
        # no database: the same (it answers 503 with Retry-After until the database does)
        try:
            open_engine(url, create=True, schema_required=False).close()
        except OperationalError as exc:
            err_console.print(
                f"warning: the database does not answer ({type(exc.orig).__name__}); "
                "serving 503 with Retry-After until it does"
            )
        keys = keys_from_env()
        if not keys and not insecure_no_auth:
            fail(
                "no API keys configured: set BPM_API_KEYS=id:secret[:topicA|topicB],... "
                "or pass --insecure-no-auth to serve without authentication"
            )
        os.environ["BPM_DATABASE_URL"] = url
        if insecure_no_auth and not keys:
            os.environ["BPM_API_INSECURE_NO_AUTH"] = "1"
        if workers > 1:  # the server processes count into files; each serves the sum
            from bpm.contrib.prometheus_dir import ensure_multiprocess_dir

            ensure_multiprocess_dir()
        from bpm.api.app import create_app

        create_app()  # fail fast on bad configuration, before binding
    from bpm.cli import serving

    bad_level = serving.check_level(log_level)
    if bad_level:
        fail(bad_level)
    json_logs = structured_logs.log_format() == structured_logs.JSON
    config = uvicorn.Config(
        "bpm.api.app:app_factory",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=None,  # the levels are in log_config (the access log's apart)
        # JSON logs: uvicorn's loggers go to the root's JSON handler instead of their own.
        log_config=serving.log_config(log_level, access_log=access_log, text=not json_logs),
        access_log=access_log,
        timeout_graceful_shutdown=5,
    )
    try:
        sock = config.bind_socket()
    except SystemExit:  # uvicorn logged why (e.g. the address is in use)
        fail(f"cannot listen on {host}:{port}: is another server using the port?")
    # uvicorn's shared socket is made with proto 0, so asyncio does not set TCP_NODELAY on
    # the connections: every response written in two parts then waits ~40 ms for the
    # client's delayed ACK (Nagle). Set it on the listener; accepted sockets inherit it.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    bound = sock.getsockname()[1]
    for line in serving.start_lines(
        host,
        bound,
        keys=keys,
        open_access=insecure_no_auth,
        workers=workers,
        access_log=access_log,
    ):
        err_console.print(line, highlight=False, soft_wrap=True)
    try:
        if workers <= 1:
            # uvicorn raises the signal that stopped it again once it has shut down: to
            # this process's handler, which ends the command instead of killing it.
            with serving.stopped_by_signals():
                uvicorn.Server(config).run(sockets=[sock])
        else:
            from uvicorn.supervisors import Multiprocess

            Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
        err_console.print(serving.stop_line(host, bound), highlight=False, soft_wrap=True)


def _find_worker(module: Any) -> Any:
    from bpm.worker import ExternalWorker

    found = getattr(module, "worker", None)
    if isinstance(found, ExternalWorker):
        return found
    for value in vars(module).values():
        if isinstance(value, ExternalWorker):
            return value
    return None


@app.command("external-worker")
def external_worker(
    module: Annotated[str, typer.Argument(help="Module that defines an ExternalWorker.")],
) -> None:
    """Import MODULE and run the ExternalWorker it defines (``worker = ExternalWorker(...)``)
    until SIGTERM / Ctrl-C: stop fetching, finish the tasks in flight, exit. Exits 1 when
    the engine refuses the worker for good (a wrong key, topics not allowed, a wrong URL)."""
    with user_errors():
        sys.path.insert(0, os.getcwd())
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            fail(import_failed(exc, f"worker module '{module}'"))
            return
        worker = _find_worker(mod)
        if worker is None:
            fail(f"module '{module}' defines no ExternalWorker (e.g. worker = ExternalWorker(...))")
    from bpm.worker import WorkerRefused

    try:
        worker.run()
    except WorkerRefused:
        raise typer.Exit(1) from None  # the worker logged what to fix


def start_dev_api(engine: Any, *, port: int = 8080) -> threading.Thread:
    """Serve the REST API open (no auth) on 127.0.0.1 in a thread, for ``bpm dev``."""
    import uvicorn

    from bpm.api.app import create_app

    server = uvicorn.Server(
        uvicorn.Config(
            create_app(engine, api_keys=[], open_access=True, cockpit_open_actions=True),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
        )
    )
    thread = threading.Thread(target=server.run, name="bpm-dev-api", daemon=True)
    thread.start()
    err_console.print(
        f"REST API open WITHOUT authentication on http://127.0.0.1:{port}"
        f"/engine-rest (localhost only); cockpit: http://127.0.0.1:{port}/cockpit"
    )
    return thread
