"""Lance tables of any namespace in PySpark (extra ``spark``; PySpark 4.1+).

    from lance_namespace_async import spark as lna_spark

    lna_spark.register(spark)
    df = (spark.read.format("lance-namespace")
          .option("impl", "rest").option("uri", "http://catalog:2333")
          .load("ns1.ns2.table"))
    df.write.format("lance-namespace").mode("append").options(impl="dir", root="/data") \\
        .save("ns1.table")
    lna_spark.save(df, "ns1.table", mode="errorifexists", impl="dir", properties={"root": "/data"})
    df = lna_spark.read(spark, "ns1.table", impl="dir", properties={"root": "/data"},
                        columns=["id", "name"], filter="id > 10")
    lna_spark.inventory(spark, "rest", {"uri": "http://catalog:2333"}, root="ns1").show()

The data source is Spark's Python Data Source API, no JVM jars. It is also
registered automatically through the ``pyspark_lance_namespace`` module, which
Spark finds on the Python path. Spark's Python data sources accept only the
``append`` and ``overwrite`` save modes; :func:`save` (or the ``save_mode``
option) adds ``errorifexists`` and ``ignore``. Column pruning: Spark's Python
Data Source API has no pruning hook (as of Spark 4.3), so ask for columns with
``.schema(...)`` / the ``columns`` option, or they are read and dropped by Spark.
:func:`read` reads the same partitions through ``mapInArrow`` instead of the
data source scan, for 30-50% less CPU per row (see its module).

Layer (ARCHITECTURE.md): the top, beside ``_cli`` and ``testing``. May import the
facade, storage's places, the core; backends only by name through ``connect()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import MissingDependencyError

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "the Spark data source needs pyspark: pip install 'lance-namespace-async[spark]'"
    ) from exc

from .. import errors
from ._inventory import INVENTORY_SCHEMA, inventory
from ._options import SAVE_MODES
from ._read import read
from ._source import FilteringLanceNamespaceDataSource, LanceNamespaceDataSource
from ._table import TableHandle

__all__ = [
    "ARROW_BATCH_BYTES_CONF",
    "FILTER_PUSHDOWN_CONF",
    "INVENTORY_SCHEMA",
    "FilteringLanceNamespaceDataSource",
    "LanceNamespaceDataSource",
    "TableHandle",
    "inventory",
    "read",
    "register",
    "save",
]

#: Spark offers filters to Python data sources only with this set
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
#: the byte limit of the Arrow batches Spark sends Python; Int.MaxValue means none
ARROW_BATCH_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
#: Spark's "no byte limit" value: its writer then skips the size check it otherwise makes
_NO_BYTE_LIMIT = str(2**31 - 1)


def register(spark: Any, *, push_filters: bool = False, arrow_byte_limit: bool = False) -> None:
    """Register ``lance-namespace`` with a session.

    Unless ``arrow_byte_limit=True``, or the session sets it already, this also sets
    ``spark.sql.execution.arrow.maxBytesPerBatch`` to Spark's "no limit"
    (2147483647): with a limit (64 MiB by default since Spark 4.1) Spark measures
    the Arrow batch it is filling after every row it converts for a Python data
    source's writer, a walk over every column vector that took 45% of a write's
    task CPU (Java Flight Recorder, benchmarks/results/spark_vs_lance_spark.md).
    Batches are still cut at ``spark.sql.execution.arrow.maxRecordsPerBatch``
    rows (10,000); the setting is the session's, so it also applies to its Arrow
    UDFs (``mapInArrow``, pandas UDFs), which Spark then batches by rows only,
    as it did before 4.1.

    ``push_filters=True`` also sets ``spark.sql.python.filterPushdown.enabled``,
    so Lance evaluates the filters it can (see ``_filters``) while scanning.
    It is off by default because Spark 4.1-4.3 keep the pushed-down reader on
    the relation, not on the scan: a DataFrame queried once with a filter and
    again without (``df.filter(...).count(); df.count()``) reads the filtered
    rows the second time (fixed upstream in PythonScanBuilder after 4.3). Turn
    it on where each DataFrame is read once, or on a Spark with that fix.
    """
    if not arrow_byte_limit and spark.conf.get(ARROW_BATCH_BYTES_CONF, None) is None:
        spark.conf.set(ARROW_BATCH_BYTES_CONF, _NO_BYTE_LIMIT)
    if push_filters:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
        spark.dataSource.register(FilteringLanceNamespaceDataSource)
    else:
        spark.dataSource.register(LanceNamespaceDataSource)


def save(
    frame: Any,
    table: str,
    *,
    mode: str = "errorifexists",
    impl: str,
    properties: Mapping[str, str] | None = None,
    delimiter: str = ".",
) -> None:
    """``frame.write`` into a table with any of Spark's four save modes.

    ``errorifexists`` raises :class:`~lance_namespace_async.errors.TableAlreadyExistsError`
    here, in the driver, when the table exists; ``ignore`` writes nothing then.
    The check is repeated atomically when the job declares the table.
    """
    from .._core.identifiers import parse_identifier
    from .._facade.sync import SyncLanceNamespace

    wanted = mode.lower().replace("_", "")
    wanted = "errorifexists" if wanted == "error" else wanted
    if wanted not in SAVE_MODES:
        raise errors.InvalidInputError(f"mode must be one of {sorted(SAVE_MODES)}, got {mode!r}")
    table_id = parse_identifier(table, delimiter)
    if wanted in ("errorifexists", "ignore"):
        with SyncLanceNamespace(impl, properties) as namespace:
            try:
                namespace.table_exists({"id": list(table_id)})
            except errors.TableNotFoundError:
                pass
            else:
                if wanted == "ignore":
                    return
                raise errors.TableAlreadyExistsError(f"table {list(table_id)!r} already exists")
    writer = frame.write.format(LanceNamespaceDataSource.name()).options(
        **dict(properties or {}), impl=impl, delimiter=delimiter, save_mode=wanted
    )
    writer.mode("overwrite" if wanted == "overwrite" else "append").save(table)
