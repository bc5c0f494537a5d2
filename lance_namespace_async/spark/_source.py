"""``lance-namespace``: a PySpark data source for Lance tables of any namespace.

The driver resolves the table through the sync facade (DescribeTable, and
DeclareTable for a new table) and pins the version every executor reads or
writes from. Reads split the version's fragments across tasks and return Arrow
batches. Writes are two-phase: each task writes Lance fragments (data files
nobody references yet), and the driver commits all of them in one Lance commit
(Append or Overwrite) — or, when the job fails, deletes them and any table the
job declared, so a failed job leaves the table as it was.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from .. import errors
from .._storage.containment import refuse_outside
from ._filters import to_lance_filter
from ._job_files import JobFiles, delete_data_files
from ._options import SourceOptions
from ._table import TableHandle, cached_namespace, storage_options_of
from ._threads import size_lance_pools

__all__ = ["LanceNamespaceDataSource"]

#: rows a read task gets at most when fragments are small (several fragments per task)
ROWS_PER_SPLIT = 1_048_576
_MANAGED_BY = "managed_by"


def _is_catalog_managed(properties: Any) -> bool:
    values = properties.to_dict() if properties else {}
    return str(values.get(_MANAGED_BY, "")).lower() == "impl"


def _resolve(options: SourceOptions, *, latest: bool = False) -> tuple[TableHandle, Any]:
    """The table's handle and its dataset at the wanted version (None: declared only).

    ``latest``: ignore the ``version`` option (writes start from the current version).
    """
    import lance

    namespace = cached_namespace(options.impl, options.properties)
    pinned = None if latest else options.version
    request: dict[str, Any] = {"id": list(options.table_id)}
    if pinned is not None:
        request["version"] = pinned
    response = namespace.describe_table(request)
    location = str(response.location or "")
    if not location:
        raise errors.InvalidTableStateError(f"table {list(options.table_id)!r} has no location")
    refuse_outside(namespace.async_namespace, location, f"table {list(options.table_id)!r}")
    described = response.version if isinstance(response.version, int) else None
    wanted = pinned if pinned is not None else described
    storage_options = storage_options_of(response)
    try:
        dataset = lance.dataset(location, version=wanted, storage_options=storage_options or None)
    except ValueError as exc:
        if wanted is not None:
            raise errors.TableVersionNotFoundError(
                f"version {wanted} of table {list(options.table_id)!r} not found"
            ) from exc
        if "not found" not in str(exc).lower():
            raise
        dataset = None
    handle = TableHandle(
        impl=options.impl,
        properties=dict(options.properties),
        table_id=tuple(options.table_id),
        location=location,
        version=None if dataset is None else int(dataset.version),
        catalog_managed=_is_catalog_managed(response.properties),
    )
    return handle, dataset


def _project(schema: pa.Schema, columns: Sequence[str] | None, table: Sequence[str]) -> pa.Schema:
    if columns is None:
        return schema
    missing = [name for name in columns if schema.get_field_index(name) < 0]
    if missing:
        raise errors.TableColumnNotFoundError(
            f"table {list(table)!r} has no column(s) {missing}; it has {schema.names}"
        )
    return pa.schema([schema.field(name) for name in columns])


@dataclass(frozen=True)
class _Snapshot:
    """What reads need of the pinned version: where it is, its schema, its fragments."""

    handle: TableHandle
    table_schema: pa.Schema
    #: (fragment id, physical rows) of every fragment of the version
    fragments: list[tuple[int, int]]


def fragment_splits(fragments: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Fragment ids grouped in order into splits of about :data:`ROWS_PER_SPLIT` rows
    (``fragments``: ``(id, physical rows)``); one empty split for a table without any,
    so a job still has one task."""
    splits: list[list[int]] = []
    rows = 0
    for fragment_id, fragment_rows in fragments:
        if not splits or rows + fragment_rows > ROWS_PER_SPLIT:
            splits.append([])
            rows = 0
        splits[-1].append(fragment_id)
        rows += fragment_rows
    return splits or [[]]


