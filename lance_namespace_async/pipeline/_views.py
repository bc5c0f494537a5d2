"""Materialized views: CreateMaterializedView, RefreshMaterializedView and the refresh
job's body, on every storage backend.

**Where a definition is checked.** In the default cluster's driver process (a call,
``_runner.CALLS``), never in the calling process: a server must not start a JVM of its
own. The ``active`` cluster (the caller is itself a Spark driver) checks in process.

**``kind=udtf``/``chunker``** (opt-in, ``_udfs``): the query's rows are mapped through the
client's callable in Spark's Python workers before the same write and commit.

**Naming tables in ``source_query``.** The query is Spark SQL. A table of the view's own
namespace is named by its table name (``SELECT ... FROM orders``); a table anywhere else
in the same backend by its full identifier joined with the protocol's delimiter ``$``, in
backticks (``FROM `sales$eu$orders```). Dotted names (``sales.orders``) are refused: Spark
reads them as its own catalog's. Tables are found the way Spark analysis asks for them
(CTEs and subqueries work as usual), each bound as a temporary view of a session of its
own over our data source's reader (``spark.read``), so only tables reachable through the
view's backend are ever read. An unknown table is TableNotFound, before anything is written.

**What a view keeps.** The definition lives in the view table's schema metadata, which
every Lance version carries and every backend's DescribeTable (``load_detailed_metadata``)
answers in ``schema.metadata``: ``materialized_view.kind``, ``.source_query``,
``.sources`` (JSON ``[{"id": [...], "version": n}]``, the versions the last refresh
read; ``null`` before one) and ``.refreshed_by`` (the job). A refresh rewrites them in the
same commit as the rows, so rows and provenance never disagree.

**Refresh.** One Spark job: the sources read at their latest versions (or ``src_version``,
which the protocol gives as one number, so it is accepted only for a view of one source),
the query run, its rows written by tasks as Lance fragments nobody references yet, then
one Overwrite commit (through the catalog for ``managed_by=impl`` tables) — the data
source's own two-phase writer. A failure or cancel before the commit deletes what the
tasks wrote, leaving the previous version. ``max_rows_per_fragment`` is the rows per
written data file; ``concurrency`` the most write tasks (the result is coalesced to it);
``source_task_size``, ``intra_applier_concurrency``, ``output_limit`` and ``manifest``
have no meaning for a SQL view and are ignored. An aggregate over one source (the shape
``_pushdown`` reads from Spark's plan) folds partial aggregates in the tasks, next to the
data, and Spark only finishes them: same result, a fraction of the rows shipped.
"""

from __future__ import annotations

import base64
import importlib
import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

import anyio
import anyio.to_thread
import pyarrow as pa

from .. import errors
from .._core.base import AsyncLanceNamespace
from . import _sql_guard, _udfs
from ._control import JobCancelled, JobControl
from ._pushdown import maybe_pushed_down, pushed_again
from ._view_schema import fits, parse_output_schema

__all__ = [
    "KIND_KEY",
    "QUERY_KEY",
    "REFRESHED_BY_KEY",
    "SOURCES_KEY",
    "create_materialized_view",
    "refresh_materialized_view",
    "run_refresh",
]

KIND_KEY = "materialized_view.kind"
QUERY_KEY = "materialized_view.source_query"
SOURCES_KEY = "materialized_view.sources"
REFRESHED_BY_KEY = "materialized_view.refreshed_by"
#: a ``udtf``/``chunker`` view's callable (JSON, ``_udfs.udtf_spec``)
UDTF_KEY = "materialized_view.udtf"
#: how tables of other namespaces are named in a query (``ns$table``)
DELIMITER = "$"
#: the most tables one query may read
MAX_SOURCES = 64
_JOB_KIND = "refresh_materialized_view"
_BACKTICKED = re.compile(r"`((?:[^`]|``)*)`")

Describe = Callable[[list[str]], int | None]


# -- the query's sources ---------------------------------------------------------------------


