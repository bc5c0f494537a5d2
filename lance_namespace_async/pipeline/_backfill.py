"""Computed columns (AlterTableAddColumns with ``computed``) and their backfill on Spark.

A computed column is a SQL expression over the table's other columns. Adding one checks
the expression and finds its type with Lance's own SQL engine (DataFusion, planned on
zero rows: nothing is computed), then adds the column all-null in a metadata-only
commit, the expression kept in the field's metadata under :data:`COMPUTED_KEY` so
DescribeTable shows it and a backfill knows what to compute.

AlterTableBackfillColumns checks the request, pins the version to read, and starts a job
(kind ``backfill_columns``) whose body, :func:`run_backfill`, fills the column fragment
by fragment on Spark: each task computes whole fragments with pylance (the same engine
and expression as pylance's ``add_columns``) and writes one new data file per fragment
holding only that column; the driver commits every ``commit_granularity`` fragments as
one Lance ``DataReplacement`` (each fragment's column swapped whole, so readers never
see a half-filled fragment), through the namespace (a ``managed_by=impl`` table's
commit goes through its catalog), then records a checkpoint (the fragments done) so a
resumed run continues from the last commit.

Request fields and what they mean here: ``where`` (only matching rows get the value, the
others keep theirs), ``read_version`` (the version fragments are read at; default the
latest when the job starts, pinned by its checkpoints for resumes), ``task_size``
(fragments per Spark task; default: a commit group spread evenly over the cluster's
cores), ``num_frags`` (fill at most the first N fragments by id), ``commit_granularity``
(fragments per commit, default :data:`DEFAULT_COMMIT_GRANULARITY`), ``concurrency``
(Spark tasks of a commit group at most), ``checkpoint_size`` (rows per batch a task
reads), ``cluster`` (the runner's). ``branch`` is refused (main only);
``intra_applier_concurrency``, ``min_checkpoint_size``, ``max_checkpoint_size``,
``batch_checkpoint_flush_interval_seconds`` and ``manifest`` are accepted and ignored.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio.to_thread
import pyarrow as pa

from .. import errors
from .._storage.containment import refuse_outside
from . import _udfs
from ._udfs import virtual_field, virtual_spec

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace
    from .._facade.sync import SyncLanceNamespace
    from ._control import JobControl

T = TypeVar("T")

#: field metadata key holding a computed column's SQL expression
COMPUTED_KEY: Final = "lance_namespace.computed"
#: operator property that lets clients run their own code (UDFs); shared with views
ALLOW_UDFS: Final = "pipeline_allow_udfs"
#: the job kind the runner maps to :func:`run_backfill`
JOB_KIND: Final = "backfill_columns"
#: fragments one commit replaces unless the request says
DEFAULT_COMMIT_GRANULARITY: Final = 16
#: commit groups whose Spark jobs run at once (the one to commit next and those after it)
LOOKAHEAD: Final = 2
#: checkpoint key: the ids of the fragments already committed, comma-separated
DONE: Final = "backfill_fragments_done"
#: checkpoint key: the version the job reads (a resumed run reads the same rows)
READ_AT: Final = "backfill_read_version"

#: where the last backfill of this process spent its time (seconds; logged at INFO too)
LAST_TIMINGS: dict[str, float] = {}

logger = logging.getLogger("lance_namespace_async.pipeline.backfill")

_SOURCE_LOCATION = re.compile(r",\s*/\S+\.rs:\d+:\d+\s*$")
_COUNTS = ("task_size", "num_frags", "commit_granularity", "concurrency", "checkpoint_size")
#: the fewest rows per batch a task reads (``checkpoint_size``): each batch is one
#: DataFusion evaluation and one Python call, so below ~1,000 rows their fixed cost
#: dominates (1 would evaluate row by row); Lance's default batch is 8,192 rows
MIN_CHECKPOINT_SIZE: Final = 1024
#: the most commits one backfill may make: each writes a manifest listing every fragment,
#: so a tiny ``commit_granularity`` on a table of many fragments writes quadratic bytes
MAX_COMMITS: Final = 10_000
#: the largest count a request may give: Spark takes partition counts as Java ints
MAX_COUNT: Final = 2**31 - 1
_MINIMUMS: Final = {"checkpoint_size": MIN_CHECKPOINT_SIZE}
_IGNORED = (
    "intra_applier_concurrency",
    "min_checkpoint_size",
    "max_checkpoint_size",
    "batch_checkpoint_flush_interval_seconds",
    "manifest",
)


# -- helpers shared by both operations --------------------------------------------------------


def _value(model: Any, name: str) -> Any:
    """A request field's value, None when unset (the generated models use UNSET)."""
    value = getattr(model, name, None)
    return None if type(value).__name__ == "Unset" else value


