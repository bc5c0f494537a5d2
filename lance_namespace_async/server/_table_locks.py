"""One MergeInsertIntoTable at a time per table, across the server's processes.

pylance's merge insert reads the table, decides which keys are new and commits; two of them
racing on the same new keys both decide "new", and Lance's conflict resolution lets both
appends through (4 concurrent upserts of the same keys left every key 4 times, pylance
14.0.2). The REST adapter therefore holds a per-table lock around the dispatch of every
MergeInsertIntoTable: in the adapter's own process, so it holds whether the operation runs
on a thread or in a storage worker process.

``lance-ns serve --workers N`` runs N serving processes; its supervisor names a lock
directory in ``$LANCE_NS_SERVE_LOCK_DIR``, and the lock is then also an exclusive
``flock`` on a file there named by a hash of the table's id, taken after the in-process
lock (so one waiter per process polls it). Writers outside this server are not serialized.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

__all__ = ["LOCK_DIR_ENV", "SERIALIZED_OPERATIONS", "TableLocks"]

#: operations that run one at a time per table (and branch)
SERIALIZED_OPERATIONS = frozenset({"MergeInsertIntoTable"})

#: the directory of the cross-process locks, set by ``lance-ns serve``'s supervisor
LOCK_DIR_ENV = "LANCE_NS_SERVE_LOCK_DIR"

#: longest sleep between two tries of a file lock another process holds
_MAX_POLL_SECONDS = 0.05


class TableLocks:
    """Per-table asyncio locks, created on first use and dropped when nobody holds them;
    plus a file lock per table when ``lock_dir`` (default ``$LANCE_NS_SERVE_LOCK_DIR``)."""

    def __init__(self, lock_dir: str | None = None) -> None:
        self._locks: dict[tuple[Any, ...], tuple[asyncio.Lock, int]] = {}
        self._lock_dir = lock_dir if lock_dir is not None else os.environ.get(LOCK_DIR_ENV)

    @contextlib.asynccontextmanager
    async def hold(self, operation_id: str, body: Mapping[str, Any]) -> AsyncIterator[None]:
        """Hold the lock of the request's table while the body runs, when the operation is
        serialized; otherwise nothing."""
        table = body.get("id")
        if operation_id not in SERIALIZED_OPERATIONS or not isinstance(table, list):
            yield
            return
        key = (*map(str, table), "\0", str(body.get("branch") or ""))
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock, self._file_lock(key):
                yield
        finally:
            _, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    @contextlib.asynccontextmanager
    async def _file_lock(self, key: tuple[Any, ...]) -> AsyncIterator[None]:
        if not self._lock_dir:
            yield
            return
        import fcntl

        name = hashlib.sha256("\x1f".join(key).encode()).hexdigest()
        fd = os.open(
            os.path.join(self._lock_dir, name), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
        )
        try:
            delay = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:  # held by another serving process: poll, no thread
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _MAX_POLL_SECONDS)
            yield
        finally:
            os.close(fd)  # releases the flock