def _relation_parts(relation_name: str) -> list[str]:
    """Spark's ``relationName`` (```a`.`b```) as its parts."""
    parts = [m.replace("``", "`") for m in _BACKTICKED.findall(relation_name)]
    return parts or [relation_name]


def source_id(relation_name: str, namespace: Sequence[str]) -> list[str]:
    """The table a name in the query stands for (see the module docstring)."""
    parts = _relation_parts(relation_name)
    if len(parts) != 1:
        raise errors.InvalidInputError(
            f"table {relation_name} in source_query: name a table of another namespace "
            f"by its identifier joined with {DELIMITER!r}, in backticks "
            f"(`{DELIMITER.join(parts)}`), not dotted"
        )
    name = parts[0]
    if DELIMITER in name:
        table_id = name.split(DELIMITER)
        if not all(table_id):
            raise errors.InvalidInputError(f"table {relation_name}: an empty identifier part")
        return table_id
    return [*namespace, name]


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def bind_query(
    spark: Any,
    query: str,
    *,
    impl: str,
    properties: Mapping[str, str],
    namespace: Sequence[str],
    latest_version: Describe,
    versions: Mapping[tuple[str, ...], int] | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """``query`` analysed in a session of its own with every table it names bound.

    Returns the DataFrame (nothing run yet) and its sources as ``[{"id", "version"}]``.
    ``latest_version(id)`` is asked for the version of a source not in ``versions``
    (TableNotFound when there is none). Refuses (InvalidInput) a query Spark cannot
    parse or resolve.
    """
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.logger import PySparkLogger

    from .. import spark as lna_spark

    session = spark.newSession()
    _sql_guard.confine(session)
    _sql_guard.check_parsed(session, query)
    sources: list[dict[str, Any]] = []
    # pyspark's own logger class: a plain Logger under this name would break pyspark's
    # later error reports (they log with an ``errorClass`` keyword)
    quiet = PySparkLogger.getLogger("SQLQueryContextLogger")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # each unbound table is an expected analysis error
    try:
        for _ in range(MAX_SOURCES + 1):
            try:
                frame = session.sql(query)
                frame.schema  # noqa: B018 - analysis happens here
                _sql_guard.check_analysed(frame)
                return frame, sources
            except ParseException as exc:
                raise errors.InvalidInputError(
                    f"source_query is not Spark SQL: {_first_line(exc)}"
                ) from None
            except AnalysisException as exc:
                if exc.getCondition() != "TABLE_OR_VIEW_NOT_FOUND":
                    raise errors.InvalidInputError(f"source_query: {_first_line(exc)}") from None
                relation = str((exc.getMessageParameters() or {}).get("relationName", ""))
            table_id = source_id(relation, namespace)
            if any(s["id"] == table_id for s in sources):
                raise errors.InvalidInputError(f"source_query: cannot bind {relation}")
            pinned = (versions or {}).get(tuple(table_id))
            version = latest_version(table_id) if pinned is None else pinned
            frame = lna_spark.read(
                session,
                DELIMITER.join(table_id),
                impl=impl,
                properties=properties,
                delimiter=DELIMITER,
                version=version,
            )
            frame.createOrReplaceTempView(relation)
            sources.append({"id": table_id, "version": version})
        raise errors.InvalidInputError(f"source_query reads more than {MAX_SOURCES} tables")
    finally:
        quiet.setLevel(level)


def query_schema(frame: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema, timezone="UTC")


# -- the view's definition -------------------------------------------------------------------


def definition_metadata(
    query: str,
    sources: list[dict[str, Any]],
    *,
    refreshed: bool,
    job_id: str | None = None,
    kind: str = "query",
) -> dict[str, str]:
    """The schema metadata a view's table carries (see the module docstring)."""
    recorded = [{"id": s["id"], "version": s["version"] if refreshed else None} for s in sources]
    metadata = {KIND_KEY: kind, QUERY_KEY: query, SOURCES_KEY: json.dumps(recorded)}
    if job_id is not None:
        metadata[REFRESHED_BY_KEY] = job_id
    return metadata


def view_definition(schema_metadata: Mapping[Any, Any] | None) -> dict[str, str] | None:
    """A table's view definition from its schema metadata (None: not a view)."""
    decoded = {
        (k.decode() if isinstance(k, bytes) else str(k)): (
            v.decode() if isinstance(v, bytes) else str(v)
        )
        for k, v in (schema_metadata or {}).items()
    }
    if KIND_KEY not in decoded or QUERY_KEY not in decoded:
        return None
    return decoded


def _with_metadata(schema: pa.Schema, metadata: Mapping[str, str]) -> pa.Schema:
    return schema.with_metadata({**(schema.metadata or {}), **metadata})


# -- where a definition is analysed ----------------------------------------------------------

#: seconds CreateMaterializedView waits for the cluster's driver to analyse a definition
#: (its first call waits for the driver's JVM to start)
ANALYSIS_TIMEOUT_SECONDS = 300.0


def analyse_definition(spark: Any, order: Mapping[str, Any]) -> dict[str, Any]:
    """A view definition checked on ``spark`` (a driver's call, ``_runner.CALLS``):
    the output schema parsed (a DDL string needs Spark), the query parsed and resolved
    against its sources (found through the backend ``impl``/``properties`` name, at their
    latest versions) and its result fitted to the schema. Answers the schema (Arrow IPC,
    base64) and the sources; raises the typed errors (TableNotFound, InvalidInput)."""
    from .._facade.sync import connect_sync

    text = str(order["output_schema"])
    schema = parse_output_schema(text, spark)
    with connect_sync(str(order["impl"]), dict(order["properties"])) as facade:

        def latest_version(table_id: list[str]) -> int | None:
            described = facade.describe_table({"id": table_id, "load_detailed_metadata": True})
            return described.version if isinstance(described.version, int) else None

        frame, sources = bind_query(
            spark,
            str(order["query"]),
            impl=str(order["impl"]),
            properties=dict(order["properties"]),
            namespace=[str(part) for part in order["namespace"]],
            latest_version=latest_version,
        )
        inputs = order.get("input_columns")
        if inputs is None:
            fits(query_schema(frame), schema)
        else:  # a udtf view: its callable's output is checked as it runs
            missing = [c for c in inputs if c not in frame.columns]
            if missing:
                raise errors.InvalidInputError(
                    f"input_columns {missing} are not columns of source_query ({frame.columns})"
                )
    encoded = base64.b64encode(schema.serialize().to_pybytes()).decode()
    return {"schema": encoded, "sources": sources}


def _analyse(
    ns: AsyncLanceNamespace,
    view_id: list[str],
    query: str,
    text: str,
    input_columns: list[str] | None = None,
) -> Any:
    """Analyse on the default cluster's driver (the ``active`` cluster: in this process,
    the user's own Spark driver), so no JVM starts in a server's process."""
    from ._clusters import call, resolve

    result = call(
        resolve(ns.config, None),
        {
            "op": "analyse_view",
            "impl": ns.impl_name,
            "properties": dict(ns.config.properties),
            "namespace": view_id[:-1],
            "query": query,
            "output_schema": text,
            **({} if input_columns is None else {"input_columns": input_columns}),
        },
        ANALYSIS_TIMEOUT_SECONDS,
    )
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(result["schema"])))
    return schema, list(result["sources"])