def _opened_snapshot(options: SourceOptions) -> tuple[_Snapshot, Any]:
    """The snapshot reads need, and the dataset it was taken from (the pinned version)."""
    handle, dataset = _resolve(options)
    if dataset is None:
        raise errors.InvalidTableStateError(
            f"table {list(options.table_id)!r} is declared but has no data to read yet"
        )
    fragments = [
        (int(f.fragment_id), int(f.metadata.physical_rows or 0)) for f in dataset.get_fragments()
    ]
    return _Snapshot(handle, dataset.schema, fragments), dataset


def _snapshot(options: SourceOptions) -> _Snapshot:
    return _opened_snapshot(options)[0]


def _reader(
    options: SourceOptions,
    snapshot: _Snapshot,
    schema: StructType,
    reader_class: type[LanceNamespaceReader] | None = None,
) -> LanceNamespaceReader:
    """A reader of ``schema``'s columns (checked against the table) of the snapshot."""
    columns = schema.fieldNames()
    _project(snapshot.table_schema, columns, options.table_id)
    return (reader_class or LanceNamespaceReader)(
        handle=snapshot.handle,
        columns=columns,
        output=to_arrow_schema(schema, timezone="UTC"),
        table_schema=snapshot.table_schema,
        batch_size=options.batch_size,
        fragments=snapshot.fragments,
    )


class LanceNamespaceDataSource(DataSource):
    """``spark.read/write.format("lance-namespace")``; options are the backend's properties.

    Reserved options: ``impl`` (required), ``delimiter`` (of the identifier,
    default ``.``), ``version`` (time travel), ``columns`` (comma-separated, read
    only these), ``batch_size``, ``save_mode`` (``errorifexists``/``ignore`` under
    ``mode("append")``), ``max_rows_per_file``. Spark lower-cases option keys.
    """

    #: whether readers take Spark's filters (needs the session's filter-pushdown conf)
    push_filters: bool = False

    @classmethod
    def name(cls) -> str:
        return "lance-namespace"

    def _options(self) -> SourceOptions:
        return SourceOptions.parse(self.options)

    def schema(self) -> StructType:
        options = self._options()
        snapshot = _snapshot(options)
        # Kept for reader(): Spark pickles this instance between the two calls, so every
        # task reads the version the schema came from, and the planning worker that calls
        # reader() neither opens the dataset again nor imports lance.
        self._resolved = snapshot
        projected = _project(snapshot.table_schema, options.columns, options.table_id)
        return from_arrow_schema(projected, prefer_timestamp_ntz=True)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self._options()
        snapshot: _Snapshot | None = getattr(self, "_resolved", None)
        if snapshot is None:  # a schema given by the user: schema() was not called
            snapshot = _snapshot(options)
        pushing = self.push_filters if options.push_filters is None else options.push_filters
        reader_class = FilteringLanceNamespaceReader if pushing else LanceNamespaceReader
        return _reader(options, snapshot, schema, reader_class)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return _plan_write(self._options(), schema, overwrite)


# -- reads ---------------------------------------------------------------------------------


class LanceNamespaceReader(DataSourceReader):
    """Reads one pinned version; each partition is a run of whole fragments."""

    def __init__(
        self,
        *,
        handle: TableHandle,
        columns: list[str],
        output: pa.Schema,
        table_schema: pa.Schema,
        batch_size: int,
        fragments: list[tuple[int, int]],
    ) -> None:
        self.handle = handle
        self.columns = columns
        self.output = output
        self.table_schema = table_schema
        self.batch_size = batch_size
        self.fragments = fragments
        self.filter: str | None = None

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(split) for split in fragment_splits(self.fragments)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        fragment_ids: list[int] = partition.value
        if not fragment_ids:
            return
        size_lance_pools()
        dataset = self.handle.open()
        scanner = dataset.scanner(
            columns=self.columns,
            filter=self.filter,
            fragments=[dataset.get_fragment(i) for i in fragment_ids],
            batch_size=self.batch_size,
        )
        for batch in scanner.to_batches():
            if batch.num_rows:
                yield batch if batch.schema.equals(self.output) else batch.cast(self.output)


class FilteringLanceNamespaceReader(LanceNamespaceReader):
    """A reader that also lets Lance evaluate the filters it can while scanning.

    A separate class because Spark refuses a reader with ``pushFilters`` when
    the session's filter-pushdown conf is off.
    """

    def pushFilters(self, filters: list[Any]) -> Any:
        self.filter, rejected = to_lance_filter(self.table_schema, filters)
        return rejected


