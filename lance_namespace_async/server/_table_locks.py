"""One MergeInsertIntoTable at a time per table, within one server process.

pylance's merge insert reads the table, decides which keys are new and commits; two of them
racing on the same new keys both decide "new", and Lance's conflict resolution lets both
appends through (4 concurrent upserts of the same keys left every key 4 times, pylance
14.0.2). The REST adapter therefore holds a per-table lock around the dispatch of every
MergeInsertIntoTable: in the adapter's own process, so it holds whether the operation runs
on a thread or in a worker process. Writers outside this server are not serialized.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

__all__ = ["SERIALIZED_OPERATIONS", "TableLocks"]

#: operations that run one at a time per table (and branch)
SERIALIZED_OPERATIONS = frozenset({"MergeInsertIntoTable"})


class TableLocks:
    """Per-table asyncio locks, created on first use and dropped when nobody holds them."""

    def __init__(self) -> None:
        self._locks: dict[tuple[Any, ...], tuple[asyncio.Lock, int]] = {}

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
            async with lock:
                yield
        finally:
            _, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