def _table_id(request: Any) -> list[str]:
    table_id = _value(request, "id")
    if not table_id or not all(isinstance(part, str) and part for part in table_id):
        raise errors.InvalidInputError("the request needs the table's id")
    return list(table_id)


def _refuse_branch(request: Any, operation: str) -> None:
    branch = _value(request, "branch")
    if branch not in (None, "", "main"):
        raise errors.UnsupportedOperationError(
            f"{operation}: computed columns live on the main branch only (got branch {branch!r})"
        )


def _lance_message(exc: BaseException) -> str:
    """pylance's error text without the Rust source location, bounded."""
    text = _SOURCE_LOCATION.sub("", str(exc).strip())
    return text if len(text) <= 400 else text[:400] + "…"


def _sql_error(exc: BaseException, what: str) -> errors.LanceNamespaceError:
    """A SQL expression pylance refused, as the typed error a client can act on."""
    text = _lance_message(exc)
    if "No field named" in text:
        return errors.TableColumnNotFoundError(f"{what}: {text}")
    return errors.InvalidInputError(f"{what}: {text}")


def _check_sql(expression: Any, what: str) -> str:
    if not isinstance(expression, str) or not expression.strip():
        raise errors.InvalidInputError(f"{what} must be a non-empty SQL expression")
    if ";" in expression:  # Lance's parser would silently drop what follows
        raise errors.InvalidInputError(f"{what} must be one SQL expression (no ';')")
    return expression


async def _with_facade(ns: AsyncLanceNamespace, work: Callable[[SyncLanceNamespace], T]) -> T:
    """Run blocking pylance ``work`` on a worker thread with a sync facade of its own.

    pylance calls its namespace client back (DescribeTable, and CreateTableVersion on a
    ``managed_by=impl`` table): a connection of its own, with its own loop, keeps those
    calls off the loop this operation is answered on."""
    from .._facade.sync import connect_sync

    properties = dict(ns.config.properties)

    def run() -> T:
        with connect_sync(ns.impl_name, properties) as facade:
            return work(facade)

    return await anyio.to_thread.run_sync(run)


def _open(facade: SyncLanceNamespace, table_id: Sequence[str], version: int | None = None) -> Any:
    import lance

    location = str(facade.describe_table({"id": list(table_id)}).location or "")
    refuse_outside(facade.async_namespace, location, f"table {list(table_id)!r}")
    try:
        return lance.dataset(
            namespace_client=_client(facade), table_id=list(table_id), version=version
        )
    except errors.LanceNamespaceError:
        raise
    except ValueError as exc:
        if version is not None and "not found" in str(exc).lower():
            raise errors.TableVersionNotFoundError(
                f"version {version} of table {list(table_id)!r} not found"
            ) from None
        raise


def _client(facade: SyncLanceNamespace) -> Any:
    """The facade as pylance's namespace client (it is one; pylance's stubs name
    their own base class)."""
    return facade


def computed_expression(field: pa.Field) -> str | None:
    """The SQL expression of a computed column, None for any other column."""
    metadata = field.metadata or {}
    raw = metadata.get(COMPUTED_KEY.encode())
    return None if raw is None else raw.decode()


# -- AlterTableAddColumns with computed / virtual_column ---------------------------------------


