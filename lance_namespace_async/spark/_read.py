"""``read()``: a table as a DataFrame, its partitions run through ``mapInArrow``.

Why a second way in besides ``spark.read.format("lance-namespace")``: Spark 4.3
runs a Python data source's partitions through its DataSource V2 scan, which hands
the rows on one at a time (``PartitionIterator``) and refreshes the source's
metrics every 100 rows; ``mapInArrow`` runs the same Python code and takes its
Arrow batches straight into the plan. Same reader, same partitions, same Arrow
batches: the JVM spends about half as much per row, the read as a whole 30-50%
less CPU (benchmarks/results/spark_vs_lance_spark.md). What it gives up is
the planner's view of the source: Spark cannot prune columns or push filters
into it, so ``columns`` and ``filter`` are asked for here (the data source path
cannot prune columns on Spark 4.3 either).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema

from .. import errors
from ._options import DELIMITER, SourceOptions
from ._source import _opened_snapshot, _project, _reader

__all__ = ["read"]


def read(
    spark: Any,
    table: str,
    *,
    impl: str,
    properties: Mapping[str, str] | None = None,
    delimiter: str = DELIMITER,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    version: int | None = None,
    batch_size: int | None = None,
) -> Any:
    """The table as a DataFrame, read at the version current now (or ``version``).

    ``columns``: read only these, in this order. ``filter``: a Lance SQL filter
    (``"id > 10 AND country = 'fr'"``) evaluated while scanning. Both are checked
    here, on the driver: an unknown column is TableColumnNotFound, a filter Lance
    cannot parse or resolve is InvalidInput. Every task reads the version planned
    here, also when the table changes while the job runs.
    """
    options = SourceOptions.parse(
        {
            **dict(properties or {}),
            "impl": impl,
            "table": table,
            "delimiter": delimiter,
            "version": "" if version is None else str(version),
            "batch_size": "" if batch_size is None else str(batch_size),
        }
    )
    if columns is not None:
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise errors.InvalidInputError("columns must be a sequence of column names")
        options = attrs.evolve(options, columns=tuple(columns))
    if filter is not None and (not isinstance(filter, str) or not filter.strip()):
        raise errors.InvalidInputError("filter must be a non-empty Lance SQL expression")
    snapshot, dataset = _opened_snapshot(options)
    projected = _project(snapshot.table_schema, options.columns, options.table_id)
    schema = from_arrow_schema(projected, prefer_timestamp_ntz=True)
    reader = _reader(options, snapshot, schema)
    if filter is not None:
        _check_filter(dataset, reader.columns, filter)
        reader.filter = filter
    partitions = reader.partitions()

    def read_partitions(indices: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in indices:
            for index in batch.column(0).to_pylist():
                yield from reader.read(partitions[index])

    count = len(partitions)
    return spark.range(0, count, 1, count).mapInArrow(read_partitions, schema)


def _check_filter(dataset: Any, columns: list[str], lance_filter: str) -> None:
    try:
        dataset.scanner(columns=columns, filter=lance_filter).projected_schema  # noqa: B018
    except ValueError as exc:
        raise errors.InvalidInputError(f"filter {lance_filter!r}: {exc}") from None
