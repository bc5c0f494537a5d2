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

from ._control import JobCancelled, JobControl, JobStatus

__all__ = ["JobCancelled", "JobControl", "JobStatus"]