async def alter_table_add_columns(ns: AsyncLanceNamespace, request: Any) -> Any:
    """Add computed columns all-null, their expressions checked, typed and recorded.

    Plain ``expression`` entries in the same request are refused: those are computed
    now by the backend's own AlterTableAddColumns, and one request must be one commit.
    ``virtual_column`` (a client's UDF, ``_udfs``) is refused with code 0 unless the
    operator set :data:`ALLOW_UDFS`; then it is added all-null, its UDF kept in the
    field's metadata (never run here) for AlterTableBackfillColumns to fill."""
    from ..models import AlterTableAddColumnsResponse

    table_id = _table_id(request)
    _refuse_branch(request, "AlterTableAddColumns")
    computed: dict[str, str] = {}
    virtual: dict[str, Any] = {}
    for entry in _value(request, "new_columns") or ():
        name = _value(entry, "name")
        if not isinstance(name, str) or not name.strip():
            raise errors.InvalidInputError("every new column needs a name")
        if name in computed or name in virtual:
            raise errors.InvalidInputError(f"new column {name!r} is named twice")
        if _value(entry, "virtual_column") is not None:
            if not _udfs.allowed(ns.config):
                raise _udfs.refused(f"new column {name!r} is a virtual_column: it")
            virtual[name] = _value(entry, "virtual_column")
            continue
        if _value(entry, "computed") is None:
            raise errors.InvalidInputError(
                f"new column {name!r}: send plain expression columns in their own "
                "AlterTableAddColumns; one request adds computed columns only"
            )
        computed[name] = _check_sql(_value(entry, "computed"), f"computed column {name!r}")
    if not computed and not virtual:
        raise errors.InvalidInputError("AlterTableAddColumns needs new columns")

    version = await _with_facade(
        ns, lambda facade: _add_computed(facade, table_id, computed, virtual)
    )
    return AlterTableAddColumnsResponse(version=version)


def _add_computed(
    facade: SyncLanceNamespace,
    table_id: list[str],
    columns: dict[str, str],
    virtual: Mapping[str, Any] | None = None,
) -> int:
    """Add the computed (and virtual) columns all-null in one metadata-only commit."""
    dataset = _open(facade, table_id)
    virtual = virtual or {}
    taken = [name for name in [*columns, *virtual] if dataset.schema.get_field_index(name) >= 0]
    if taken:
        raise errors.InvalidInputError(
            f"table {table_id!r} already has column(s) {taken}; pick other names"
        )
    fields = [virtual_field(name, entry, dataset.schema.names) for name, entry in virtual.items()]
    try:  # planned on zero rows: types found, nothing computed
        # (the row address: a scan of constants alone needs a column)
        planned = dataset.scanner(
            columns=dict(columns) or [], limit=0, with_row_address=True
        ).projected_schema
    except (ValueError, OSError, RuntimeError, NotImplementedError) as exc:
        raise _sql_error(exc, f"computed column(s) {sorted(columns)}") from None
    for name, expression in columns.items():
        data_type = planned.field(name).type
        if pa.types.is_null(data_type):
            raise errors.InvalidInputError(
                f"computed column {name!r}: {expression!r} has no type (cast it, e.g. "
                "CAST(NULL AS BIGINT))"
            )
        fields.append(pa.field(name, data_type, nullable=True, metadata={COMPUTED_KEY: expression}))
    dataset.add_columns(pa.schema(fields))
    return int(dataset.version)


# -- AlterTableBackfillColumns -----------------------------------------------------------------


async def alter_table_backfill_columns(ns: AsyncLanceNamespace, request: Any) -> Any:
    """Check the request, pin the version to read, and start the backfill job."""
    from ..models import AlterTableBackfillColumnsResponse

    job = await plan_backfill(ns, request)
    start_job = importlib.import_module(f"{__package__}._jobs").start_job  # helper "jobs"
    job_id = await start_job(
        ns, kind=JOB_KIND, table_id=job["id"], request=job, cluster=_value(request, "cluster")
    )
    return AlterTableBackfillColumnsResponse(job_id=job_id)


