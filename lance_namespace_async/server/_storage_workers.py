"""Storage work of the REST adapter in supervised worker processes (issue 27).

The data-plane operations (:data:`STORAGE_METHODS`: those that decode Arrow, evaluate
expressions, scan data or build indices) run native code (pylance, DataFusion,
Arrow) on input a client chose. A crash there (a stack overflow in the query
engine, an abort on a failed allocation) used to take the whole server down, and
a hostile query could grow the server past all memory or burn CPU after its
client had hung up. Here each such request runs in a worker process:

* a worker that dies (SIGSEGV, abort) fails only the request it was running:
  500 with code 18 and a message saying so; pebble replaces the worker;
* each worker has an address-space limit (``RLIMIT_AS``, ``memory_mib``): an
  allocation past it fails inside the worker (a ``MemoryError`` ends the worker
  on purpose, a Rust abort kills it) and the request gets 500/18, never the
  server's memory. 500 rather than 507: 507 is WebDAV's "insufficient storage"
  (disk), the protocol has no code for memory, and 503 would invite a retry of a
  request that fails the same way again;
* every request has a deadline (``request_timeout``, queueing included): past it
  the worker is killed and the answer is 503 with code 17;
* a client that disconnects while its work runs: the adapter sees
  ``http.disconnect`` on the ASGI receive channel and kills the worker, so no CPU
  keeps burning for nobody;
* at most ``workers`` requests run and ``max_queued`` wait; one more is 503/17;
* workers run at a lower CPU priority (nice 10), so catalog answers stay quick
  while storage work keeps every core busy.

Catalog and metadata operations stay in the server process and pay nothing.

The pool is pebble's ``ProcessPool`` (a dead worker fails only its own task with
``ProcessExpired`` and is replaced; ``future.cancel()`` terminates the worker running
the task), started with the ``spawn`` method: forking a process that runs tokio
(pylance) threads and an event loop is unsafe. What a worker runs is
:mod:`lance_namespace_async._storage.worker_process`, which imports no server module.
Each worker builds its own backend once, from the impl name and properties (backends
do no I/O in their constructors), and answers one operation per task. What crosses
the process boundary is plain data: the request dict and Arrow IPC bytes in; the
answer as a dict or bytes, or a typed error as ``(code, message, detail)`` rebuilt
with :func:`errors.from_code`.

Only one task is handed to pebble per idle worker (an asyncio semaphore): a request
waiting for a worker waits here, where cancelling it costs nothing, not in pebble's
pipe, where cancelling a queued task costs the worker that later picks it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import BrokenExecutor, CancelledError
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import errors
from .._core import observe
from .._storage.worker_process import (
    _MEMORY_EXIT,
    _initialize_worker,
    _ping,
    _run_operation,
)

if TYPE_CHECKING:
    from .._core.arrow_data import ArrowData

__all__ = [
    "STORAGE_METHODS",
    "StorageWorkerError",
    "StorageWorkerLimits",
    "StorageWorkers",
    "default_worker_count",
    "default_worker_memory_mib",
    "serving_workers",
]

logger = logging.getLogger("lance_namespace_async.server")

#: The operations that run in a worker: they decode Arrow rows, evaluate client
#: expressions, scan data or build indices. Everything else (catalog entries,
#: versions, tags, branches, metadata-only schema changes) stays in the server process,
#: and so do CreateMaterializedView, RefreshMaterializedView and AlterTableBackfillColumns:
#: they only check a definition, write an empty table and queue a Spark job, whose driver
#: must outlive the request and must not inherit a worker's address-space limit (a JVM
#: reserves far more than any worker limit).
STORAGE_METHODS: frozenset[str] = frozenset(
    {
        "create_table",
        "insert_into_table",
        "merge_insert_into_table",
        "update_table",
        "delete_from_table",
        "query_table",
        "count_table_rows",
        "explain_table_query_plan",
        "analyze_table_query_plan",
        "alter_table_add_columns",
        "alter_table_alter_columns",
        "create_table_index",
        "create_table_scalar_index",
        "get_table_stats",
    }
)

#: below this an address-space limit leaves a worker no room at all (pylance and
#: pyarrow reserve about 2 GiB of address space before the first request)
MIN_WORKER_MEMORY_MIB = 2048


def default_worker_count() -> int:
    """min(4, CPUs): storage work is CPU-bound, and pylance is multi-threaded itself."""
    return max(1, min(4, os.cpu_count() or 1))


def default_worker_memory_mib(workers: int) -> int:
    """The machine's memory shared by the workers and the server, between 4 and 16 GiB.

    The limit is on address space, which pylance and pyarrow reserve generously (about
    2 GiB before any work), so it is not a share of resident memory; sharing physical
    memory this way still keeps all workers together from reserving far past it.
    """
    try:
        total_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError):
        total_mib = 16_384
    return int(min(16_384, max(4096, total_mib // (max(1, workers) + 1))))


@dataclass(frozen=True)
class StorageWorkerLimits:
    """How many workers, how much memory each, how long one request may take."""

    #: worker processes; 0 runs storage work in the server process (no isolation)
    workers: int = field(default_factory=default_worker_count)
    #: address-space limit of each worker, in MiB (None: the default for ``workers``)
    memory_mib: int | None = None
    #: seconds a storage request may take, waiting for a worker included; then 503/17
    request_timeout: float = 300.0
    #: requests waiting for a worker; one more is answered 503/17 at once
    max_queued: int = 64
    #: seconds the requests in flight get to finish after SIGTERM; then they are
    #: cancelled and the workers running them killed (stopping a server means it)
    shutdown_grace: float = 5.0

    def __post_init__(self) -> None:
        for name in ("workers", "max_queued"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise errors.InvalidInputError(f"{name} must be an integer >= 0")
        memory = self.memory_mib
        if memory is not None and (
            isinstance(memory, bool) or not isinstance(memory, int) or memory < 1
        ):
            raise errors.InvalidInputError("memory_mib must be an integer >= 1 or None")
        if memory is not None and memory < MIN_WORKER_MEMORY_MIB:
            raise errors.InvalidInputError(
                f"memory_mib must be >= {MIN_WORKER_MEMORY_MIB}: pylance reserves about "
                "2 GiB of address space before its first request"
            )
        for name in ("request_timeout", "shutdown_grace"):
            seconds = getattr(self, name)
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, int | float)
                or not seconds > 0
                or seconds == float("inf")
            ):
                raise errors.InvalidInputError(f"{name} must be a number of seconds > 0")

    @property
    def worker_memory_mib(self) -> int:
        return self.memory_mib or default_worker_memory_mib(self.workers)


def serving_workers(
    namespace_or_impl: object,
    properties: Mapping[str, str] | None,
    setting: StorageWorkerLimits | StorageWorkers | None,
) -> tuple[StorageWorkers | None, bool]:
    """The workers :func:`~lance_namespace_async.server.serve` runs, and whether it owns
    them: its own for an impl name (default limits when ``setting`` is None), none for a
    namespace instance unless ``setting`` is a :class:`StorageWorkers` (the caller's)."""
    if isinstance(setting, StorageWorkers):
        return setting, False
    if setting is not None and not isinstance(setting, StorageWorkerLimits):
        raise errors.InvalidInputError(
            "storage_workers must be a StorageWorkerLimits, a StorageWorkers or None"
        )
    if not isinstance(namespace_or_impl, str):
        if setting is not None and setting.workers > 0:
            raise errors.InvalidInputError(
                "storage workers build their backend from an impl name: serve an impl name, "
                "or pass a StorageWorkers built for this namespace's backend"
            )
        return None, False
    limits = setting if setting is not None else StorageWorkerLimits()
    if limits.workers == 0:
        return None, False
    return StorageWorkers(namespace_or_impl, properties, limits), True


class StorageWorkerError(errors.InternalError):
    """A storage worker died or ran out of memory: the request fails alone (500/18).

    Its message is the adapter's own (no server paths, no pylance text), so the
    client sees it, unlike other internal errors.
    """


class _Answer:
    """A worker's answer dict where the adapter expects a response model."""

    __slots__ = ("_body",)

    def __init__(self, body: dict[str, Any]) -> None:
        self._body = body

    def to_dict(self) -> dict[str, Any]:
        return self._body


class StorageWorkers:
    """The pool of storage workers of one server; :meth:`close` it when done.

    Built from the backend's impl name and properties (each worker builds its own
    backend from them). No process starts before the first storage request (or
    :meth:`start`): a server that only answers catalog requests never pays for
    workers, and a starting server does not share its CPUs with their imports.
    """

    def __init__(
        self,
        impl: str,
        properties: Mapping[str, str] | None = None,
        limits: StorageWorkerLimits | None = None,
    ) -> None:
        if not isinstance(impl, str) or not impl:
            raise errors.InvalidInputError("storage workers need the backend's impl name")
        self.limits = limits if limits is not None else StorageWorkerLimits()
        if self.limits.workers < 1:
            raise errors.InvalidInputError("StorageWorkers needs workers >= 1")
        try:  # refuse to start, rather than fail every storage request later
            import pebble  # noqa: F401
        except ImportError as exc:  # pragma: no cover - pebble is in the server extra
            raise errors.MissingDependencyError(
                f"storage workers need pebble: pip install 'lance-namespace-async[server]' ({exc})"
            ) from exc
        self.impl = impl
        self._properties = dict(properties or {})
        self._pool: Any = None
        self._pool_lock = threading.Lock()
        self._admitted = 0
        self._running: asyncio.Semaphore | None = None
        self._closed = False

    def handles(self, method: str) -> bool:
        """Whether the operation ``method`` runs in a worker."""
        return method in STORAGE_METHODS

    # -- the pool ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers now (each imports pylance and builds its backend), so the
        first requests do not wait for that."""
        pool = self._current_pool()
        for _ in range(self.limits.workers):
            pool.schedule(_ping)

    def _current_pool(self) -> Any:
        with self._pool_lock:
            if self._closed:
                raise errors.ServiceUnavailableError("the server is shutting down")
            if self._pool is None or not self._pool.active:
                broken, self._pool = self._pool, self._new_pool()
                if broken is not None:
                    logger.error("the storage worker pool broke; started a new one")
                    threading.Thread(target=_stop_pool, args=(broken,), daemon=True).start()
            return self._pool

    def _new_pool(self) -> Any:
        import multiprocessing

        import pebble

        memory = self.limits.worker_memory_mib * 2**20
        return pebble.ProcessPool(
            max_workers=self.limits.workers,
            initializer=_initialize_worker,
            initargs=(self.impl, self._properties, memory),
            context=multiprocessing.get_context("spawn"),
        )

    def close(self) -> None:
        """Stop every worker now (a task still running is killed with its worker)."""
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            _stop_pool(pool)

    # -- one request -------------------------------------------------------------------

    async def call(
        self,
        method: str,
        body: dict[str, Any],
        data: ArrowData | None,
        receive: Callable[[], Awaitable[Any]] | None = None,
    ) -> Any:
        """Run ``method`` on a worker: the answer (bytes for QueryTable, else an object
        with ``to_dict``), a typed error, or starlette's ``ClientDisconnect`` once
        ``receive`` says the client disconnected (the work is killed then)."""
        limits = self.limits
        if self._admitted >= limits.workers + limits.max_queued:
            observe.refused(503, "storage_queue")
            raise errors.ServiceUnavailableError(
                f"the server is busy: {self._admitted} storage requests are running or "
                "waiting; retry later"
            )
        with observe.backend_call("storage_workers", "storage_worker", method):
            return await self._call(method, body, data, receive)

    async def _call(
        self,
        method: str,
        body: dict[str, Any],
        data: ArrowData | None,
        receive: Callable[[], Awaitable[Any]] | None,
    ) -> Any:
        limits = self.limits
        payload = data.to_bytes() if data is not None else None
        self._admitted += 1
        work = asyncio.ensure_future(self._run(method, body, payload))
        watcher = asyncio.ensure_future(_disconnected(receive)) if receive else None
        waited_on = {work} if watcher is None else {work, watcher}
        try:
            done, _ = await asyncio.wait(
                waited_on, timeout=limits.request_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self._admitted -= 1
            if watcher is not None:
                watcher.cancel()
            if not work.done():
                work.cancel()  # kills the worker running it (see _run)
        if work in done:
            return work.result()
        if watcher is not None and watcher in done:
            from starlette.requests import ClientDisconnect

            raise ClientDisconnect  # the adapter's 499: nobody listens any more
        raise errors.ServiceUnavailableError(
            f"the request timed out: storage work may take at most {limits.request_timeout:g} s"
        )

    async def _run(self, method: str, body: dict[str, Any], payload: bytes | None) -> Any:
        if self._running is None:
            self._running = asyncio.Semaphore(self.limits.workers)
        async with self._running:
            try:
                future = self._current_pool().schedule(_run_operation, (method, body, payload))
            except RuntimeError:  # the pool broke between the check and the call
                future = self._current_pool().schedule(_run_operation, (method, body, payload))
            try:
                outcome = await asyncio.wrap_future(future)
            except asyncio.CancelledError:
                future.cancel()  # pebble terminates the worker running a cancelled task
                raise
            except CancelledError:  # the pool was stopped under it: shutdown
                raise errors.ServiceUnavailableError("the server is shutting down") from None
            except BrokenExecutor:
                raise StorageWorkerError(
                    "the storage workers failed while running this request; they are restarted"
                ) from None
            except Exception as exc:
                raise self._failure(exc) from None
        return _rebuild(outcome)

    def _failure(self, exc: Exception) -> errors.LanceNamespaceError:
        from pebble import ProcessExpired

        if isinstance(exc, ProcessExpired):
            code = exc.exitcode
            if code == _MEMORY_EXIT:
                reason = f"ran out of its memory limit ({self.limits.worker_memory_mib} MiB)"
            elif code is not None and code < 0:
                name = _signal_name(-code)
                reason = f"died ({name}: it crashed, or exceeded its memory limit)"
            else:
                reason = f"died (exit status {code})"
            logger.error("the storage worker %s running a request %s", exc.pid, reason)
            return StorageWorkerError(
                f"the storage worker running this request {reason}; the request failed "
                "alone and the worker was replaced"
            )
        logger.error("storage worker task failed: %s", errors.redact(repr(exc)))
        return StorageWorkerError("the storage worker running this request failed")


async def _disconnected(receive: Callable[[], Awaitable[Any]]) -> None:
    """Return once the ASGI receive channel says ``http.disconnect``."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return


def _rebuild(outcome: tuple[Any, ...]) -> Any:
    kind = outcome[0]
    if kind == "bytes":
        return outcome[1]
    if kind == "dict":
        return _Answer(outcome[1])
    if kind == "none":
        return _Answer({})
    _, code, message, detail = outcome
    raise errors.from_code(code, message, detail=detail)


def _stop_pool(pool: Any) -> None:
    pool.stop()
    with contextlib.suppress(Exception):
        pool.join(timeout=10)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