async def _start_job(
    ns: AsyncLanceNamespace, table_id: list[str], request: Mapping[str, Any], cluster: str | None
) -> str:
    jobs = importlib.import_module(f"{__package__}._jobs")
    job_id: str = await jobs.start_job(
        ns, kind=_JOB_KIND, table_id=table_id, request=request, cluster=cluster
    )
    return job_id


# -- the operations ----------------------------------------------------------------------------


def _given(request: Any, name: str) -> Any:
    """A request field's value; None when absent (the generated models' UNSET)."""
    value = getattr(request, name, None)
    return None if value is None or type(value).__name__ == "Unset" else value


def _view_id(request: Any) -> list[str]:
    table_id = [str(part) for part in (_given(request, "id") or [])]
    if len(table_id) < 1 or not all(table_id):
        raise errors.InvalidInputError("a materialized view needs an id (its table identifier)")
    return table_id


def _refuse_code(kind: str) -> errors.UnsupportedOperationError:
    return errors.UnsupportedOperationError(
        f"materialized views of kind {kind!r} run client-supplied code, which this "
        "namespace does not execute unless its operator enables it (pipeline_allow_udfs="
        "true, lance-ns serve --allow-udfs); kind 'query' (Spark SQL) is supported"
    )


async def create_materialized_view(ns: AsyncLanceNamespace, request: Any) -> Any:
    """Check the query and schema, create the view's table, start its first refresh."""
    from ..models import CreateMaterializedViewResponse, CreateTableRequest, TableExistsRequest

    view_id = _view_id(request)
    kind = str(_given(request, "kind") or "")
    udtf: dict[str, Any] | None = None
    if kind in _udfs.VIEW_KINDS:
        if not _udfs.allowed(ns.config):
            raise _refuse_code(kind)
        udtf = _udfs.udtf_spec(_given(request, "udtf_spec"), kind)
    elif kind != "query":
        raise errors.InvalidInputError(f"kind must be 'query', 'udtf' or 'chunker', got {kind!r}")
    query = _given(request, "source_query")
    if not isinstance(query, str) or not query.strip():
        raise errors.InvalidInputError("source_query must be a non-empty Spark SQL query")
    text = str(_given(request, "output_schema") or "")
    if not text.strip():
        raise errors.InvalidInputError("output_schema must be a JsonArrowSchema or Spark DDL")
    try:
        json.loads(text)
    except ValueError:
        pass  # a Spark DDL string: the driver's Spark parses it
    else:
        parse_output_schema(text)  # a bad JsonArrowSchema is refused before any Spark work
    try:
        await ns.table_exists(TableExistsRequest.from_dict({"id": view_id}))
    except errors.TableNotFoundError:
        pass
    else:
        raise errors.TableAlreadyExistsError(f"table {view_id!r} already exists")

    inputs = None if udtf is None else list(udtf["input_columns"])
    schema, sources = await anyio.to_thread.run_sync(_analyse, ns, view_id, query, text, inputs)
    metadata = definition_metadata(query, sources, refreshed=False, kind=kind)
    if udtf is not None:
        metadata[UDTF_KEY] = json.dumps(udtf)
    empty = _with_metadata(schema, metadata).empty_table()
    created = await ns.create_table(CreateTableRequest.from_dict({"id": view_id}), empty)
    version = created.version if isinstance(created.version, int) else 1
    job_id = None
    if _given(request, "with_no_data") is not True:
        job_id = await _start_job(ns, view_id, {"id": view_id}, None)
    return CreateMaterializedViewResponse(version=version, job_id=job_id)