async def plan_backfill(ns: AsyncLanceNamespace, request: Any) -> dict[str, Any]:
    """The job's request (JSON-able) for an AlterTableBackfillColumns request.

    Everything a job would stumble on is refused here, before a job exists: an unknown
    table, column or version, a column that is not computed, a bad ``where``, counts
    below 1. The request is the job's as the client sent it (plus the column's
    expression), so sending it again matches the record of a cancelled or failed run and
    resumes it (the runner's rule); the version read is pinned by the job's first
    checkpoint."""
    table_id = _table_id(request)
    _refuse_branch(request, "AlterTableBackfillColumns")
    column = _value(request, "column")
    if not isinstance(column, str) or not column:
        raise errors.InvalidInputError("AlterTableBackfillColumns needs the column to fill")
    job: dict[str, Any] = {"id": table_id, "column": column}
    for name in _COUNTS:
        count = _value(request, name)
        if count is None:
            continue
        least = _MINIMUMS.get(name, 1)
        if isinstance(count, bool) or not isinstance(count, int) or not least <= count <= MAX_COUNT:
            raise errors.InvalidInputError(
                f"{name} must be an integer from {least} to {MAX_COUNT}, got {count!r}"
            )
        job[name] = count
    where = _value(request, "where")
    if where is not None:
        job["where"] = _check_sql(where, "where")
    read_version = _value(request, "read_version")
    if read_version is not None and (
        isinstance(read_version, bool) or not isinstance(read_version, int) or read_version < 0
    ):
        raise errors.InvalidInputError(f"read_version must be >= 0, got {read_version!r}")
    if read_version is not None:
        job["read_version"] = read_version
    job["expression"] = await _with_facade(ns, lambda facade: _plan(facade, job, read_version))
    if job["expression"] is None and not _udfs.allowed(ns.config):
        raise _udfs.refused(f"column {column!r} is a virtual_column: filling it")
    return job