class FilteringLanceNamespaceDataSource(LanceNamespaceDataSource):
    """``lance-namespace`` with filter pushdown on (``register(push_filters=True)``)."""

    push_filters = True


# -- writes --------------------------------------------------------------------------------


@dataclass
class WrittenFragments(WriterCommitMessage):
    """What one task wrote: Lance fragment metadata, as JSON."""

    fragments: list[str] = field(default_factory=list)


def _plan_write(options: SourceOptions, spark_schema: StructType, overwrite: bool) -> _Writer:
    """Driver side: find or declare the table and fix what the tasks write."""
    namespace = cached_namespace(options.impl, options.properties)
    table = list(options.table_id)
    mode = options.save_mode or ("overwrite" if overwrite else "append")
    created = False
    try:
        handle, dataset = _resolve(options, latest=True)
    except errors.TableNotFoundError:
        namespace.declare_table({"id": table})
        created = True
        handle, dataset = _resolve(options, latest=True)
    else:
        if mode == "errorifexists":
            raise errors.TableAlreadyExistsError(f"table {table!r} already exists")
        if mode == "ignore":
            return _Writer(handle, None, overwrite=False, skip=True)
    incoming = to_arrow_schema(spark_schema, timezone="UTC")
    if dataset is not None and not overwrite:
        target: pa.Schema = dataset.schema
        missing = sorted(set(target.names) - set(incoming.names))
        extra = sorted(set(incoming.names) - set(target.names))
        if missing or extra:
            raise errors.TableSchemaValidationError(
                f"cannot append to {table!r}: columns missing from the data {missing}, "
                f"columns the table does not have {extra}"
            )
        storage_version: str | None = str(dataset.data_storage_version)
    else:
        target = incoming
        storage_version = str(dataset.data_storage_version) if dataset is not None else None
    job = JobFiles(handle.location)
    return _Writer(
        handle,
        target,
        overwrite=overwrite,
        created=created,
        storage_version=storage_version,
        max_rows_per_file=options.max_rows_per_file,
        job=job if job.start() else None,
    )


