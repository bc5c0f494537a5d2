"""The one hook every backend call goes through, and the refusals the server counts.

A *backend call* is one unit of work a backend does on something outside the process:
a catalog HTTP call (all its attempts: ``_transport.calls._CallScope``), a Hive
metastore Thrift call (``hive``'s ``_hms``), a Glue or STS call (``glue._client``'s
``_bounded``), a storage operation on pylance's worker threads
(``_storage.tables.LanceTables.run``, which the directory backend's pylance calls use
too) and an operation handed to a storage worker process (``server._storage_workers``).
Each is wrapped in :func:`backend_call`; what observes them (Prometheus metrics, OpenTelemetry
spans) registers a :class:`Listener` from the server layer. This module depends on
neither, so the SDK pays for observation only when someone listens: with no listener,
:func:`backend_call` returns one shared object whose ``with`` does nothing
(benchmarks/observe_cost.py measures it).

``refused(status, limit)`` is the second event: the server refused a request on one of
its limits (431, 408, 413, 503) before any backend saw it.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Protocol

__all__ = [
    "BackendCall",
    "Listener",
    "add_listener",
    "backend_call",
    "refused",
    "remove_listener",
]


class Listener(Protocol):
    """What observes backend calls and refusals (``server._metrics``, ``server._tracing``)."""

    def start(self, backend: str, kind: str, name: str, detail: str | None) -> Any:
        """A call begins; what is returned comes back to :meth:`end` and :meth:`headers`."""

    def end(self, token: Any, error: BaseException | None) -> None:
        """The call ended, with ``error`` when it raised."""

    def headers(self, token: Any, carrier: dict[str, str]) -> None:
        """Add what an outgoing request of this call should carry (``traceparent``)."""

    def refused(self, status: int, limit: str) -> None:
        """The server refused a request on ``limit`` with HTTP ``status``."""


_listeners: tuple[Listener, ...] = ()


def add_listener(listener: Listener) -> None:
    """Observe every later backend call and refusal of this process (idempotent)."""
    global _listeners
    if listener not in _listeners:
        _listeners = (*_listeners, listener)


def remove_listener(listener: Listener) -> None:
    global _listeners
    _listeners = tuple(known for known in _listeners if known is not listener)


class BackendCall:
    """One observed backend call: a context manager, entered once."""

    __slots__ = ("_backend", "_detail", "_kind", "_listening", "_name")

    def __init__(self, backend: str, kind: str, name: str, detail: str | None) -> None:
        self._backend = backend
        self._kind = kind
        self._name = name
        self._detail = detail
        self._listening: list[tuple[Listener, Any]] = []

    def __enter__(self) -> BackendCall:
        for listener in _listeners:
            self._listening.append(
                (listener, listener.start(self._backend, self._kind, self._name, self._detail))
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # the last started ends first: a span's context is detached in the order it nested
        for listener, token in reversed(self._listening):
            listener.end(token, exc)
        self._listening.clear()

    def headers(self) -> dict[str, str]:
        """Headers an outgoing request of this call carries for its observers (empty when
        nobody listens)."""
        carrier: dict[str, str] = {}
        for listener, token in self._listening:
            listener.headers(token, carrier)
        return carrier


class _Unobserved(BackendCall):
    """The call when nobody listens: shared, and its ``with`` does nothing."""

    __slots__ = ()

    def __enter__(self) -> BackendCall:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def headers(self) -> dict[str, str]:
        return {}


_UNOBSERVED = _Unobserved("", "", "", None)


def backend_call(backend: str, kind: str, name: str, detail: str | None = None) -> BackendCall:
    """The context manager one backend call runs in.

    ``backend`` names the backend (``dir``, ``iceberg``, ``glue``...), ``kind`` what the call
    reaches (``catalog_http``, ``thrift``, ``glue``, ``storage``, ``storage_worker``);
    both become metric labels, so they are a few fixed words. ``name`` (a function or action
    name, also few) names the span; ``detail`` (may hold a table id, never a secret) is
    only a span attribute.
    """
    if not _listeners:
        return _UNOBSERVED
    return BackendCall(backend, kind, name, detail)


def refused(status: int, limit: str) -> None:
    """Tell the listeners the server refused a request on ``limit`` (HTTP ``status``)."""
    for listener in _listeners:
        listener.refused(status, limit)