def _plan(facade: SyncLanceNamespace, job: Mapping[str, Any], version: int | None) -> str | None:
    """The column's expression (None: a virtual column, filled by its UDF), the request
    checked against the table at ``version``."""
    dataset = _open(facade, job["id"], version)
    column = job["column"]
    index = dataset.schema.get_field_index(column)
    if index < 0:
        raise errors.TableColumnNotFoundError(
            f"table {job['id']!r} has no column {column!r}; it has {dataset.schema.names}"
        )
    granularity = job.get("commit_granularity")
    if granularity is not None:
        fragments = min(len(dataset.get_fragments()), job.get("num_frags") or MAX_COUNT)
        if -(-fragments // granularity) > MAX_COMMITS:
            raise errors.InvalidInputError(
                f"commit_granularity {granularity} would make {-(-fragments // granularity)} "
                f"commits over {fragments} fragments (at most {MAX_COMMITS}): give a larger one"
            )
    expression = computed_expression(dataset.schema.field(index))
    virtual = virtual_spec(dataset.schema.field(index)) is not None
    if expression is None and not virtual:
        raise errors.InvalidInputError(
            f"column {column!r} is not computed (add it with AlterTableAddColumns "
            "`computed`); only computed columns are backfilled"
        )
    projection = {} if expression is None else {"value": expression}
    if job.get("where") is not None:
        projection["match"] = job["where"]
    if not projection:
        return expression
    try:
        planned = dataset.scanner(
            columns=projection, limit=0, with_row_address=True
        ).projected_schema
    except (ValueError, OSError, RuntimeError, NotImplementedError) as exc:
        raise _sql_error(exc, f"backfill of {column!r}") from None
    if "match" in projection and not pa.types.is_boolean(planned.field("match").type):
        raise errors.InvalidInputError(f"where must be a condition, got {job['where']!r}")
    return expression


# -- the job body --------------------------------------------------------------------------------


def _chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def run_backfill(control: JobControl, request: Mapping[str, Any]) -> int:
    """Fill a computed column on Spark, committing every ``commit_granularity`` fragments.

    ``request`` is the job's (see :func:`alter_table_backfill_columns`): ``id``,
    ``column``, ``expression``, optional ``read_version``, ``where`` and counts (without
    ``read_version``: the one an earlier run checkpointed, else the latest).
    Returns the version of the last commit (the current one when nothing was left).

    The groups' Spark jobs overlap (:class:`_GroupJobs`, :data:`LOOKAHEAD` at once): the
    next group's tasks take the cores the current group's last task and its commit
    leave idle. Commits stay one per group, in order, each followed by its checkpoint."""
    started = time.perf_counter()
    timings = {"planning": 0.0, "tasks": 0.0, "commits": 0.0, "groups": 0.0}
    facade = control.namespace()
    table_id = list(request["id"])
    pinned = request.get("read_version", control.checkpoints.get(READ_AT))
    read = _open(facade, table_id, None if pinned is None else int(pinned))
    read_version = int(read.version)
    fragments = sorted(int(fragment.fragment_id) for fragment in read.get_fragments())
    if request.get("num_frags"):
        fragments = fragments[: int(request["num_frags"])]
    done = {int(f) for f in control.checkpoints.get(DONE, "").split(",") if f}
    todo = [f for f in fragments if f not in done]
    total = len(fragments)
    control.progress(len(done.intersection(fragments)), total)

    spec = json.dumps(
        {
            "impl": control.impl,
            "properties": dict(control.properties),
            **{k: request[k] for k in request if k != "properties"},
            "read_version": read_version,
        }
    )
    per_task = int(request.get("task_size") or 0)
    per_commit = int(request.get("commit_granularity") or DEFAULT_COMMIT_GRANULARITY)
    concurrency = request.get("concurrency")
    context = control.spark.sparkContext
    version = int(_open(facade, table_id).version)
    timings["planning"] = time.perf_counter() - started
    tag = f"bf-{uuid.uuid4().hex[:12]}-"  # names this run's files, to clean up after it
    committed: set[str] = set()
    fill = functools.partial(_fill_fragments, spec, tag)
    # default: a group spread evenly over the cluster's cores, one task each
    cores = max(1, int(context.defaultParallelism))
    groups = list(_chunks(todo, per_commit))
    jobs = _GroupJobs(control, context, fill)
    try:
        for index, group in enumerate(groups):
            control.raise_if_cancelled()
            for ahead in range(index, min(index + LOOKAHEAD, len(groups))):
                size = per_task or -(-len(groups[ahead]) // cores)
                tasks = list(_chunks(groups[ahead], size))
                jobs.submit(ahead, tasks, min(len(tasks), int(concurrency or len(tasks))))
            step = time.perf_counter()
            written = jobs.result(index)
            timings["tasks"] += time.perf_counter() - step
            step = time.perf_counter()
            version = _commit(facade, table_id, read_version, written)
            committed.update(name for _, name in written)
            timings["commits"] += time.perf_counter() - step
            timings["groups"] += 1
            done.update(group)
            control.checkpoint(
                {DONE: ",".join(str(f) for f in sorted(done)), READ_AT: str(read_version)}
            )
            control.progress(len(done.intersection(fragments)), total)
    except BaseException:
        jobs.stop()  # no task of this run still writing when its files are deleted
        _delete_uncommitted(facade, table_id, tag, committed)
        raise
    finally:
        jobs.close()
    LAST_TIMINGS.clear()
    LAST_TIMINGS.update(timings)
    logger.info("backfill %s of %s: %s", control.job_id, table_id, timings)
    return version


class _GroupJobs:
    """The Spark jobs of one run's commit groups, each in a job group of its own.

    Each job is submitted from a thread of its own (Spark runs a driver's concurrent jobs;
    FIFO scheduling gives the earlier group's tasks the cores first), so the driver
    commits a group while the next one computes. A watcher polls the job's cancellation
    (and :meth:`stop`) and cancels every group submitted so far, again each time: a job
    may be submitted after the cancel. A cancelled job's tasks are interrupted."""

    def __init__(self, control: JobControl, context: Any, fill: Callable[[list[int]], Any]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._control, self._context, self._fill = control, context, fill
        self._pool = ThreadPoolExecutor(LOOKAHEAD, thread_name_prefix=f"{control.job_id}-group")
        self._futures: dict[int, Future[list[Any]]] = {}
        self._stopping = threading.Event()
        self._finished = threading.Event()
        self._watcher = threading.Thread(
            target=self._watch, name=f"cancel-{control.job_id}", daemon=True
        )
        self._watcher.start()

    def _group(self, index: int) -> str:
        return f"{self._control.job_id}-{index}"

    def submit(self, index: int, tasks: list[list[int]], slices: int) -> None:
        """Start group ``index``'s job (``tasks``: fragment ids per task), once."""
        from pyspark import inheritable_thread_target

        if index in self._futures:
            return

        def run() -> list[Any]:
            if self._stopping.is_set():
                return []
            context = self._context
            context.setJobGroup(
                self._group(index), f"backfill {self._control.job_id} group {index}", True
            )
            found: list[Any] = context.parallelize(tasks, slices).map(self._fill).collect()
            return found

        inherit = inheritable_thread_target(self._control.spark)  # the caller's local properties
        self._futures[index] = self._pool.submit(inherit(run))

    def result(self, index: int) -> list[tuple[int, str]]:
        """Group ``index``'s written files (waits for its job); typed when it failed."""
        from ._control import JobCancelled

        try:
            found = self._futures[index].result()
            self._control.raise_if_cancelled()  # finished anyway: nothing more is committed
        except JobCancelled:
            raise
        except Exception as exc:
            if self._control.is_cancelled():
                self.stop()
                raise JobCancelled(f"job {self._control.job_id} was cancelled") from None
            typed = _udfs.typed_task_error(exc)  # a UDF's failure, as its task named it
            if typed is not None:
                raise typed from None
            raise
        return [pair for pairs in found for pair in pairs]

    def _watch(self) -> None:
        while not self._finished.is_set():
            if self._stopping.is_set() or self._control.is_cancelled():
                for index in list(self._futures):
                    self._context.cancelJobGroup(self._group(index))
            self._finished.wait(0.2)

    def stop(self) -> None:
        """Cancel every submitted job and wait (bounded) until none of its tasks runs."""
        self._stopping.set()
        for index, future in list(self._futures.items()):
            self._context.cancelJobGroup(self._group(index))
            # stopped on purpose: the run's own error is the one raised
            with contextlib.suppress(BaseException):
                future.result(timeout=60)
            _wait_until_stopped(self._context, self._group(index))

    def close(self) -> None:
        self._finished.set()
        self._watcher.join()
        self._pool.shutdown(wait=True)


def _wait_until_stopped(context: Any, group: str, *, timeout: float = 60.0) -> None:
    """Wait (bounded) until no task of the job group ``group`` is still running."""
    tracker = context.statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        active = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                stage = tracker.getStageInfo(stage_id)
                active += stage.numActiveTasks if stage is not None else 0
        if not active:
            return
        time.sleep(0.1)


def _delete_uncommitted(
    facade: SyncLanceNamespace, table_id: list[str], tag: str, committed: set[str]
) -> None:
    """Delete this run's data files (named ``tag``...) that none of its commits took
    (nor the latest version, should a commit have landed and still raised): what a
    failed or cancelled group wrote. Only this run writes files so named, so no other
    version can reference them. Best effort: a failure here never hides the run's own
    error."""
    import lance
    from pyarrow import fs

    from .._storage.places import as_uri

    try:
        location = str(facade.describe_table({"id": table_id}).location).rstrip("/")
        latest = lance.dataset(namespace_client=_client(facade), table_id=table_id)
        referenced = {
            data_file.path
            for fragment in latest.get_fragments()
            for data_file in fragment.data_files()
        }
        filesystem, root = fs.FileSystem.from_uri(as_uri(location))
        listed = filesystem.get_file_info(fs.FileSelector(f"{root.rstrip('/')}/data"))
        for info in listed:
            name = info.base_name
            if name.startswith(tag) and name not in referenced and name not in committed:
                filesystem.delete_file(info.path)
    except Exception:  # the run's own error is the one to report
        logger.warning("backfill: could not delete the uncommitted files of %s", tag)


def _commit(
    facade: SyncLanceNamespace,
    table_id: list[str],
    read_version: int,
    written: list[tuple[int, str]],
) -> int:
    """One DataReplacement of the written files, through the namespace.

    Committed as read at ``read_version``, so Lance checks it against every commit since
    the rows were read: appends and deletes rebase (appended rows stay null; deleted
    rows stay deleted), a rewrite of a filled fragment's rows (update, merge-insert)
    preempts it, which is a ConcurrentModificationError (the table keeps its last
    commit; a new backfill reads the latest version)."""
    import lance
    from lance.commit import CommitConflictError
    from lance.fragment import DataFile

    described = facade.describe_table({"id": table_id})
    latest = _open(facade, table_id)
    if not written:
        return int(latest.version)
    managed = described.managed_versioning is True
    groups = [
        lance.LanceOperation.DataReplacementGroup(fragment_id, DataFile.create(latest, name))
        for fragment_id, name in written
    ]
    options = _storage_options(described)
    try:
        committed = lance.LanceDataset.commit(
            str(described.location),
            lance.LanceOperation.DataReplacement(groups),
            read_version=read_version,
            storage_options=options or None,
            namespace_client=_client(facade) if managed else None,
            table_id=table_id if managed else None,
            namespace_client_managed_versioning=managed,
        )
    except CommitConflictError as exc:
        raise errors.ConcurrentModificationError(
            f"backfill of table {table_id!r}: rows read at version {read_version} were "
            f"rewritten since ({_lance_message(exc)}); backfill again to read the latest"
        ) from None
    return int(committed.version)


def _storage_options(described: Any) -> dict[str, str]:
    options = _value(described, "storage_options")
    return {str(k): str(v) for k, v in (options.to_dict() if options else {}).items()}


# -- on the executors ------------------------------------------------------------------------------


def _fill_fragments(spec_text: str, tag: str, fragment_ids: list[int]) -> list[tuple[int, str]]:
    """Spark task: compute the column for whole fragments; one new data file each.

    Returns ``(fragment id, data file name)`` pairs; the driver commits them. A fragment
    gone from the read version (never, unless the request was edited) is skipped."""
    from ..spark._threads import size_lance_pools

    size_lance_pools()  # before Lance's runtime first starts in this worker
    import lance

    from ..spark._table import cached_namespace

    spec = json.loads(spec_text)
    backend = cached_namespace(spec["impl"], spec["properties"])
    described = backend.describe_table({"id": spec["id"]})
    options = _storage_options(described) or None
    location = str(described.location).rstrip("/")
    refuse_outside(backend.async_namespace, location, f"table {spec['id']!r}")
    dataset = lance.dataset(location, version=int(spec["read_version"]), storage_options=options)
    field = dataset.schema.field(spec["column"])
    written: list[tuple[int, str]] = []
    for fragment_id in fragment_ids:
        fragment = dataset.get_fragment(fragment_id)
        if fragment is None:
            continue
        values = _compute(fragment, field, spec)
        name = f"{tag}{uuid.uuid4().hex}.lance"
        _write_column(f"{location}/data/{name}", field, values, dataset, options)
        written.append((fragment_id, name))
    return written


def _compute(fragment: Any, field: pa.Field, spec: Mapping[str, Any]) -> pa.Array:
    """The column's values for every physical row of ``fragment`` (deleted rows null)."""
    import numpy as np
    import pyarrow.compute as pc

    udf = virtual_spec(field)
    inputs: list[str] = [] if udf is None else list(udf["input_columns"])
    if udf is None:
        projection = {"value": spec["expression"]}
    else:  # the UDF's inputs, under names nothing else here uses
        projection = {f"__lna_in_{i}": _quoted(c) for i, c in enumerate(inputs)}
    where = spec.get("where")
    if where is not None:
        projection["match"] = where
        projection["current"] = _quoted(field.name)
    physical = int(fragment.physical_rows)
    deleted = fragment.count_rows() != physical
    table = fragment.scanner(
        columns=projection,
        with_row_address=True,  # a scan of constants alone needs a column
        batch_size=spec.get("checkpoint_size"),
    ).to_table()
    if udf is None:
        values = table.column("value").cast(field.type)
    else:
        named = pa.table([table.column(f"__lna_in_{i}") for i in range(len(inputs))], inputs)
        values = _udfs.apply(_udfs.load(udf), udf, named, field)
    if where is not None:
        matched = pc.fill_null(table.column("match"), False)
        values = pc.if_else(matched, values, table.column("current").cast(field.type))
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if not deleted:
        return values
    offsets = pc.bit_wise_and(table.column("_rowaddr"), pa.scalar(0xFFFFFFFF, pa.uint64()))
    positions = np.full(physical, -1, dtype=np.int64)
    positions[offsets.to_numpy()] = np.arange(len(table), dtype=np.int64)
    return values.take(pa.array(positions, mask=positions < 0))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _write_column(
    path: str, field: pa.Field, values: pa.Array, dataset: Any, options: dict[str, str] | None
) -> None:
    from lance.file import LanceFileWriter

    schema = pa.schema([field])
    with LanceFileWriter(
        path, schema, version=dataset.data_storage_version, storage_options=options
    ) as writer:
        writer.write_batch(pa.record_batch([values], schema=schema))