#: the fewest rows per written data file a refresh takes: each file is a fragment the
#: manifest lists and every reader opens, so below ~1,000 rows their fixed cost dominates
#: (1 would write one file per row); Lance's own default is 1,048,576
MIN_ROWS_PER_FRAGMENT = 1024
#: the largest count a request may give: Spark takes partition counts as Java ints
MAX_COUNT = 2**31 - 1
#: request fields with a lower bound other than 1
_MINIMUMS = {"max_rows_per_fragment": MIN_ROWS_PER_FRAGMENT}


def _optional_positive(request: Any, name: str, minimum: int = 1) -> int | None:
    value = _given(request, name)
    if value is None:
        return None
    least = max(minimum, _MINIMUMS.get(name, minimum))
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= MAX_COUNT:
        raise errors.InvalidInputError(
            f"{name} must be an integer from {least} to {MAX_COUNT}, got {value!r}"
        )
    return value


def _schema_metadata(described: Any) -> dict[str, str]:
    """A DescribeTable answer's schema metadata as a plain map."""
    metadata = _given(_given(described, "schema"), "metadata")
    if metadata is None or isinstance(metadata, str):
        return {}
    values = metadata.to_dict() if hasattr(metadata, "to_dict") else metadata
    return {str(k): str(v) for k, v in dict(values).items()}


