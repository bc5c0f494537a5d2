"""Where the pipeline operations of every storage backend go: ``lance_namespace_async.pipeline``.

Materialized views, computed columns, their backfill and the jobs that compute them are
one implementation over every backend that keeps Lance tables on storage (dir, iceberg,
unity, glue, hive); the ``rest`` backend forwards them to its server like every other
operation. The pipeline package sits above the backends (it runs Spark and reaches the
catalog through the facade), so this layer reaches it by name, the way the registry
reaches backends, and only for the calls it takes:

* CreateMaterializedView, RefreshMaterializedView, AlterTableBackfillColumns: always;
* DescribeTransaction, AlterTransaction: when the transaction id (the last id element)
  is a job's (:data:`JOB_ID_PREFIX`); other transactions stay the backend's;
* AlterTableAddColumns: when an entry is ``computed`` or a ``virtual_column``.

``pyspark`` (extra ``spark``) is imported only when a job runs.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Awaitable, Callable
from typing import Any, Final

from ..models import Unset
from .config import parse_bool, prop

#: a job's transaction id starts with this (``lna-job-`` then hex digits)
JOB_ID_PREFIX: Final = "lna-job-"

#: the operations the pipeline always takes on a storage backend
ALWAYS: Final = frozenset(
    {"create_materialized_view", "refresh_materialized_view", "alter_table_backfill_columns"}
)
#: the operations it takes for some requests only (:func:`takes`)
SOMETIMES: Final = frozenset(
    {"describe_transaction", "alter_transaction", "alter_table_add_columns"}
)
METHODS: Final = ALWAYS | SOMETIMES


def is_job_id(request: Any) -> bool:
    """Whether a transaction request names a job (its last id element)."""
    ids: list[Any] | None = getattr(request, "id", None)
    if not _given(ids) or not ids:
        return False
    return isinstance(ids[-1], str) and ids[-1].startswith(JOB_ID_PREFIX)


def _given(value: Any) -> bool:
    return value is not None and not isinstance(value, Unset)


def _adds_computed(request: Any) -> bool:
    columns: Any = getattr(request, "new_columns", None)
    for entry in columns if _given(columns) else ():
        if _given(getattr(entry, "computed", None)):
            return True
        if _given(getattr(entry, "virtual_column", None)):
            return True
    return False


def takes(method: str, request: Any) -> bool:
    """Whether the pipeline answers this call of ``method`` (one of :data:`METHODS`)."""
    if method in ALWAYS:
        return True
    if method == "alter_table_add_columns":
        return _adds_computed(request)
    return is_job_id(request)


@functools.cache
def available() -> bool:
    """Whether the pipeline can run here: PySpark (extra ``spark``) is installed (asked
    once per process: ``list_operations()`` asks it for every backend class)."""
    return importlib.util.find_spec("pyspark") is not None


def handler(method: str) -> Callable[[Any, Any], Awaitable[Any]]:
    """The pipeline's coroutine for ``method``: ``handler(ns, request) -> answer``."""
    service = importlib.import_module("lance_namespace_async.pipeline._service")
    answer: Callable[[str, Any, Any], Awaitable[Any]] = service.answer
    return functools.partial(answer, method)


def spark_clusters_prop() -> Any:
    """``spark_cluster.<name>=<master>``: the Spark clusters a job's ``cluster`` names
    (``default`` is ``local[2]`` unless set; ``active`` is the SparkSession of this
    process when it is a Spark driver). Declared by every storage backend."""
    return prop(
        prefix="spark_cluster.",
        doc="spark_cluster.<name>=<master URL>: a Spark cluster jobs may run on "
        "(default: local[2]; 'active': this process's SparkSession)",
    )


def _positive_seconds(value: str) -> float:
    seconds = float(value.strip())
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError("expected a positive number of seconds")
    return seconds


def job_heartbeat_timeout_prop() -> Any:
    """``job_heartbeat_timeout``: seconds after which a queued or running job whose
    driver stopped stamping its record is reported FAILED (30)."""
    return prop(
        default=30.0,
        parse=_positive_seconds,
        doc="seconds without a heartbeat after which a job is reported failed (30)",
    )


def _retention_days(value: str) -> float:
    days = float(value.strip())
    if not days >= 0 or days == float("inf"):
        raise ValueError("expected a number of days >= 0 (0: keep every record)")
    return days


def job_retention_days_prop() -> Any:
    """``job_retention_days``: finished job records (under ``<root>/_lna_jobs``) older
    than this many days are deleted, a few at each new job (30; 0 keeps them all)."""
    return prop(
        default=30.0,
        parse=_retention_days,
        doc="days a finished job's record is kept (30; 0: for ever)",
    )


def pipeline_allow_udfs_prop() -> Any:
    """``pipeline_allow_udfs``: whether clients may run their own Python code on this
    backend's Spark clusters (``virtual_column`` UDFs, ``udtf``/``chunker`` views). Off
    by default: such code runs with the cluster's rights (its storage credentials
    included), so only an operator who trusts every client turns it on."""
    return prop(
        default=False,
        parse=parse_bool,
        doc="true: clients' Python UDFs run on the Spark clusters (false)",
    )
