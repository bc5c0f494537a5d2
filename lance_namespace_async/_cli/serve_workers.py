"""``lance-ns serve``'s storage-worker options (``server._storage_workers``): their flags, and
the pool they describe, built from the backend's impl name and properties."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .. import errors
from .common import _positive_int, _seconds

if TYPE_CHECKING:
    from ..server._storage_workers import StorageWorkers
    from .profiles import Connection


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be an integer") from None
    if number < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return number


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """The "storage workers" option group of ``serve``."""
    from .._core.operations import OPERATIONS_BY_METHOD
    from ..server._storage_workers import (
        MIN_WORKER_MEMORY_MIB,
        STORAGE_METHODS,
        default_worker_count,
    )

    names = ", ".join(sorted(OPERATIONS_BY_METHOD[name].operation_id for name in STORAGE_METHODS))
    group = serve.add_argument_group(
        "storage workers",
        "Operations that read or write table data run in worker processes, so a crash, "
        "an out-of-memory or a runaway query fails that request alone (500 code 18, or "
        "503 code 17 past its deadline) and the worker is replaced; a client that "
        "disconnects has its work killed. Catalog operations stay in the server. "
        f"Operations in workers: {names}.",
    )
    group.add_argument(
        "--storage-workers",
        type=_count,
        metavar="N",
        help=f"worker processes (default: min(4, CPUs) = {default_worker_count()}); "
        "0 runs storage work in the server process, without isolation",
    )
    group.add_argument(
        "--worker-memory",
        type=_positive_int,
        metavar="MIB",
        help="address-space limit of each worker in MiB (default: the machine's memory "
        "divided by workers + 1, between 4096 and 16384; at least "
        f"{MIN_WORKER_MEMORY_MIB}, as pylance reserves about 2 GiB up front)",
    )
    group.add_argument(
        "--request-timeout",
        type=_seconds,
        metavar="S",
        help="seconds a storage request may take, waiting for a worker included, "
        "else 503 (default: 300)",
    )
    group.add_argument(
        "--max-queued-requests",
        type=_count,
        metavar="N",
        help="storage requests waiting for a free worker; one more is answered 503 (default: 64)",
    )
    group.add_argument(
        "--shutdown-grace",
        type=_seconds,
        metavar="S",
        help="on SIGTERM, seconds the requests in flight get to finish before their "
        "workers are killed and the server exits (default: 5)",
    )


def storage_workers(
    parser: argparse.ArgumentParser, args: argparse.Namespace, connection: Connection
) -> StorageWorkers | None:
    """The pool the options describe (not started), or None with ``--storage-workers 0``."""
    from ..server._storage_workers import StorageWorkerLimits, StorageWorkers

    given = {
        "workers": args.storage_workers,
        "memory_mib": args.worker_memory,
        "request_timeout": args.request_timeout,
        "max_queued": args.max_queued_requests,
        "shutdown_grace": args.shutdown_grace,
    }
    try:
        limits = StorageWorkerLimits(**{k: v for k, v in given.items() if v is not None})
    except errors.InvalidInputError as exc:
        parser.error(str(exc))
    if limits.workers == 0:
        return None
    return StorageWorkers(connection.impl, connection.properties, limits)
