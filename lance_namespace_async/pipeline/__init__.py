"""The protocol's pipeline operations, run as tracked Spark jobs (extra ``spark``).

Materialized views (CreateMaterializedView, RefreshMaterializedView), computed columns
(AlterTableAddColumns with ``computed``) and their backfill (AlterTableBackfillColumns)
describe distributed work; DescribeTransaction and AlterTransaction report and cancel it.

Pieces:

* ``_control``: :class:`JobControl`, what a job's body is handed (its Spark session, the
  backend's connection, progress, cancellation, checkpoints) and :class:`JobCancelled`;
* the job kinds' bodies (views, backfill), each a plain function
  ``run(control, request) -> int`` that returns the version it committed;
* the job store and runner (records beside the catalog, drivers, status).

Layer (ARCHITECTURE.md): the top, beside ``spark``. May import the facade, ``spark``,
storage's places and the core; backends only by name through ``connect()``. Backends
reach this package by name too (never by import), so ``pyspark`` is loaded only when a
job runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._control import JobCancelled, JobControl, JobStatus

if TYPE_CHECKING:
    from ._jobs import JOB_KINDS, prune_jobs, start_job, wait_for_job, wait_for_job_sync

__all__ = [
    "JOB_KINDS",
    "JobCancelled",
    "JobControl",
    "JobStatus",
    "prune_jobs",
    "start_job",
    "wait_for_job",
    "wait_for_job_sync",
]


def __getattr__(name: str) -> Any:
    """The runner's names, imported on first use (``_jobs`` loads the models)."""
    if name in ("JOB_KINDS", "prune_jobs", "start_job", "wait_for_job", "wait_for_job_sync"):
        from . import _jobs

        return getattr(_jobs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
