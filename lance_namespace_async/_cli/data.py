"""The data commands of ``lance-ns``: rows in (create-table, insert), rows out (query,
count), and a table's versions, tags, indices and columns.

Files are read as a ``RecordBatchReader`` (Parquet row groups, CSV and JSON Lines blocks,
Arrow IPC batches) and handed to ``create_table``/``insert_into_table`` as such, so a
file larger than memory streams through. A file that is missing or not of its format
is InvalidInput (exit 2) before the catalog is asked anything; a row that turns out
bad in the middle of the file is InvalidInput too, and the write is not committed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import errors
from .._core.paging import PageTrail, token_of
from .._storage.indexes import VECTOR_INDEX_ARGUMENTS
from .common import _action, _id, _lower, _positive_int
from .output import _cell, _console, _Output, _response_dict

if TYPE_CHECKING:
    import pyarrow as pa
    from rich.progress import Progress, TaskID

    from .._core.base import AsyncLanceNamespace

CommandFactory = Callable[..., argparse.ArgumentParser]
Handler = Callable[["AsyncLanceNamespace", argparse.Namespace, _Output], Any]

#: file formats by extension (``--format`` overrides)
FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".arrow": "arrow",
    ".arrows": "arrow",
    ".ipc": "arrow",
    ".feather": "arrow",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}

#: index types built by CreateTableScalarIndex; every other type is a vector index
SCALAR_INDEX_TYPES = frozenset(
    {"BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "FTS", "NGRAM", "ZONEMAP", "SCALAR"}
)


def add_commands(command: CommandFactory) -> None:
    """Register the data commands with the parser's ``command`` factory."""
    create = command("create-table", "create a table from a Parquet, CSV, Arrow or JSONL file")
    create.add_argument("id", metavar="NAME")
    _add_file_options(create)
    create.add_argument(
        "--mode",
        type=_lower,
        choices=["create", "exist-ok", "overwrite"],
        default="create",
        help="exist-ok: keep an existing table as it is; overwrite: replace it",
    )

    insert = command("insert", "append the rows of a file to a table")
    insert.add_argument("id", metavar="NAME")
    _add_file_options(insert)
    insert.add_argument("--mode", type=_lower, choices=["append", "overwrite"], default="append")

    query = command("query", "read rows: a filter, columns, a limit or the k nearest vectors")
    query.add_argument("id", metavar="NAME")
    query.add_argument("--filter", metavar="SQL", help='SQL predicate, e.g. "price > 10"')
    query.add_argument("--columns", metavar="A,B", help="columns to return (default: all)")
    query.add_argument("--limit", type=_positive_int, metavar="N", help="at most N rows")
    query.add_argument("--nearest", metavar="COL", help="vector column of a k-NN search")
    query.add_argument("--vector", metavar="X,Y,...", help="query vector of --nearest")
    query.add_argument("--k", type=_positive_int, metavar="N", help="neighbours (default: 10)")
    query.add_argument("--distance-type", type=_lower, metavar="l2|cosine|dot")
    query.add_argument("--version", type=int, metavar="N", help="read this table version")
    query.add_argument(
        "--out", metavar="FILE", help="write --output parquet here (default: stdout if piped)"
    )
    _add_progress_option(query)

    count = command("count", "count the rows of a table (with --filter: the matching ones)")
    count.add_argument("id", metavar="NAME")
    count.add_argument("--filter", metavar="SQL")

    versions = command("versions", "list the versions of a table")
    versions.add_argument("id", metavar="NAME")

    restore = command("restore", "make an older version the newest version of a table")
    restore.add_argument("id", metavar="NAME")
    restore.add_argument("version", type=int, metavar="VERSION")

    tag = command("tag", "list, create or delete the tags of a table")
    tags = tag.add_subparsers(dest="action", metavar="ACTION", required=True)
    tag_list = _action(tags, "list", "list the tags of a table")
    tag_list.add_argument("id", metavar="NAME")
    tag_create = _action(tags, "create", "tag a version (default: the newest)")
    tag_create.add_argument("id", metavar="NAME")
    tag_create.add_argument("tag", metavar="TAG")
    tag_create.add_argument("--version", type=int, metavar="N")
    tag_delete = _action(tags, "delete", "delete a tag")
    tag_delete.add_argument("id", metavar="NAME")
    tag_delete.add_argument("tag", metavar="TAG")

    index = command("index", "list, create or drop the indices of a table")
    indices = index.add_subparsers(dest="action", metavar="ACTION", required=True)
    index_list = _action(indices, "list", "list the indices of a table")
    index_list.add_argument("id", metavar="NAME")
    index_create = _action(indices, "create", "build an index on a column")
    index_create.add_argument("id", metavar="NAME")
    index_create.add_argument("column", metavar="COLUMN")
    index_create.add_argument(
        "--type",
        dest="index_type",
        type=str.upper,
        required=True,
        metavar="TYPE",
        help="scalar: BTREE, BITMAP, LABEL_LIST, INVERTED, FTS, ...; "
        "vector: IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_SQ, ...",
    )
    index_create.add_argument("--name", help="index name (default: COLUMN_idx)")
    index_create.add_argument("--distance-type", type=_lower, metavar="l2|cosine|dot")
    index_create.add_argument("--num-partitions", type=_positive_int, metavar="N")
    index_create.add_argument("--num-sub-vectors", type=_positive_int, metavar="N")
    index_create.add_argument("--num-bits", type=_positive_int, metavar="N")
    index_create.add_argument("--max-iterations", type=_positive_int, metavar="N")
    index_create.add_argument("--sample-rate", type=_positive_int, metavar="N")
    index_create.add_argument("--target-partition-size", type=_positive_int, metavar="N")
    index_create.add_argument("--m", type=_positive_int, metavar="N", help="HNSW: edges per node")
    index_create.add_argument("--ef-construction", type=_positive_int, metavar="N")
    index_drop = _action(indices, "drop", "drop an index")
    index_drop.add_argument("id", metavar="NAME")
    index_drop.add_argument("index_name", metavar="INDEX")

    add = command("add-columns", "add columns computed by SQL expressions of the others")
    add.add_argument("id", metavar="NAME")
    add.add_argument(
        "columns", nargs="+", metavar="COLUMN=EXPRESSION", help='e.g. total="price * qty"'
    )

    drop = command("drop-columns", "drop columns of a table")
    drop.add_argument("id", metavar="NAME")
    drop.add_argument("columns", nargs="+", metavar="COLUMN")


