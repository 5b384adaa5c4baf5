"""Publishing Ready steps to Celery workers from any process, without the worker app.

:class:`CeleryPublisher` is the :class:`bpm.dispatch.Dispatcher` of every process that
changes instances: the REST API, ``bpm start``, ``bpm timers``, Django and Flask apps. It
sends one ``bpm.run_token(token_id)`` message per Ready step through a small Celery app of
its own (the message format and routing are Celery's; the worker app in ``workers/`` is
never imported), on a pooled broker connection, with publish confirms on RabbitMQ.

A broker that is down must never fail or slow down the caller, whose commit already
happened: connecting gives up after ``connect_timeout``, the failure is logged once per
outage and counted, and for ``retry_after`` seconds afterwards publishes are skipped
(counted too) instead of paying the connect timeout on every call. The steps stay Ready in
the database and beat's ``redispatch_stale_ready`` sweeper publishes them later.

The shared publisher of a process (:meth:`CeleryPublisher.shared`, what engines use by
default) publishes from a thread of its own: ``dispatch`` only queues the ids, so neither
the transport's import, nor a connect, nor a broker that is down or slow is ever paid on the
caller's path. Queued ids are published at exit too (a few seconds at most), so a
short-lived ``bpm start`` still hands its step over at once.

With a tracer (:mod:`bpm.tracing`) each message carries the trace context that was current
when ``dispatch`` was called, as W3C ``traceparent``/``tracestate`` message headers, also
when the background thread sends it later.
"""

from __future__ import annotations

import atexit

# Imported now, not by the broker transport at exit: it registers a threading exit hook
# when first imported, which is refused once the process is ending (see _at_exit).
import concurrent.futures.thread  # noqa: F401
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from celery import Celery

from bpm import tracing

RUN_TOKEN = "bpm.run_token"
#: The task that claims and applies one batch chunk (bpm/engine/batches.py).
RUN_BATCH_CHUNK = "bpm.run_batch_chunk"
# How long a process that ends waits for its queued publishes (background mode).
EXIT_FLUSH_SECONDS = 5.0
DEFAULT_QUEUE = "bpm"

log = logging.getLogger("bpm.publish")


@dataclass
class PublishStats:
    """What a publisher did: messages sent, steps whose publish failed or was skipped."""

    published: int = 0
    failed: int = 0
    skipped: int = 0
    outages: int = 0


def _transport_options(broker_url: str, timeout: float) -> dict[str, Any]:
    # kombu retries a failed connect forever unless told otherwise; one try is enough here.
    options: dict[str, Any] = {"max_retries": 0}
    scheme = broker_url.split("://", 1)[0].lower()
    if scheme in ("amqp", "pyamqp", "amqps"):
        # RabbitMQ acknowledges each message once it owns it: a confirmed step is queued.
        options.update(confirm_publish=True, read_timeout=timeout, write_timeout=timeout)
    elif scheme in ("redis", "rediss"):
        options.update(socket_connect_timeout=timeout, socket_timeout=timeout)
    return options


