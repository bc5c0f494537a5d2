"""The ASGI application (:func:`create_app`) and the server that runs it (:func:`serve`)."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .. import errors
from .._core.arrow_guard import DEFAULT_MAX_DECODED_BODY_BYTES, check_decoded_limit
from .._core.readiness import DEFAULT_READY_TIMEOUT
from ._access_log import AccessLog
from ._adapter import _Adapter, _check_token
from ._health import Health
from ._limits import DEFAULT_MAX_BODY_BYTES, ServerLimits
from ._origin import OriginPolicy
from ._request_limits import RequestLimits
from ._starlette import (
    Receive,
    Scope,
    Send,
    Starlette,
)
from ._storage_workers import (
    StorageWorkerLimits,
    StorageWorkers,
    serving_workers,
)

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace
    from ._observe import RequestObserver

logger = logging.getLogger("lance_namespace_async.server")


def create_app(
    namespace: AsyncLanceNamespace,
    *,
    auth_token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    expose_storage_options: bool = False,
    expose_vended_credentials: bool = False,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] | None = None,
    max_decoded_body_bytes: int = DEFAULT_MAX_DECODED_BODY_BYTES,
    storage_workers: StorageWorkers | None = None,
    request_limits: RequestLimits | None = None,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    access_log: AccessLog | None = None,
    metrics: bool = False,
    tracer_provider: Any = None,
) -> Starlette:
    """The ASGI application serving ``namespace`` as a Lance REST Namespace.

    The caller keeps ownership of ``namespace`` (the app never closes it).
    ``auth_token`` makes every request need ``Authorization: Bearer <token>``;
    bodies above ``max_body_bytes`` are refused with 413 before they are
    buffered, so a client cannot make the server hold arbitrary amounts of data.

    The ``storage_options`` of DescribeTable and DeclareTable answers are left
    out unless ``expose_storage_options`` is true: a backend's are the server's
    own (its ``storage.*`` properties, credentials included), and a client must
    bring its own or get them from a credential vendor. Opt in only when every
    client may hold what the backend answers there.

    ``expose_vended_credentials`` passes on, alone, the credentials the backend's
    catalog vended for the described table (DescribeTable of a backend with
    ``vend_credentials``; see ``_storage.vended_credentials``): short-lived and scoped by the
    catalog, but scoped to this server's identity, not the client's. Opt in only when
    every client may act on storage as the server does for the tables it can describe.

    Requests from web pages (an ``Origin`` header) are refused unless their origin
    is in ``allowed_origins``; given ``allowed_hosts``, so are requests naming
    another host (DNS rebinding): see ``server._origin``. :func:`serve` always
    checks host names.

    Arrow bodies (CreateTable, InsertIntoTable, MergeInsertIntoTable) are checked in
    full before the backend sees them (:mod:`.._core.arrow_guard`): malformed IPC is 400, and
    more than ``max_decoded_body_bytes`` once decoded (compression included) is 413.

    ``storage_workers`` runs the data-plane operations (``server._storage_workers.STORAGE_METHODS``)
    in its worker processes, each with a memory limit, a deadline per request and the
    work killed when its client disconnects; the others stay in-process. The caller
    owns it (start and close it); it must serve the same backend as ``namespace``.

    ``request_limits`` bound the expressions and parameters of every request and the
    size of QueryTable answers (:class:`~._request_limits.RequestLimits`; its defaults
    when None): a request over a limit is code 13 before the backend sees it.

    ``GET /healthz`` and ``GET /readyz`` answer without a token (``server._health``):
    ``/readyz`` is 503 unless every part of the backend answers a cheap call within
    ``ready_timeout`` seconds. ``access_log`` (started and closed by its owner; ``serve``
    does both) gets one JSON line per request (``server._access_log``).

    ``metrics`` counts and times every request and backend call in this process's
    Prometheus metrics (``server._metrics``; :func:`serve`'s ``metrics_port`` serves
    them). Spans are made when an OpenTelemetry ``TracerProvider`` is set globally
    (``server._tracing``; :func:`serve` sets one up from the ``OTEL_*`` variables) or given
    as ``tracer_provider``.
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int):
        raise errors.InvalidInputError("max_body_bytes must be an integer")
    if max_body_bytes < 1:
        raise errors.InvalidInputError("max_body_bytes must be >= 1")
    if not isinstance(expose_storage_options, bool):
        raise errors.InvalidInputError("expose_storage_options must be a boolean")
    if not isinstance(expose_vended_credentials, bool):
        raise errors.InvalidInputError("expose_vended_credentials must be a boolean")
    if storage_workers is not None and not isinstance(storage_workers, StorageWorkers):
        raise errors.InvalidInputError("storage_workers must be a StorageWorkers or None")
    if request_limits is not None and not isinstance(request_limits, RequestLimits):
        raise errors.InvalidInputError("request_limits must be a RequestLimits")
    if access_log is not None and not isinstance(access_log, AccessLog):
        raise errors.InvalidInputError("access_log must be an AccessLog or None")
    health = Health(namespace, ready_timeout)
    adapter = _Adapter(
        namespace,
        _check_token(auth_token),
        max_body_bytes,
        expose_storage_options,
        expose_vended_credentials,
        OriginPolicy(allowed_origins, allowed_hosts),
        check_decoded_limit(max_decoded_body_bytes),
        storage_workers,
        request_limits,
        health,
        access_log,
    )
    if not isinstance(metrics, bool):
        raise errors.InvalidInputError("metrics must be a boolean")
    adapter.observer = _observer(metrics, tracer_provider)
    app = _AdapterApp(adapter)
    app.state.namespace = namespace
    app.state.health = health  # another listener (a metrics port) serves the same checks
    from .._storage.containment import warn_if_unconfined

    warn_if_unconfined(namespace)  # a client must not reach storage outside its root
    return app