def _add_file_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="source", required=True, metavar="FILE")
    parser.add_argument(
        "--format",
        type=_lower,
        choices=["parquet", "csv", "arrow", "jsonl"],
        help="format of FILE (default: from its extension)",
    )
    _add_progress_option(parser)


def _add_progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )


# -- reading files -------------------------------------------------------------------------------


def file_format(path: str, given: str | None) -> str:
    """The format of ``path``: ``given``, else its extension's."""
    if given:
        return given
    suffix = Path(path).suffix.lower()
    try:
        return FORMATS[suffix]
    except KeyError:
        raise errors.InvalidInputError(
            f"{path}: unknown file type {suffix or '(no extension)'!r}; "
            "give --format parquet|csv|arrow|jsonl"
        ) from None


def open_rows(path: str, fmt: str) -> pa.RecordBatchReader:
    """The rows of ``path`` as a reader, batch by batch; a bad file is InvalidInput."""
    import pyarrow as pa

    if not os.path.isfile(path):
        raise errors.InvalidInputError(f"{path}: no such file")
    try:
        reader = _open(path, fmt)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _bad_file(path, fmt, exc) from None

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            yield from reader
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _bad_file(path, fmt, exc) from None

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _open(path: str, fmt: str) -> Any:
    import pyarrow as pa

    if fmt == "parquet":
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        return pa.RecordBatchReader.from_batches(
            parquet.schema_arrow, parquet.iter_batches(batch_size=65_536)
        )
    if fmt == "csv":
        import pyarrow.csv

        return pyarrow.csv.open_csv(path)
    if fmt == "jsonl":
        import pyarrow.json

        return pyarrow.json.open_json(path)
    source = pa.memory_map(path)
    try:
        return pa.ipc.open_stream(source)
    except pa.ArrowInvalid:
        source.seek(0)
        ipc_file = pa.ipc.open_file(source)
        batches = (ipc_file.get_batch(i) for i in range(ipc_file.num_record_batches))
        return pa.RecordBatchReader.from_batches(ipc_file.schema, batches)


def _bad_file(path: str, fmt: str, exc: BaseException) -> errors.InvalidInputError:
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return errors.InvalidInputError(f"{path}: not a readable {fmt} file: {detail[:300]}")


def conformed(reader: pa.RecordBatchReader, target: pa.Schema, path: str) -> Any:
    """The rows cast to the table's column types when the file has the table's columns.

    A file format cannot always say what the table holds (JSON Lines has no fixed-size
    lists, CSV reads every integer as int64); a file with other columns is left as it
    is, so the table refuses it as a schema mismatch.
    """
    import pyarrow as pa

    if reader.schema.equals(target) or sorted(reader.schema.names) != sorted(target.names):
        return reader

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            try:
                yield batch.select(target.names).cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                detail = " ".join(str(exc).split())[:300]
                raise errors.InvalidInputError(
                    f"{path}: rows do not fit the table's columns: {detail}"
                ) from None

    return pa.RecordBatchReader.from_batches(target, batches())


