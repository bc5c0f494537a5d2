"""Prometheus metrics of the server (prometheus-client), and the port that serves them.

One set of metrics per process, made on first use (:func:`server_metrics`) on
prometheus-client's default registry, so an application embedding :func:`create_app`
exposes them with its own. ``serve(metrics_port=...)`` serves ``/metrics`` on a port of
its own (:func:`start_metrics_server`), never on the API port: a scrape needs no token
and a client of the catalog sees no metrics.

Several worker processes: set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before
any of them starts (prometheus-client reads it when first imported); each process then
writes its values there, the in-flight gauge is summed over the live ones, and whichever
process serves the metrics port answers for all of them (a ``MultiProcessCollector``).
A supervisor calls :func:`worker_exited` when it reaps a worker (its gauge is dropped and
``lance_ns_worker_restarts_total`` counts the restart).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from .. import errors
from .._core import observe

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["ServerMetrics", "server_metrics", "start_metrics_server", "worker_exited"]

#: request latencies: a catalog answers in a millisecond or so, data operations take seconds
_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)


def _prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:
        raise errors.MissingDependencyError(
            f"metrics need prometheus-client: pip install 'lance-namespace-async[server]' ({exc})"
        ) from exc
    return prometheus_client


class ServerMetrics:
    """The server's metrics; also the backend-call listener that times backend calls."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        prometheus = _prometheus()
        Counter, Gauge, Histogram = prometheus.Counter, prometheus.Gauge, prometheus.Histogram
        options: dict[str, Any] = {"registry": registry}
        self.requests = Counter(
            "lance_ns_requests",
            "Requests answered, by operation and HTTP status",
            ["operation", "status"],
            **options,
        )
        self.errors = Counter(
            "lance_ns_request_errors",
            "Requests answered with an error, by operation and protocol error code",
            ["operation", "code"],
            **options,
        )
        self.latency = Histogram(
            "lance_ns_request_duration_seconds",
            "Time from a request's arrival at the application to its answer sent",
            ["operation"],
            buckets=_LATENCY_BUCKETS,
            **options,
        )
        self.in_flight = Gauge(
            "lance_ns_requests_in_flight",
            "Requests being answered",
            multiprocess_mode="livesum",
            **options,
        )
        self.answer_bytes = Counter(
            "lance_ns_response_bytes",
            "Bytes of answer bodies sent, by operation",
            ["operation"],
            **options,
        )
        self.backend_latency = Histogram(
            "lance_ns_backend_call_duration_seconds",
            "Backend calls (catalog HTTP, Thrift, Glue, storage), by backend, kind and outcome",
            ["backend", "kind", "outcome"],
            buckets=_LATENCY_BUCKETS,
            **options,
        )
        self.refusals = Counter(
            "lance_ns_limit_refusals",
            "Requests the server refused on one of its limits (431, 408, 413, 503)",
            ["status", "limit"],
            **options,
        )
        self.worker_restarts = Counter(
            "lance_ns_worker_restarts", "Worker processes restarted after they exited", **options
        )
        # labels() costs a few microseconds a call: the children, cached (their label values
        # are operation ids, statuses and codes: a bounded few)
        self._backend_children: dict[tuple[str, str, str], Any] = {}
        self._request_children: dict[tuple[str, int], tuple[Any, Any, Any]] = {}
        self._error_children: dict[tuple[str, int], Any] = {}

    # -- requests (server._observe) ------------------------------------------------------------

    def request_done(
        self, operation: str, status: int, code: int | None, seconds: float, size: int
    ) -> None:
        children = self._request_children.get((operation, status))
        if children is None:
            children = self._request_children[(operation, status)] = (
                self.requests.labels(operation, str(status)),
                self.latency.labels(operation),
                self.answer_bytes.labels(operation),
            )
        requests, latency, answer_bytes = children
        requests.inc()
        latency.observe(seconds)
        if size:
            answer_bytes.inc(size)
        if code is not None:
            errors = self._error_children.get((operation, code))
            if errors is None:
                errors = self._error_children[(operation, code)] = self.errors.labels(
                    operation, str(code)
                )
            errors.inc()

    # -- the backend-call listener (_core.observe) ---------------------------------------------

    def start(self, backend: str, kind: str, name: str, detail: str | None) -> Any:
        return (backend, kind, time.perf_counter())

    def end(self, token: Any, error: BaseException | None) -> None:
        backend, kind, started = token
        key = (backend, kind, "ok" if error is None else "error")
        child = self._backend_children.get(key)
        if child is None:
            child = self._backend_children[key] = self.backend_latency.labels(*key)
        child.observe(time.perf_counter() - started)

    def headers(self, token: Any, carrier: dict[str, str]) -> None:
        return None

    def refused(self, status: int, limit: str) -> None:
        self.refusals.labels(str(status), limit).inc()


_metrics: ServerMetrics | None = None


def server_metrics() -> ServerMetrics:
    """This process's metrics, made (and listening to backend calls) on first use."""
    global _metrics
    if _metrics is None:
        _metrics = ServerMetrics(_prometheus().REGISTRY)
    observe.add_listener(_metrics)  # again after a remove_listener
    return _metrics


def worker_exited(pid: int | None = None, *, restarted: bool = True) -> None:
    """A supervisor reaped worker ``pid``: count its restart (unless it was retired on
    purpose, ``restarted=False``); in multiprocess mode its live gauges are dropped."""
    if restarted:
        server_metrics().worker_restarts.inc()
    if pid is not None and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def _exposed_registry() -> Any:
    prometheus = _prometheus()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = prometheus.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return registry
    return prometheus.REGISTRY


def start_metrics_server(host: str, port: int) -> Any:
    """Serve ``/metrics`` on ``host:port`` from a thread of this process; returns the
    HTTP server (``shutdown()`` stops it). The API port never answers metrics."""
    prometheus = _prometheus()
    server_metrics()
    try:
        started = prometheus.start_http_server(port, addr=host, registry=_exposed_registry())
    except OSError as exc:
        raise errors.InvalidInputError(
            f"cannot serve metrics on {host}:{port}: {exc.strerror}"
        ) from None
    return started[0] if isinstance(started, tuple) else started