def _observer(metrics: bool, tracer_provider: Any) -> RequestObserver | None:
    """What observes each request: metrics when asked, spans when a tracer is set."""
    from ._tracing import listen_to_backend_calls, tracer

    spans = tracer(tracer_provider)
    if not metrics and spans is None:
        return None
    from ._metrics import server_metrics
    from ._observe import RequestObserver

    if spans is not None:
        listen_to_backend_calls(spans)
    return RequestObserver(server_metrics() if metrics else None, spans)


class _AdapterApp(Starlette):
    """Starlette around the adapter; HTTP requests go straight to it while the app is
    as :func:`create_app` made it.

    The adapter answers every path and turns every exception into an ErrorResponse, so
    Starlette's error middleware, exception middleware and router would only cost CPU on
    each request (a third of the HTTP stack's); routes or middleware a caller adds
    bring the whole stack back.
    """

    def __init__(self, adapter: _Adapter) -> None:
        super().__init__()
        # the router's fallback, not a Mount: Mount("") matches with ``.*``, so a path
        # holding a decoded newline (%0A) missed it and got Starlette's plain-text 404
        self.router.default = adapter
        self._adapter = adapter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.router.routes and not self.user_middleware:
            scope["app"] = self
            await self._adapter(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_host_name(host: str) -> bool:
    """Whether ``host`` (the bind address) is a name clients may use in ``Host``."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host != ""
    return False


def serve(
    namespace_or_impl: AsyncLanceNamespace | str,
    properties: Mapping[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 2333,
    auth_token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    limits: ServerLimits | None = None,
    expose_storage_options: bool = False,
    expose_vended_credentials: bool = False,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    allowed_storage_options: Iterable[str] = (),
    request_limits: RequestLimits | None = None,
    log_level: str = "info",
    max_decoded_body_bytes: int = DEFAULT_MAX_DECODED_BODY_BYTES,
    storage_workers: StorageWorkerLimits | StorageWorkers | None = None,
    sockets: list[socket.socket] | None = None,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    access_log: AccessLog | None = None,
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    metrics: bool | None = None,
) -> None:
    """Run the adapter with uvicorn until interrupted (blocking).

    Given an impl name, the backend is built from ``properties`` with
    ``confine_storage=true`` (unless they set it: see ``_storage.containment``) and closed on
    shutdown; a namespace instance stays the caller's to close. The default host
    is the loopback interface: exposing a catalog to the network is a decision,
    so binding elsewhere without a token logs a warning. ``limits`` bound what
    any client, with a token or without, can make the server hold
    (:class:`ServerLimits`; the defaults when None); ``expose_storage_options``
    ``expose_vended_credentials``, ``request_limits`` and ``allowed_origins`` are
    :func:`create_app`'s. Requests must name this server by an IP address,
    ``localhost``, ``host`` (when it is a name) or one of ``allowed_hosts`` (``*``:
    any), so a web page cannot reach it through DNS rebinding. Given an impl name, the
    backend is built with the server's defaults (``server._serving``): only the storage options
    in ``allowed_storage_options`` may come from a table's properties or a request.

    Storage work runs in worker processes (:mod:`._storage_workers`): given an impl
    name, by default (``StorageWorkerLimits()``; ``StorageWorkerLimits(workers=0)``
    turns them off); a namespace instance is served in-process unless
    ``storage_workers`` is a :class:`StorageWorkers` for the same backend (the
    caller's to close). On SIGTERM, requests get a short grace to finish, then the
    workers still running are killed.

    ``sockets``: listening sockets to serve on instead of binding ``host``/``port``
    (the serving processes of ``lance-ns serve --workers N`` share the supervisor's).

    ``ready_timeout`` and ``access_log`` are :func:`create_app`'s; ``serve`` starts the
    access log and closes it (its queued lines written) on shutdown.

    ``metrics_port`` serves Prometheus metrics at ``/metrics`` on ``metrics_host`` (loopback
    by default), a port apart from the API's (``server._metrics``); ``metrics`` (default:
    whether ``metrics_port`` is given) counts without serving them, for a worker process whose
    supervisor serves the metrics of all (``PROMETHEUS_MULTIPROC_DIR``). Traces are on when
    the ``OTEL_*`` environment variables ask for them (``server._tracing``).
    """
    from .._core.base import AsyncLanceNamespace
    from .._core.registry import connect
    from ._serving import served_properties
    from ._tracing import configure_from_environment

    if metrics_port is not None and (
        isinstance(metrics_port, bool)
        or not isinstance(metrics_port, int)
        or not 0 < metrics_port < 65536
    ):
        raise errors.InvalidInputError("metrics_port must be a TCP port (1-65535) or None")
    if metrics is not None and not isinstance(metrics, bool):
        raise errors.InvalidInputError("metrics must be a boolean or None")
    configure_from_environment()  # before the app: it looks for a tracer

    if limits is None:
        limits = ServerLimits()
    elif not isinstance(limits, ServerLimits):
        raise errors.InvalidInputError("limits must be a ServerLimits")
    served: dict[str, str] | None = None
    if isinstance(namespace_or_impl, AsyncLanceNamespace):
        if properties:
            raise errors.InvalidInputError(
                "properties only apply when serving an impl name, not a namespace instance"
            )
        namespace, owned = namespace_or_impl, False
    else:
        served = served_properties(
            namespace_or_impl, properties or {}, allowed_storage_options=allowed_storage_options
        )
        namespace, owned = connect(namespace_or_impl, served), True
    # workers rebuild the backend from the served properties: confined like it
    workers, owned_workers = serving_workers(namespace_or_impl, served, storage_workers)
    app = create_app(
        namespace,
        auth_token=auth_token,
        max_body_bytes=max_body_bytes,
        expose_storage_options=expose_storage_options,
        expose_vended_credentials=expose_vended_credentials,
        allowed_origins=allowed_origins,
        allowed_hosts=[*allowed_hosts, *([host] if _is_host_name(host) else [])],
        max_decoded_body_bytes=max_decoded_body_bytes,
        storage_workers=workers,
        request_limits=request_limits,
        ready_timeout=ready_timeout,
        access_log=access_log,
        metrics=metrics_port is not None if metrics is None else metrics,
    )
    metrics_server = None
    if metrics_port is not None:
        from ._metrics import start_metrics_server

        try:
            metrics_server = start_metrics_server(metrics_host, metrics_port)
        except BaseException:  # the port taken: nothing served, so nothing left running
            if workers is not None and owned_workers:
                workers.close()
            if owned:
                asyncio.run(namespace.aclose())
            raise
    if auth_token is None and not _is_loopback(host):
        logger.warning("serving on %s without authentication: anyone can reach it", host)
    try:
        asyncio.run(
            _serve(
                app,
                namespace,
                owned,
                limits=limits,
                max_body_bytes=max_body_bytes,
                host=host,
                port=port,
                log_level=log_level,
                workers=(workers, owned_workers),
                sockets=sockets,
                access_log=access_log,
            )
        )
    finally:
        if metrics_server is not None:
            metrics_server.shutdown()


async def _serve(
    app: Starlette,
    namespace: AsyncLanceNamespace,
    owned: bool,
    *,
    limits: ServerLimits,
    max_body_bytes: int,
    host: str,
    port: int,
    log_level: str,
    workers: tuple[StorageWorkers | None, bool] = (None, False),
    sockets: list[socket.socket] | None = None,
    access_log: AccessLog | None = None,
) -> None:
    try:
        from ._protocol import guarded_server
    except ImportError as exc:
        raise errors.MissingDependencyError(
            "serving needs uvicorn and httptools: "
            f"pip install 'lance-namespace-async[server]' ({exc})"
        ) from exc
    pool, owned_pool = workers
    server = guarded_server(
        app,
        limits,
        max_body_bytes,
        on_refusal=access_log.refused if access_log is not None else None,
        host=host,
        port=port,
        log_level=log_level,
        # then in-flight requests are cancelled, and with them their workers' tasks
        timeout_graceful_shutdown=pool.limits.shutdown_grace if pool is not None else None,
        access_log=False,  # uvicorn's own: our JSON log (--access-log json) or nothing
    )
    if access_log is not None:
        access_log.start()
    try:
        await server.serve(sockets=sockets)
    finally:
        if access_log is not None:
            access_log.close()
        if pool is not None and owned_pool:
            pool.close()
        if owned:
            await namespace.aclose()