# -- progress ------------------------------------------------------------------------------------


class _RowProgress:
    """Rows sent or received so far, a live line on stderr (rich)."""

    def __init__(self, description: str) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress: Progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.completed:,.0f} rows"),
            TimeElapsedColumn(),
            console=_console(sys.stderr),
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task: TaskID = self.progress.add_task(description, total=None)
        self.progress.start()

    def advance(self, rows: int) -> None:
        self.progress.advance(self.task, rows)

    def finish(self, description: str) -> None:
        self.progress.update(self.task, description=description)
        self.progress.stop()


def _progress(args: argparse.Namespace, description: str) -> _RowProgress | None:
    shown = args.progress if args.progress is not None else sys.stderr.isatty()
    return _RowProgress(description) if shown else None


def _counted(reader: pa.RecordBatchReader, progress: _RowProgress | None) -> Any:
    import pyarrow as pa

    if progress is None:
        return reader

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            yield batch
            progress.advance(batch.num_rows)

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


# -- rows in -------------------------------------------------------------------------------------


async def _upload(
    args: argparse.Namespace,
    send: Callable[[Any], Any],
    verb: str,
    table_schema: Callable[[], Awaitable[pa.Schema]] | None = None,
) -> Any:
    rows = open_rows(args.source, file_format(args.source, args.format))  # before any call
    if table_schema is not None:
        rows = conformed(rows, await table_schema(), args.source)
    progress = _progress(args, f"{verb} {args.source}")
    outcome = "stopped"
    try:
        response = await send(_counted(rows, progress))
        outcome = "done"
    finally:
        if progress is not None:
            progress.finish(outcome)
    return response