class CeleryPublisher:
    """Publishes ``run_token`` messages for Ready steps; never raises on broker trouble.

    ``connect_timeout``: seconds to wait for the broker to accept a connection (and for
    each socket operation). ``retry_after``: seconds to skip publishing after a failure.
    Thread-safe; connections are pooled (``pool_limit`` per process).
    """

    def __init__(
        self,
        broker_url: str,
        *,
        queue: str = DEFAULT_QUEUE,
        task_name: str = RUN_TOKEN,
        connect_timeout: float = 0.5,
        retry_after: float = 2.0,
        pool_limit: int = 4,
        clock: Callable[[], float] = time.monotonic,
        background: bool = False,
        broker_use_ssl: Any = None,
        transport_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.broker_url = broker_url
        self.queue = queue
        self.task_name = task_name
        self.retry_after = retry_after
        self.stats = PublishStats()
        self._clock = clock
        self._lock = threading.Lock()
        self._down_until: float | None = None
        self.app = Celery("bpm-publisher", broker=broker_url, set_as_current=False)
        self.app.conf.update(
            broker_connection_timeout=connect_timeout,
            broker_connection_retry=False,
            broker_connection_max_retries=0,
            broker_pool_limit=pool_limit,
            # the app's own options (Sentinel, SQS regions...), with our short timeouts on top
            broker_transport_options={
                **dict(transport_options or {}),
                **_transport_options(broker_url, connect_timeout),
            },
            broker_use_ssl=broker_use_ssl,
            task_serializer="json",
            accept_content=["json"],
            task_publish_retry=False,
            task_default_queue=queue,
            task_ignore_result=True,
        )
        self._warming: threading.Thread | None = None
        # background=True: dispatch() only queues the ids; a thread of this publisher
        # publishes them, so the caller never waits for an import, a connect or a broker.
        self.background = background
        self._cond = threading.Condition()
        # (token id, trace headers, task name) to send, in order
        self._pending: list[tuple[str, Mapping[str, str] | None, str]] = []
        self._busy = False
        self._sender: threading.Thread | None = None
        self._sender_pid = 0
        if background:
            _at_exit(self.flush, EXIT_FLUSH_SECONDS)

    def warm_up(self) -> None:
        """Import the broker transport and open a pooled connection in the background.

        A short-lived process (``bpm start``) would otherwise pay for both between its
        commit and its publish; this way they overlap with its database work. The first
        :meth:`dispatch` waits for the warm-up to end (at most ``connect_timeout``).
        """
        self._warming = threading.Thread(
            target=self._connect_quietly, name="bpm-publisher-warm-up", daemon=True
        )
        self._warming.start()

    def _connect_quietly(self) -> None:
        try:
            amqp: Any = self.app.amqp
            queue = amqp.queues[self.queue]  # builds Celery's routing tables once
            amqp.router  # noqa: B018
            self.app.backend  # noqa: B018  (send_task builds a result handle with it)
            with self.app.producer_or_acquire() as producer:
                producer.connection.ensure_connection(max_retries=0)
                producer.maybe_declare(queue)
        except Exception as exc:  # the first dispatch reports an outage, not this
            log.debug("warming up the broker connection failed: %s", exc)

    _shared: dict[tuple[str, str], CeleryPublisher] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, broker_url: str, *, queue: str = DEFAULT_QUEUE) -> CeleryPublisher:
        """One publisher (and connection pool) per broker and queue in this process."""
        with cls._shared_lock:
            found = cls._shared.get((broker_url, queue))
            if found is None:
                found = cls(broker_url, queue=queue, background=True)
                cls._shared[(broker_url, queue)] = found
                found.warm_up()
            return found

    @classmethod
    def for_app(cls, app: Celery, *, queue: str = DEFAULT_QUEUE) -> CeleryPublisher:
        """The shared publisher for ``app``'s broker: its URL, SSL and transport options
        (read now: the app is configured by the time the engine first publishes)."""
        conf = app.conf
        url = str(conf.broker_write_url or conf.broker_url or "")
        if not url:
            url = "amqp://guest:guest@localhost:5672//"  # Celery's own default
        with cls._shared_lock:
            found = cls._shared.get((url, queue))
            if found is None:
                found = cls(
                    url,
                    queue=queue,
                    background=True,
                    broker_use_ssl=conf.broker_use_ssl,
                    transport_options=conf.broker_transport_options,
                )
                cls._shared[(url, queue)] = found
                found.warm_up()
            return found

    @property
    def broker_down(self) -> bool:
        """True while publishes are skipped after a failure."""
        with self._lock:
            return self._down_until is not None and self._clock() < self._down_until

    def dispatch(self, token_ids: Sequence[str]) -> None:
        """Publish one message per token id; on broker trouble log, count and return.

        With ``background`` this only queues the ids (microseconds): the publishing thread
        sends them, and a broker that is down costs the caller nothing at all.
        """
        self._queue(token_ids, self.task_name)

    def dispatch_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Publish one ``bpm.run_batch_chunk`` message per batch chunk, as :meth:`dispatch`
        does steps (a lost or duplicated one is harmless: the chunk's lease decides)."""
        self._queue(chunk_ids, RUN_BATCH_CHUNK)

    def _queue(self, ids_given: Sequence[str], task: str) -> None:
        ids = list(ids_given)
        if not ids:
            return
        tracer = tracing.tracer()
        headers = tracer.inject(tracer.current()) if tracer is not None else None
        if not self.background:
            self._send([(token_id, headers, task) for token_id in ids])
            return
        if self.broker_down:
            with self._lock:
                self.stats.skipped += len(ids)
            return
        with self._cond:
            self._pending.extend((token_id, headers, task) for token_id in ids)
            self._cond.notify_all()
        self._ensure_sender()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued was published (or failed); False on timeout.

        Runs at exit too, so a short-lived process (``bpm start``) still publishes."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self._sender_alive():
                    return not (self._pending or self._busy)
                self._cond.wait(left)
        return True

    def _sender_alive(self) -> bool:
        sender = self._sender
        return sender is not None and sender.is_alive() and self._sender_pid == os.getpid()

    def _ensure_sender(self) -> None:
        if self._sender_alive():
            return
        with self._lock:
            if self._sender_alive():
                return
            # A forked child inherits the queue but not the thread: it starts its own.
            self._sender_pid = os.getpid()
            self._sender = threading.Thread(
                target=self._send_forever, name="bpm-publisher", daemon=True
            )
            self._sender.start()

    def _send_forever(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                pending, self._pending = self._pending, []
                self._busy = True
            try:
                self._send(pending)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def publish_now(
        self, token_ids: Sequence[str], trace_headers: Mapping[str, str] | None = None
    ) -> None:
        """Publish in the calling thread (what the background thread does), with
        ``trace_headers`` (W3C trace context) on every message."""
        self._send([(token_id, trace_headers, self.task_name) for token_id in token_ids])

    def _send(self, pending: Sequence[tuple[str, Mapping[str, str] | None, str]]) -> None:
        ids = [token_id for token_id, _, _ in pending]
        if not ids:
            return
        warming = self._warming
        if warming is not None and warming.is_alive():
            warming.join()  # every thread waits: the pool must exist before it is used
        if self.broker_down:
            with self._lock:
                self.stats.skipped += len(ids)
            return
        sent = 0
        try:
            amqp: Any = self.app.amqp
            queue = amqp.queues[self.queue]
            with self.app.producer_or_acquire() as producer:
                for token_id, trace_headers, task in pending:
                    # Celery's own message (protocol 2) without send_task's bookkeeping
                    # (result handles, signals, routing lookups): a third of its cost.
                    message = amqp.as_task_v2(str(uuid.uuid4()), task, args=(token_id,))
                    headers = message.headers
                    if trace_headers:
                        headers = {**headers, **trace_headers}
                    producer.publish(
                        message.body,
                        exchange=queue.exchange,
                        routing_key=queue.routing_key,
                        declare=[queue],
                        serializer="json",
                        headers=headers,
                        retry=False,
                        **message.properties,
                    )
                    sent += 1
        except Exception as exc:  # the broker is outside our transaction: never raise
            self._failed(exc, sent=sent, lost=len(ids) - sent)
            return
        self._succeeded(sent)

    def _failed(self, exc: Exception, *, sent: int, lost: int) -> None:
        with self._lock:
            first = self._down_until is None
            self._down_until = self._clock() + self.retry_after
            self.stats.published += sent
            self.stats.failed += lost
            if first:
                self.stats.outages += 1
        if first:
            log.warning(
                "cannot publish to the broker %s (%s: %s); %d ready step(s) wait for the "
                "sweeper, publishing pauses for %.1fs",
                _safe_url(self.broker_url),
                type(exc).__name__,
                exc,
                lost,
                self.retry_after,
            )
        else:
            log.debug("publishing still fails (%s); %d step(s) left to the sweeper", exc, lost)

    def _succeeded(self, sent: int) -> None:
        with self._lock:
            recovered = self._down_until is not None
            self._down_until = None
            self.stats.published += sent
        if recovered:
            log.warning("publishing to the broker %s works again", _safe_url(self.broker_url))

    def close(self) -> None:
        """Publish what is queued (a few seconds at most), close the broker connections."""
        if self.background:
            self.flush(EXIT_FLUSH_SECONDS)
        self.app.close()


def _at_exit(fn: Callable[..., object], *args: object) -> None:
    """Run ``fn`` when the process ends, early enough that the broker's transport may
    still be imported and connect: kombu and redis register ``atexit`` hooks of their own
    on first use, which plain ``atexit`` handlers can no longer do. ``threading`` runs its
    hooks before those (concurrent.futures uses the same one); plain atexit elsewhere."""
    register: Callable[..., object] = getattr(threading, "_register_atexit", atexit.register)
    register(fn, *args)


def _safe_url(url: str) -> str:
    """The URL without its password, for logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else f"{scheme}://{creds}@{host}"
