"""The crawler at cluster scale: one row per table, tables opened by executors.

The driver lists the tree with the async crawler (listings are cheap and
concurrent); opening a table (its manifest, fragment list and data file sizes)
is the expensive part, so that is spread over the executors. A table that
cannot be opened gets a row with its ``error`` set rather than failing the
inventory of thousands.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from .. import errors
from .._core.arrow_json import json_arrow_schema
from .._core.identifiers import join_identifier, parse_identifier
from .._facade.crawl import crawl
from ._table import BlockingBackend, cached_namespace, storage_options_of

__all__ = ["INVENTORY_SCHEMA", "inventory"]

INVENTORY_SCHEMA = (
    "identifier string, id array<string>, location string, version long, rows long, "
    "fragments long, size_bytes long, schema string, error string"
)
_ARROW_SCHEMA = pa.schema(
    [
        ("identifier", pa.string()),
        ("id", pa.list_(pa.string())),
        ("location", pa.string()),
        ("version", pa.int64()),
        ("rows", pa.int64()),
        ("fragments", pa.int64()),
        ("size_bytes", pa.int64()),
        ("schema", pa.string()),
        ("error", pa.string()),
    ]
)


async def _list_tables(
    namespace: Any, root: Sequence[str], concurrency: int
) -> list[tuple[str, ...]]:
    return [tuple(found.id) async for found in crawl(namespace, root, concurrency=concurrency)]


def _size_bytes(dataset: Any) -> int:
    total = 0
    for fragment in dataset.get_fragments():
        for data_file in fragment.metadata.to_json().get("files", []):
            size = data_file.get("file_size_bytes")
            if size is None:  # written by a Lance that did not record sizes
                return sum(f.bytes_on_disk for f in dataset.stats.data_stats().fields)
            total += int(size)
    return total


def _open_one(namespace: BlockingBackend, table_id: list[str], delimiter: str) -> dict[str, Any]:
    import lance

    row: dict[str, Any] = {"identifier": join_identifier(table_id, delimiter), "id": table_id}
    try:
        response = namespace.describe_table({"id": table_id})
        row["location"] = str(response.location or "") or None
        options = storage_options_of(response)
        version = response.version if isinstance(response.version, int) else None
        try:
            dataset = lance.dataset(
                row["location"], version=version, storage_options=options or None
            )
        except ValueError as exc:
            if version is None and "not found" in str(exc).lower():
                return row  # declared, no data yet: nothing to count
            raise
        row["version"] = int(dataset.version)
        row["rows"] = int(dataset.count_rows())
        fragments = dataset.get_fragments()
        row["fragments"] = len(fragments)
        row["size_bytes"] = _size_bytes(dataset)
        row["schema"] = json.dumps(json_arrow_schema(dataset.schema), sort_keys=True)
    except Exception as exc:  # one bad table must not sink the inventory
        message = exc.message if isinstance(exc, errors.LanceNamespaceError) else str(exc)
        row["error"] = errors.redact(f"{type(exc).__name__}: {message}")[:2000]
    return row


def _opener(impl: str, properties: Mapping[str, str], delimiter: str) -> Any:
    properties = dict(properties)

    def open_tables(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        namespace = cached_namespace(impl, properties)
        for batch in batches:
            rows = [
                _open_one(namespace, list(table_id), delimiter)
                for table_id in batch.column("id").to_pylist()
            ]
            yield pa.RecordBatch.from_pylist(rows, schema=_ARROW_SCHEMA)

    return open_tables


def inventory(
    spark: Any,
    impl: str,
    properties: Mapping[str, str] | None = None,
    root: str | Sequence[str] = (),
    *,
    delimiter: str = ".",
    concurrency: int = 64,
    partitions: int | None = None,
) -> Any:
    """A DataFrame with one row per table below ``root``.

    Columns: identifier, id, location, version, rows, fragments, size_bytes,
    schema (the table's Arrow schema as the protocol's JSON), error (why the
    table could not be opened; null when it could). ``partitions`` (default:
    4 x Spark's default parallelism) is how many tasks open the tables.
    """
    from .._facade.sync import SyncLanceNamespace

    properties = dict(properties or {})
    root_id = parse_identifier(root, delimiter) if isinstance(root, str) else tuple(root)
    with SyncLanceNamespace(impl, properties) as facade:
        table_ids = facade.run(_list_tables, facade.async_namespace, root_id, concurrency)
    listing = pa.table(
        {
            "identifier": [join_identifier(t, delimiter) for t in table_ids],
            "id": [list(t) for t in table_ids],
        }
    )
    slices = partitions or max(1, 4 * int(spark.sparkContext.defaultParallelism))
    frame = spark.createDataFrame(listing)
    if table_ids:
        frame = frame.repartition(min(slices, len(table_ids)))
    return frame.mapInArrow(_opener(impl, properties, delimiter), INVENTORY_SCHEMA)