async def _create_table(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    request = {"id": list(identifier), "mode": args.mode.replace("-", "_")}
    response = await _upload(
        args,
        lambda data: ns.create_table(request, data),  # type: ignore[arg-type]
        "creating from",
    )
    out.result(f"created table {out.show_id(identifier)}", _response_dict(response))


async def _insert(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    request = {"id": list(identifier), "mode": args.mode}

    async def table_schema() -> pa.Schema:
        # from a one-row query: every backend answers it, and alike
        probe: dict[str, Any] = {"id": list(identifier), "k": 1, "vector": None}
        answer: Any = await ns.query_table(probe)  # type: ignore[arg-type]
        return answer.schema

    response = await _upload(
        args,
        lambda data: ns.insert_into_table(request, data),  # type: ignore[arg-type]
        "inserting from",
        table_schema,
    )
    out.result(f"inserted into table {out.show_id(identifier)}", _response_dict(response))


# -- rows out ------------------------------------------------------------------------------------


def _floats(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise errors.InvalidInputError(
            f"--vector must be numbers separated by commas: {text!r}"
        ) from None
    if not values:
        raise errors.InvalidInputError("--vector must not be empty")
    return values


async def _query_request(
    ns: AsyncLanceNamespace, args: argparse.Namespace, identifier: list[str]
) -> dict[str, Any]:
    request: dict[str, Any] = {"id": identifier, "vector": None}
    if args.filter:
        request["filter"] = args.filter
    if args.columns is not None:
        names = [name.strip() for name in args.columns.split(",") if name.strip()]
        if not names:
            raise errors.InvalidInputError("--columns must name at least one column")
        request["columns"] = {"column_names": names}
    if args.version is not None:
        request["version"] = args.version
    if (args.nearest is None) != (args.vector is None):
        raise errors.InvalidInputError("--nearest COL and --vector X,Y,... go together")
    if args.nearest is not None:
        request["vector"] = {"single_vector": _floats(args.vector)}
        request["vector_column"] = args.nearest
        request["k"] = args.k or args.limit or 10
        if args.distance_type:
            request["distance_type"] = args.distance_type
        return request
    if args.k is not None or args.distance_type:
        raise errors.InvalidInputError("--k and --distance-type need --nearest and --vector")
    if args.limit is not None:
        request["k"] = args.limit
    else:
        # QueryTable always has a limit (k): every matching row is as many as count says
        counted: dict[str, Any] = {"id": identifier}
        if args.filter:
            counted["predicate"] = args.filter
        if args.version is not None:
            counted["version"] = args.version
        response = await ns.count_table_rows(counted)  # type: ignore[arg-type]
        request["k"] = max(int(response.count or 0), 1)
    return request


async def _query(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    if args.out is not None and getattr(args, "output", None) is None:
        out.format = "parquet"  # --out FILE alone: the file is Parquet
    sink = _RowSink(out, args.out)  # a refused destination fails before any call
    request = await _query_request(ns, args, list(identifier))
    progress = _progress(args, "querying")
    outcome = "stopped"
    try:
        batches: Any = ns.query_table_batches(request)
        async for batch in batches:
            sink.add(batch)
            if progress is not None:
                progress.advance(batch.num_rows)
        if sink.format == "parquet" and sink.writer is None:
            # no rows and so no batch: the whole (empty) answer still carries the schema
            empty: Any = await ns.query_table(request)  # type: ignore[arg-type]
            sink.open_parquet(empty.schema)
        outcome = "done"
    finally:
        if progress is not None:
            progress.finish(outcome)
        sink.close(complete=outcome == "done")


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


class _RowSink:
    """Query rows in the chosen format: a table, JSON, JSON Lines or a Parquet file."""

    def __init__(self, out: _Output, path: str | None) -> None:
        self.out = out
        self.count = 0
        self.rows: list[dict[str, Any]] = []
        self.columns: list[str] = []
        self.writer: Any = None
        self.path = path
        self.target: BinaryIO | str | None = None
        if out.format == "parquet":
            if path is None and out.stdout.isatty():
                raise errors.InvalidInputError(
                    "--output parquet writes binary: give --out FILE or pipe stdout"
                )
            self.target = path + ".partial" if path else out.stdout.buffer
        elif path is not None:
            raise errors.InvalidInputError("--out applies to --output parquet")

    @property
    def format(self) -> str:
        return self.out.format

    def open_parquet(self, schema: pa.Schema) -> None:
        import pyarrow.parquet as pq

        self.writer = pq.ParquetWriter(self.target, schema)

    def add(self, batch: pa.RecordBatch) -> None:
        out = self.out
        if out.format == "parquet":
            if self.writer is None:
                self.open_parquet(batch.schema)
            self.writer.write_batch(batch)
            return
        if not self.columns:
            self.columns = list(batch.schema.names)
        for row in batch.to_pylist():
            if out.format == "table":
                self.rows.append(row)
            elif out.format == "jsonl":
                out._line(json.dumps(row, default=_json_value))
            else:
                prefix = "[\n  " if self.count == 0 else ",\n  "
                out.stdout.write(prefix + json.dumps(row, default=_json_value))
            self.count += 1

    def close(self, *, complete: bool) -> None:
        out = self.out
        if out.format == "parquet":
            if self.writer is not None:
                self.writer.close()
            if isinstance(self.target, str) and self.path:
                if complete:
                    os.replace(self.target, self.path)
                elif os.path.exists(self.target):
                    os.unlink(self.target)
            else:
                out.stdout.buffer.flush()
        elif out.format == "json":
            out._line("[]" if self.count == 0 else "\n]")
        elif out.format == "table" and complete:
            if not self.rows:
                _console(out.stdout).print("no rows", markup=False)
                return
            cells = [[_cell(row.get(name)) for name in self.columns] for row in self.rows]
            out.table(self.columns, cells)


async def _count(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    request: dict[str, Any] = {"id": list(identifier)}
    if args.filter:
        request["predicate"] = args.filter
    response = await ns.count_table_rows(request)  # type: ignore[arg-type]
    count = int(response.count or 0)
    if out.format == "table":
        out._line(str(count))
    else:
        out.result("", {"count": count})


# -- versions, tags, indices, columns ------------------------------------------------------------


async def _versions(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    stream = out.stream(["VERSION", "TIMESTAMP_MILLIS", "MANIFEST"], "no versions")
    request: dict[str, Any] = {"id": list(identifier)}
    trail = PageTrail(f"ListTableVersions {list(identifier)}")
    while True:
        response = await ns.list_table_versions(request)  # type: ignore[arg-type]
        for version in response.versions:
            item = _response_dict(version)
            row = [str(item.get("version")), _cell(item.get("timestamp_millis"))]
            stream.add(item, [*row, _cell(item.get("manifest_path"))])
        token = trail.follow(token_of(getattr(response, "page_token", None)))
        if token is None:
            break
        request["page_token"] = token
    stream.close()


async def _restore(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    if args.version < 0:
        raise errors.InvalidInputError("VERSION must be >= 0")
    request = {"id": list(identifier), "version": args.version}
    response = await ns.restore_table(request)  # type: ignore[arg-type]
    summary = f"restored table {out.show_id(identifier)} to version {args.version}"
    out.result(summary, _response_dict(response))


async def _tag(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = list(_id(args, args.id, what="table ID", allow_root=False))
    shown = out.show_id(identifier)
    if args.action == "list":
        response: Any = await ns.list_table_tags({"id": identifier})  # type: ignore[arg-type]
        tags = _response_dict(response).get("tags") or {}
        stream = out.stream(["TAG", "VERSION"], f"no tags on {shown}")
        for name in sorted(tags):
            item = {"tag": name, **dict(tags[name])}
            stream.add(item, [name, _cell(item.get("version"))])
        stream.close()
    elif args.action == "create":
        version = args.version
        if version is None:
            # the newest version: only the detailed description carries it
            request = {"id": identifier, "load_detailed_metadata": True}
            described: Any = await ns.describe_table(request)  # type: ignore[arg-type]
            version = described.version
        request = {"id": identifier, "tag": args.tag, "version": version}
        response = await ns.create_table_tag(request)  # type: ignore[arg-type]
        out.result(f"tagged version {version} of {shown} {args.tag}", _response_dict(response))
    else:
        request = {"id": identifier, "tag": args.tag}
        response = await ns.delete_table_tag(request)  # type: ignore[arg-type]
        out.result(f"deleted tag {args.tag} of {shown}", _response_dict(response))


#: the ``index create`` options, each a CreateTableIndex field of the same name (the
#: build parameters are the ones every backend hands to pylance's index builder)
INDEX_OPTIONS = ("distance_type", *VECTOR_INDEX_ARGUMENTS)


async def _index(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = list(_id(args, args.id, what="table ID", allow_root=False))
    shown = out.show_id(identifier)
    if args.action == "list":
        response: Any = await ns.list_table_indices({"id": identifier})  # type: ignore[arg-type]
        stream = out.stream(["INDEX", "COLUMNS", "TYPE", "STATUS"], f"no indices on {shown}")
        for index in response.indexes:
            item = _response_dict(index)
            columns = ",".join(item.get("columns") or [])
            row = [str(item.get("index_name")), columns, _cell(item.get("index_type"))]
            stream.add(item, [*row, _cell(item.get("status"))])
        stream.close()
    elif args.action == "create":
        request: dict[str, Any] = {
            "id": identifier,
            "column": args.column,
            "index_type": args.index_type,
            "name": args.name or f"{args.column}_idx",
        }
        for option in INDEX_OPTIONS:
            if getattr(args, option) is not None:
                request[option] = getattr(args, option)
        if args.index_type in SCALAR_INDEX_TYPES:
            response = await ns.create_table_scalar_index(request)  # type: ignore[arg-type]
        else:
            response = await ns.create_table_index(request)  # type: ignore[arg-type]
        summary = f"created {args.index_type} index {request['name']} on {shown}"
        out.result(summary, _response_dict(response))
    else:
        request = {"id": identifier, "index_name": args.index_name}
        response = await ns.drop_table_index(request)  # type: ignore[arg-type]
        out.result(f"dropped index {args.index_name} of {shown}", _response_dict(response))


async def _add_columns(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    new_columns = []
    for item in args.columns:
        name, sep, expression = item.partition("=")
        if not sep or not name.strip() or not expression.strip():
            raise errors.InvalidInputError(f"expected COLUMN=EXPRESSION, got {item!r}")
        new_columns.append({"name": name.strip(), "expression": expression.strip()})
    request = {"id": list(identifier), "new_columns": new_columns}
    response = await ns.alter_table_add_columns(request)  # type: ignore[arg-type]
    names = ", ".join(column["name"] for column in new_columns)
    out.result(f"added {names} to {out.show_id(identifier)}", _response_dict(response))


async def _drop_columns(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    request = {"id": list(identifier), "columns": list(args.columns)}
    response = await ns.alter_table_drop_columns(request)  # type: ignore[arg-type]
    names = ", ".join(args.columns)
    out.result(f"dropped {names} of {out.show_id(identifier)}", _response_dict(response))


#: command name -> (handler, whether its output is a listing)
COMMANDS: dict[str, tuple[Handler, bool]] = {
    "create-table": (_create_table, False),
    "insert": (_insert, False),
    "query": (_query, True),
    "count": (_count, False),
    "versions": (_versions, True),
    "restore": (_restore, False),
    "tag": (_tag, False),
    "index": (_index, False),
    "add-columns": (_add_columns, False),
    "drop-columns": (_drop_columns, False),
}

#: the commands that can print --output parquet
PARQUET_COMMANDS = frozenset({"query"})