async def refresh_materialized_view(ns: AsyncLanceNamespace, request: Any) -> Any:
    """Check the view and the request, then start the refresh job; answers its id."""
    from ..models import DescribeTableRequest, RefreshMaterializedViewResponse

    view_id = _view_id(request)
    src_version = _optional_positive(request, "src_version", 0)
    body: dict[str, Any] = {"id": view_id}
    for name in ("max_rows_per_fragment", "concurrency"):
        value = _optional_positive(request, name)
        if value is not None:
            body[name] = value
    described = await ns.describe_table(
        DescribeTableRequest.from_dict({"id": view_id, "load_detailed_metadata": True})
    )
    definition = view_definition(_schema_metadata(described))
    if definition is None:
        raise errors.InvalidInputError(f"table {view_id!r} is not a materialized view")
    if definition[KIND_KEY] in _udfs.VIEW_KINDS and not _udfs.allowed(ns.config):
        raise _refuse_code(definition[KIND_KEY])
    if src_version is not None:
        sources = json.loads(definition.get(SOURCES_KEY) or "[]")
        if len(sources) != 1:
            raise errors.InvalidInputError(
                f"src_version names one source's version; view {view_id!r} reads "
                f"{len(sources)} tables (refresh it at their latest versions)"
            )
        body["src_version"] = src_version
    cluster = _given(request, "cluster")
    job_id = await _start_job(ns, view_id, body, cluster if isinstance(cluster, str) else None)
    return RefreshMaterializedViewResponse(job_id=job_id)


# -- the job ------------------------------------------------------------------------------------


def _view_handle(control: JobControl, view_id: list[str]) -> tuple[Any, Any]:
    """The view table's handle and dataset at its current version (data source's resolve)."""
    from ..spark._options import SourceOptions
    from ..spark._source import _resolve

    options = SourceOptions(
        impl=control.impl,
        properties=dict(control.properties),
        table_id=tuple(view_id),
        version=None,
        columns=None,
        batch_size=8192,
        save_mode=None,
        max_rows_per_file=1_048_576,
        push_filters=None,
    )
    handle, dataset = _resolve(options, latest=True)
    if dataset is None:
        raise errors.InvalidTableStateError(f"view {view_id!r} has no version to refresh")
    return handle, dataset


def _result(
    control: JobControl,
    definition: Mapping[str, str],
    recorded: list[dict[str, Any]],
    versions: Mapping[tuple[str, ...], int],
    view_id: list[str],
    output: pa.Schema,
) -> tuple[Any, list[dict[str, Any]]]:
    """The view's result and the sources it read (``recorded``: those its definition
    names): a ``pyarrow.Table`` when the driver merged pushed-down partials, else the
    DataFrame to write (nothing run yet)."""
    kind = definition[KIND_KEY]
    query, namespace = definition[QUERY_KEY], view_id[:-1]
    if kind not in _udfs.VIEW_KINDS and len(recorded) == 1:
        source = [str(part) for part in recorded[0]["id"]]
        again = pushed_again(
            control.spark,
            query,
            namespace,
            source,
            versions.get(tuple(source)),
            impl=control.impl,
            properties=control.properties,
        )
        if again is not None:  # a plan this process analysed for this source's schema
            pushed, read = again
            return pushed, [{"id": source, "version": read}]
    facade = control.namespace()

    def latest_version(table_id: list[str]) -> int | None:
        described = facade.describe_table({"id": table_id, "load_detailed_metadata": True})
        return described.version if isinstance(described.version, int) else None

    frame, sources = bind_query(
        control.spark,
        query,
        impl=control.impl,
        properties=control.properties,
        namespace=namespace,
        latest_version=latest_version,
        versions=versions,
    )
    if kind in _udfs.VIEW_KINDS:  # the client's callable, in Spark's Python workers
        return _udfs.map_rows(frame, json.loads(definition[UDTF_KEY]), output), sources
    pushed = maybe_pushed_down(
        control.spark,
        frame,
        sources,
        impl=control.impl,
        properties=control.properties,
        query=query,
        namespace=namespace,
    )
    return pushed, sources


