"""What a job's body is handed, and how it says where it is.

A body is a plain function ``run(control, request) -> int``: it does the work with
``control.spark``, reaches the catalog through ``control.namespace()`` (a sync facade
over a connection of its own, made from ``control.impl`` and ``control.properties`` —
the same pair Spark tasks pass to our data source), reports ``control.progress(done,
total)``, calls ``control.raise_if_cancelled()`` between units of work (never while a
commit is under way), and records resumable state with ``control.checkpoint(...)``.
It returns the table version its last commit made.

The runner builds the control; the store behind the callbacks keeps everything beside
the catalog, so another process can describe, cancel or resume the job.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .. import errors

if TYPE_CHECKING:
    from .._facade.sync import SyncLanceNamespace


class JobStatus(enum.StrEnum):
    """A job's status as DescribeTransaction reports it (pylance answers a committed
    transaction as ``SUCCEEDED``; the others follow its spelling)."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class JobCancelled(errors.LanceNamespaceError):
    """Raised by :meth:`JobControl.raise_if_cancelled` once the job was asked to stop.

    A body lets it propagate: the runner records the job as cancelled. Work committed
    before (checkpoints) stays; nothing after the last commit is visible."""

    code = 0


def _no_progress(done: int, total: int) -> None:
    del done, total


def _never_cancelled() -> bool:
    return False


@attrs.define(kw_only=True)
class JobControl:
    """A running job's handle, given to its body (see the module docstring)."""

    job_id: str
    #: the Spark session the job runs on (``pyspark.sql.SparkSession``)
    spark: Any
    #: the backend's impl name and properties: what a Spark task connects with
    impl: str
    properties: Mapping[str, str] = attrs.field(repr=False)
    #: checkpoints saved by an earlier run of this job (a resumed job starts from them)
    checkpoints: dict[str, str] = attrs.field(factory=dict)
    on_progress: Callable[[int, int], None] = _no_progress
    is_cancelled: Callable[[], bool] = _never_cancelled
    on_checkpoint: Callable[[Mapping[str, str]], None] | None = None
    _namespace: SyncLanceNamespace | None = attrs.field(default=None, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def progress(self, done: int, total: int) -> None:
        """Units of work (fragments, partitions) done of ``total``."""
        self.on_progress(done, total)

    def raise_if_cancelled(self) -> None:
        """Stop here if the job was asked to (raises :class:`JobCancelled`)."""
        if self.is_cancelled():
            raise JobCancelled(f"job {self.job_id} was cancelled")

    def checkpoint(self, state: Mapping[str, str]) -> None:
        """Record resumable state (merged into :attr:`checkpoints`) after a commit."""
        self.checkpoints.update(state)
        if self.on_checkpoint is not None:
            self.on_checkpoint(dict(self.checkpoints))

    def namespace(self) -> SyncLanceNamespace:
        """A sync facade over the job's own connection to the backend (closed by
        :meth:`close`)."""
        with self._lock:
            if self._namespace is None:
                from .._facade.sync import connect_sync

                self._namespace = connect_sync(self.impl, dict(self.properties))
            return self._namespace

    def close(self) -> None:
        with self._lock:
            namespace, self._namespace = self._namespace, None
        if namespace is not None:
            namespace.close()
