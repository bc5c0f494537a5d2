"""What a storage worker process of the REST adapter runs (``server._storage_workers``
supervises the pool): its limits, its own backend built once from the impl name and
properties, and one operation per task, answered as plain data.

Outside the server package on purpose: a worker is started with ``spawn`` and imports
this module by name, so it loads the core and the backend it serves, not the server
(Starlette, the routes, the adapter).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import errors

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

__all__ = ["WORKER_NICENESS", "_initialize_worker", "_ping", "_run_operation"]

#: exit status of a worker that ended itself after a MemoryError (its heap may be
#: fragmented past use, and pylance's threads may hold half-built state)
_MEMORY_EXIT = 86
#: storage work yields the CPUs to the server's own (parsing, routing, catalog answers):
#: two workers scanning on every core otherwise left a DescribeTable waiting ~3 s for
#: CPU on a 2-CPU machine
WORKER_NICENESS = 10


@dataclass
class _Worker:
    loop: asyncio.AbstractEventLoop
    namespace: AsyncLanceNamespace | None
    failure: errors.LanceNamespaceError | None


_worker: _Worker | None = None


def _initialize_worker(impl: str, properties: dict[str, str], memory_bytes: int) -> None:
    """Set the worker's limits and build its backend (no I/O: backends connect lazily).

    Never raises: pebble would take a failing initializer for a broken pool, so a
    backend that cannot be built answers each request with its error instead.
    """
    global _worker
    # pebble's SIGTERM handler runs only between Python bytecodes, never while pylance
    # holds the thread in native code: the default action ends the worker at once
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        # threads started later inherit it (Linux niceness is per thread)
        os.nice(WORKER_NICENESS)
    _limit_address_space(memory_bytes)
    loop = asyncio.new_event_loop()
    threading.Thread(
        target=loop.run_until_complete, args=(_forever(),), name="storage-loop", daemon=True
    ).start()
    namespace: AsyncLanceNamespace | None = None
    failure: errors.LanceNamespaceError | None = None
    try:
        namespace = asyncio.run_coroutine_threadsafe(_connect(impl, properties), loop).result()
    except errors.LanceNamespaceError as exc:
        failure = exc
    except Exception as exc:
        failure = errors.InternalError(f"the storage worker could not build its backend: {exc}")
    _worker = _Worker(loop, namespace, failure)


async def _forever() -> None:
    """The worker loop's root task, alive as long as the worker.

    Operations run as tasks beside it (``run_coroutine_threadsafe``), so anyio keeps its
    worker threads (tied to the root task) between them: with ``run_until_complete`` per
    operation, each one was its own root task and anyio started a thread for every call
    (a sixth of a CountTableRows' CPU in a worker).
    """
    await asyncio.Event().wait()


async def _connect(impl: str, properties: dict[str, str]) -> AsyncLanceNamespace:
    from .._core.registry import connect

    namespace = connect(impl, properties)  # on the loop its locks and clients will use
    _run_blocking_calls_inline(namespace)
    return namespace


def _run_blocking_calls_inline(namespace: AsyncLanceNamespace) -> None:
    """A worker runs one operation at a time, so its backend's blocking storage calls
    run on the worker's loop thread rather than hop to a thread pool and back (two
    thread switches per call, on a process running at low priority)."""
    from .tables import LanceTables

    tables = getattr(namespace, "tables", None)
    # only backends whose blocking calls never call back into their own loop (iceberg's
    # managed tables do: pylance commits through the backend, on the loop)
    if getattr(namespace, "blocking_calls_may_run_inline", False) and isinstance(
        tables, LanceTables
    ):
        tables.inline = True


def _limit_address_space(memory_bytes: int) -> None:
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _ping() -> None:
    """A task that only makes pebble start its workers."""


def _run_operation(method: str, body: dict[str, Any], payload: bytes | None) -> tuple[Any, ...]:
    """One operation on this worker's backend: ("dict", answer), ("bytes", ipc),
    ("none",) or ("error", code, message, detail). A MemoryError ends the worker."""
    worker = _worker
    if worker is None:
        return ("error", errors.ErrorCode.INTERNAL, "the storage worker is not initialized", None)
    if worker.failure is not None:
        failure = worker.failure
        return ("error", failure.code, str(failure), failure.detail)
    try:
        operation = _operate(worker, method, body, payload)
        result = asyncio.run_coroutine_threadsafe(operation, worker.loop).result()
    except MemoryError:
        os._exit(_MEMORY_EXIT)
    except errors.LanceNamespaceError as exc:
        if isinstance(exc.__cause__, MemoryError) or isinstance(exc.__context__, MemoryError):
            os._exit(_MEMORY_EXIT)
        return ("error", exc.code, str(exc), exc.detail)
    except Exception:
        import traceback

        text = errors.redact(traceback.format_exc())
        return ("error", errors.ErrorCode.INTERNAL, f"unexpected error: {text}", None)
    if isinstance(result, bytes):
        return ("bytes", result)
    if result is None:
        return ("none",)
    return ("dict", result.to_dict())


async def _operate(
    worker: _Worker, method: str, body: dict[str, Any], payload: bytes | None
) -> Any:
    namespace = worker.namespace
    assert namespace is not None
    if method == "query_table":
        return await namespace.query_table_ipc(body)
    call = getattr(namespace, method)
    if payload is None:
        return await call(body)
    from .._core.arrow_data import ArrowData

    return await call(body, ArrowData.of(payload))