def _raise_typed(exc: BaseException, view_id: list[str]) -> NoReturn:
    """Raise what a failed refresh reports: typed errors and a cancel as they are, a
    client's callable's failure as its task named it, anything else InternalError."""
    if isinstance(exc, errors.LanceNamespaceError | JobCancelled) or not isinstance(exc, Exception):
        raise exc
    typed = _udfs.typed_task_error(exc)  # a client's callable failed in its task
    if typed is not None:
        raise typed from None
    raise errors.InternalError(f"refresh of view {view_id!r} failed: {_first_line(exc)}") from exc


def run_refresh(control: JobControl, request: Mapping[str, Any]) -> int:
    """The refresh job: run the view's query on Spark, commit one Overwrite version.

    Returns the version the commit made. Raises JobCancelled (nothing committed, the
    tasks' files deleted) when cancelled before the commit.
    """
    from ..spark._job_files import JobFiles
    from ..spark._source import WrittenFragments, _Writer

    view_id = [str(part) for part in request["id"]]
    handle, dataset = _view_handle(control, view_id)
    definition = view_definition(dataset.schema.metadata)
    if definition is None:
        raise errors.InvalidInputError(f"table {view_id!r} is not a materialized view")
    control.progress(0, 2)
    recorded = json.loads(definition.get(SOURCES_KEY) or "[]")
    versions: dict[tuple[str, ...], int] = {}
    if request.get("src_version") is not None and len(recorded) == 1:
        versions[tuple(recorded[0]["id"])] = int(request["src_version"])
    output = pa.schema([f.remove_metadata() for f in dataset.schema]).remove_metadata()
    kind = definition[KIND_KEY]
    try:
        pushed, sources = _result(control, definition, recorded, versions, view_id, output)
    except BaseException as exc:
        _raise_typed(exc, view_id)
    # the rows when the driver merged pushed-down partials, else the DataFrame to write
    computed: pa.Table | None = pushed if isinstance(pushed, pa.Table) else None
    frame: Any = None if computed is not None else pushed
    fits(query_schema(frame) if computed is None else computed.schema, output)
    metadata = definition_metadata(
        definition[QUERY_KEY], sources, refreshed=True, job_id=control.job_id, kind=kind
    )
    target = _with_metadata(dataset.schema, metadata)
    if frame is not None:
        frame = frame.select(*[f"`{name.replace('`', '``')}`" for name in output.names])
        concurrency = request.get("concurrency")
        if isinstance(concurrency, int) and concurrency > 0:
            frame = frame.coalesce(concurrency)
    job = JobFiles(handle.location, control.job_id.removeprefix("lna-job-"))
    writer = _Writer(
        handle,
        target,
        overwrite=True,
        storage_version=str(dataset.data_storage_version),
        max_rows_per_file=int(request.get("max_rows_per_fragment") or 1_048_576),
        job=job if job.start() else None,
    )
    control.raise_if_cancelled()

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        written = writer.write(batches)
        yield pa.record_batch({"fragments": pa.array([json.dumps(written.fragments)])})

    messages: list[Any] = []
    try:
        if computed is None:
            rows = frame.mapInArrow(write, "fragments string").collect()
            messages = [WrittenFragments(json.loads(row["fragments"])) for row in rows]
        else:  # a few rows already here: written by this process, no Spark stage
            messages = [writer.write(iter(computed.select(output.names).to_batches()))]
        control.progress(1, 2)
        control.raise_if_cancelled()
        writer.commit(messages)
    except BaseException as exc:
        writer.abort(messages)
        _raise_typed(exc, view_id)
    _, committed = _view_handle(control, view_id)
    control.progress(2, 2)
    return int(committed.version)