class _Writer(DataSourceArrowWriter):
    def __init__(
        self,
        handle: TableHandle,
        target: pa.Schema | None,
        *,
        overwrite: bool,
        skip: bool = False,
        created: bool = False,
        storage_version: str | None = None,
        max_rows_per_file: int = 1_048_576,
        job: JobFiles | None = None,
    ) -> None:
        self.handle = handle
        self.job = job
        self.target = target
        self.overwrite = overwrite
        self.skip = skip
        self.created = created
        self.storage_version = storage_version
        self.max_rows_per_file = max_rows_per_file

    def __repr__(self) -> str:
        return f"LanceNamespaceWriter({self.handle!r}, overwrite={self.overwrite})"

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        assert self.target is not None
        if batch.schema.names != self.target.names:
            batch = batch.select(self.target.names)
        if not batch.schema.equals(self.target):
            batch = batch.cast(self.target)
        return _aligned(batch)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFragments:
        """Task side: write this task's rows as new fragments (not yet in any version)."""
        if self.skip or self.target is None:
            return WrittenFragments()
        size_lance_pools()
        import lance.fragment

        reader = pa.RecordBatchReader.from_batches(
            self.target, (self._conform(batch) for batch in iterator)
        )
        fragments = lance.fragment.write_fragments(
            reader,
            self.handle.location,
            schema=self.target,
            max_rows_per_file=self.max_rows_per_file,
            data_storage_version=self.storage_version,
            storage_options=self.handle.storage_options() or None,
        )
        written = [f.to_json() for f in fragments]
        if self.job is not None:  # before the message: an abort finds them even without it
            self.job.record([data_file["path"] for f in written for data_file in f["files"]])
        return WrittenFragments([json.dumps(f) for f in written])

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Driver side: one atomic Lance commit of every task's fragments."""
        if self.skip or self.target is None:
            return
        import lance
        from lance.fragment import FragmentMetadata

        fragments = [
            FragmentMetadata.from_json(text)
            for message in messages
            if isinstance(message, WrittenFragments)
            for text in message.fragments
        ]
        handle = self.handle
        options = handle.storage_options() or None
        base = handle.version
        if handle.catalog_managed and base is not None:
            latest = int(lance.dataset(handle.location, storage_options=options).version)
            if latest != base:
                raise errors.ConcurrentModificationError(
                    f"table {list(handle.table_id)!r}: storage is at version {latest}, the "
                    f"catalog at {base}; refusing to commit on top of an uncatalogued version"
                )
        if base is None or self.overwrite:
            operation: Any = lance.LanceOperation.Overwrite(self.target, fragments)
        else:
            operation = lance.LanceOperation.Append(fragments)
        dataset = lance.LanceDataset.commit(
            handle.location, operation, read_version=base, storage_options=options
        )
        if handle.catalog_managed:
            namespace = handle.namespace()
            namespace.run(
                namespace.async_namespace.commit_table_version,  # type: ignore[attr-defined]
                list(handle.table_id),
                expected_version=base,
                version=int(dataset.version),
            )
        if self.job is not None:
            self.job.finish(aborted=False, known=_written_files(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Driver side, after a failed job: delete what the tasks wrote.

        Spark also calls it when ``commit`` raised. If the Lance commit had landed (the
        catalog's CommitTableVersion failed after it), its files are referenced by a
        version and stay: only what that commit did not take is deleted.
        """
        if self.skip:
            return
        paths = _written_files(messages)
        created_by_this_job = self.created and self.handle.version is None
        if not created_by_this_job and self._committed(paths):
            if self.job is not None:
                self.job.finish(aborted=False, known=paths)
            return
        if self.job is not None:  # and the files of tasks whose message Spark dropped
            self.job.finish(aborted=True, known=paths)
        else:
            delete_data_files(self.handle.location, paths)
        if created_by_this_job:
            namespace = self.handle.namespace()
            with contextlib.suppress(errors.NotFoundError):
                namespace.drop_table({"id": list(self.handle.table_id)})

    def _committed(self, paths: list[str]) -> bool:
        """Whether a version after the planned one references any of ``paths``."""
        if not paths:
            return False
        import lance

        handle = self.handle
        try:
            options = handle.storage_options() or None
        except errors.LanceNamespaceError:  # the catalog cannot say: the process's own
            options = None
        try:
            dataset = lance.dataset(handle.location, storage_options=options)
        except (ValueError, OSError):  # no table there: nothing was committed
            return False
        if handle.version is not None and int(dataset.version) == handle.version:
            return False
        wanted = set(paths)
        return any(
            data_file.path in wanted
            for fragment in dataset.get_fragments()
            for data_file in fragment.data_files()
        )


def _written_files(messages: list[WriterCommitMessage | None]) -> list[str]:
    """The data files (relative to ``data``) the tasks' messages name."""
    return [
        data_file["path"]
        for message in messages
        if isinstance(message, WrittenFragments)
        for text in message.fragments
        for data_file in json.loads(text).get("files", [])
    ]


def _alignment(data_type: pa.DataType) -> int:
    """The byte alignment Lance's Rust readers demand of a column's buffers.

    Arrow-rs checks a buffer against its native type's alignment: 8 bytes covers
    every primitive, offset and validity buffer, 16 the 128/256-bit decimals.
    """
    if pa.types.is_decimal(data_type):
        return 16
    if pa.types.is_nested(data_type) or pa.types.is_dictionary(data_type):
        children = (
            [data_type.index_type, data_type.value_type]
            if pa.types.is_dictionary(data_type)
            else [data_type.field(i).type for i in range(data_type.num_fields)]
        )
        return max([8, *(_alignment(child) for child in children)])
    return 8


def _misaligned(column: pa.Array) -> bool:
    alignment = _alignment(column.type)
    return any(b is not None and b.address % alignment for b in column.buffers())


def _aligned(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with every buffer aligned for Lance, copying only the columns that are not.

    Spark hands Python Arrow batches read from an IPC stream; the stream pads
    buffers to 8 bytes, so they normally arrive aligned and nothing is copied,
    but a buffer can sit at any address, and Lance's Rust reader panics on a
    misaligned one.
    """
    columns = batch.columns
    if not any(_misaligned(column) for column in columns):
        return batch
    return pa.RecordBatch.from_arrays(
        [pa.concat_arrays([column]) if _misaligned(column) else column for column in columns],
        schema=batch.schema,
    )
