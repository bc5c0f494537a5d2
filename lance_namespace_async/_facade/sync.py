"""The sync facade: the async backends driven from blocking code.

A :class:`SyncLanceNamespace` owns an anyio ``BlockingPortal``: one event loop
on a background thread running the very same async backend, not a second copy
of it. Any number of threads may call it at once, including a thread that
already runs an event loop (a notebook cell), because the work always happens
on the portal's own loop.

It is a ``lance_namespace.LanceNamespace``, so pylance accepts it as
``namespace_client``: asked as pylance and LanceDB ask (their pydantic models,
pylance's Rust dicts, ``model_dump()`` dicts), it answers what pylance's own
namespaces answer for the same call (``_core/peer.py`` decides, operation by
operation); errors are also instances of ``lance_namespace``'s error classes.
Pickling carries the impl and the properties only; the unpickled copy (a Spark
executor) connects anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import lance_namespace
from anyio.from_thread import BlockingPortal

from .. import errors
from .._core.base import OPERATIONS, AsyncLanceNamespace, Operation
from .._core.operation_methods import SyncOperationMethods
from .._core.peer import Caller, _caller, _compat_error, _peer_answer, _peer_request
from .._core.registry import resolve_impl
from .._core.timeout import USE_DEFAULT, TimeoutTypes
from .portal import start_portal as _start_portal

__all__ = ["SyncLanceNamespace", "connect_sync"]

T = TypeVar("T")

if TYPE_CHECKING:
    # Each method returns our model, or pylance's when pylance's model came in;
    # the peer's single-typed signatures cannot say that, so type-checkers see
    # the facade on its own while at run time it is a LanceNamespace.
    _LanceNamespaceBase = object
else:
    _LanceNamespaceBase = lance_namespace.LanceNamespace


class SyncLanceNamespace(SyncOperationMethods, _LanceNamespaceBase):
    """Blocking twin of an async backend, accepted by pylance as a namespace client."""

    def __init__(self, impl: str, properties: Mapping[str, str] | None = None) -> None:
        self._impl = impl
        self._properties = dict(properties or {})
        self._namespace: AsyncLanceNamespace = resolve_impl(impl).from_properties(self._properties)
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._release: weakref.finalize[Any, Any] | None = None

    # -- lifecycle -----------------------------------------------------------------

    @property
    def async_namespace(self) -> AsyncLanceNamespace:
        """The async backend this facade drives (use it only on the portal's loop)."""
        return self._namespace

    def _get_portal(self) -> BlockingPortal:
        portal = self._portal
        if portal is not None:
            return portal
        with self._lock:
            if self._closed:
                raise errors.InvalidInputError("this SyncLanceNamespace is closed")
            if self._portal is None:
                portal, self._thread = _start_portal()
                self._loop = portal.call(asyncio.get_running_loop)
                # LanceDB and lance_namespace.connect build facades they never close:
                # one garbage collected closes its backend and ends its thread
                self._release = weakref.finalize(
                    self, _release_unclosed, self._loop, portal, self._namespace
                )
                self._release.atexit = False  # at exit the daemon thread just ends
                self._portal = portal
            return self._portal

    def close(self) -> None:
        """Close the backend and stop the portal thread; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            portal, thread = self._portal, self._thread
            self._portal = self._thread = None
            if self._release is not None:
                self._release.detach()
        if portal is not None and thread is not None:
            try:
                portal.call(self._namespace.aclose)
            finally:
                portal.call(portal.stop)
                thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"impl": self._impl, "properties": self._properties}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["impl"], state["properties"])  # type: ignore[misc]  # re-connect

    def namespace_id(self) -> str:
        return self._namespace.namespace_id()

    def __repr__(self) -> str:
        return f"SyncLanceNamespace({self._namespace.namespace_id()})"

    def list_operations(self) -> list[str]:
        return self._namespace.list_operations()

    def retrieve_ops_metrics(self) -> dict[str, int]:
        """Calls per operation, as pylance's DirectoryNamespace answers them (the dir
        backend with ``ops_metrics_enabled``); empty for every other setting."""
        retrieve = getattr(self._namespace, "retrieve_ops_metrics", None)
        return dict(retrieve()) if retrieve is not None else {}

    def reset_ops_metrics(self) -> None:
        """Count from zero again (see :meth:`retrieve_ops_metrics`)."""
        reset = getattr(self._namespace, "reset_ops_metrics", None)
        if reset is not None:
            reset()

    # -- calls -----------------------------------------------------------------------

    def run(self, function: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run a coroutine function on the facade's loop and return its result.

        For what the protocol's operations do not cover, such as the Iceberg
        backend's ``commit_table_version``:
        ``ns.run(ns.async_namespace.commit_table_version, table_id, expected_version=3)``.
        """
        try:
            return self._get_portal().call(functools.partial(function, *args, **kwargs))
        except errors.LanceNamespaceError as exc:
            raise _compat_error(exc) from None

    def _on_loop(self, coroutine: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Await ``coroutine(*args, **kwargs)`` on the portal's loop; the lean hop.

        ``BlockingPortal.call`` costs ~4x the thread hop itself (a task group task,
        cancel scopes, a concurrent Future); an operation is one task started with
        ``call_soon_threadsafe`` and a lock released when it is done (benchmarks/
        report.py, section 5).
        """
        self._get_portal()
        loop, thread = self._loop, self._thread
        assert loop is not None  # _get_portal sets it before it publishes the portal
        if thread is threading.current_thread():
            raise RuntimeError("a SyncLanceNamespace cannot be called from its own event loop")
        done = threading.Lock()
        done.acquire()
        outcome: list[asyncio.Future[T]] = []

        def finished(task: asyncio.Future[T]) -> None:
            outcome.append(task)
            done.release()

        def start() -> None:
            loop.create_task(coroutine(*args)).add_done_callback(finished)

        try:
            loop.call_soon_threadsafe(start)
        except RuntimeError:  # the loop closed under a racing close()
            raise errors.InvalidInputError("this SyncLanceNamespace is closed") from None
        while not done.acquire(timeout=1.0):
            if thread is None or not thread.is_alive():  # closed under a racing call
                raise errors.InvalidInputError("this SyncLanceNamespace is closed")
        return outcome[0].result()

    def _call(
        self, operation: Operation, request: Any, data: tuple[Any, ...], timeout: TimeoutTypes
    ) -> Any:
        caller = _caller(operation, request)
        if caller is not Caller.OURS:
            request = _peer_request(request)
        arrow_bytes = operation.returns_arrow and caller is not Caller.OURS
        name = "query_table_ipc" if arrow_bytes else operation.method
        coroutine: Callable[..., Any] = getattr(self._namespace, name)
        try:
            result = self._on_loop(functools.partial(coroutine, request, *data, timeout=timeout))
        except errors.LanceNamespaceError as exc:
            raise _compat_error(exc) from None
        return _peer_answer(operation, result, caller)


def _release_unclosed(
    loop: asyncio.AbstractEventLoop, portal: BlockingPortal, namespace: AsyncLanceNamespace
) -> None:
    """Close a garbage-collected facade's backend, then stop its portal.

    Runs in whatever thread dropped the last reference (the portal's own, too), so it
    only schedules the work on the portal's loop and never waits for it.
    """

    async def shutdown() -> None:
        try:
            await namespace.aclose()
        finally:
            await portal.stop()

    def start() -> None:
        loop.create_task(shutdown())

    with contextlib.suppress(RuntimeError):  # the loop has already ended
        loop.call_soon_threadsafe(start)


def _blocking(operation: Operation) -> Callable[..., Any]:
    """The facade's twin of ``operation``: the same parameters, blocking."""
    if operation.takes_data:

        def call_with_data(
            self: SyncLanceNamespace,
            request: Any = None,
            data: Any = None,
            *,
            timeout: TimeoutTypes = USE_DEFAULT,
        ) -> Any:
            return self._call(operation, request, (data,), timeout)

        function: Callable[..., Any] = call_with_data
    else:

        def call(
            self: SyncLanceNamespace, request: Any = None, *, timeout: TimeoutTypes = USE_DEFAULT
        ) -> Any:
            return self._call(operation, request, (), timeout)

        function = call
    async_twin = getattr(AsyncLanceNamespace, operation.method)
    function.__name__ = operation.method
    function.__qualname__ = f"SyncLanceNamespace.{operation.method}"
    function.__doc__ = (
        f"Blocking {operation.operation_id}; answers in pylance's types when asked in them.\n\n"
        + (async_twin.__doc__ or "")
    )
    return function


for _operation in OPERATIONS:
    setattr(SyncLanceNamespace, _operation.method, _blocking(_operation))
del _operation


def connect_sync(impl: str, properties: Mapping[str, str] | None = None) -> SyncLanceNamespace:
    """Blocking counterpart of :func:`connect`; close it or use it as a context manager."""
    return SyncLanceNamespace(impl, properties)
