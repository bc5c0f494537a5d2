"""The directory backend's data, index, tag, branch, version and schema operations.

The catalog operations of :class:`~.directory.DirectoryNamespace` are written out
in ``_namespaces`` and ``_tables``, where our semantics go beyond pylance's. Every other operation
of the operation table that pylance's Rust ``DirectoryNamespace`` implements is
handed to it here, request and Arrow body as pylance takes them (a JSON-shaped
dict, IPC stream bytes), so the table on disk is exactly the one pylance writes
(UpdateFieldMetadata, which it lacks, is done on the dataset here; its lacking
BatchCreateTableVersions and BatchCommitTables are in ``_batch``),
and its answer is turned into our response model (bare answers: the row count,
the plan text, the IPC file, wrapped as the operation table says). The table id
is checked first, and a TableNotFound whose parent namespace is missing becomes
NamespaceNotFound, like the catalog operations.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .._core import pipeline_hook
from .._core.operations import OPERATIONS, Operation
from ._core import drop_nones

if TYPE_CHECKING:
    from .._core.arrow_data import ArrowData
    from .._core.identifiers import Identifier
    from ._core import DirectoryCore

__all__ = ["install_pylance_operations"]


async def _call_pylance(
    namespace: DirectoryCore, operation: Operation, request: Any, data: ArrowData | None
) -> Any:
    from .. import errors
    from .._core.base import json_data
    from ._branches import PYLANCE_READS_BRANCH, branch_of, check_ref_names, on_branch

    body: dict[str, Any] = json_data(request)
    if isinstance(body.get("storage_options"), dict):  # CreateTable's, on pylance's write
        namespace.tables.refuse_request_options(body["storage_options"])
    table = None
    if "id" in operation.path_params and operation.path.startswith("/v1/table/"):
        table = namespace._table_id(body.get("id"))
        body["id"] = list(table)
    query = body.get("query") if operation.operation_id == "ExplainTableQueryPlan" else body
    check_ref_names(operation.operation_id, body)
    branch = branch_of(body) or (branch_of(query) if isinstance(query, dict) else None)
    if branch is not None and operation.operation_id not in PYLANCE_READS_BRANCH:
        # pylance would act on main: on the branch here, or refused (never main)
        if table is None:
            raise errors.UnsupportedOperationError(f"{operation.operation_id} on a branch")
        answer = await on_branch(namespace, operation.operation_id, body, table, data)
        return _answer(operation, answer)
    if (
        operation.operation_id in _QUERIES
        and isinstance(query, dict)
        and query.get("vector") is None
    ):
        query["vector"] = {}  # pylance wants the object even for a plain scan
    inner = await namespace._rust()
    function = getattr(inner, operation.method, None)
    if function is None or not _pylance_runs(operation.method):
        raise namespace._unsupported(operation.operation_id)
    arguments: tuple[Any, ...] = (body,) if data is None else (body, data.to_bytes())
    if operation.operation_id == "CreateTable" and data is not None:
        # pylance writes a table into a namespace that does not exist (and no listing
        # shows it), and refuses a stream without batches as an internal error
        if table is not None and len(table) > 1:
            await namespace._require_namespace(table[:-1])
            created = await namespace._create_own_table(table, body, data)
            if created is not None:
                return _answer(operation, created)
        arguments = (body, await namespace._run(_with_a_batch, arguments[1]))
    try:
        with namespace._own_not_found_words(body.get("id"), operation.method):
            if table is not None and namespace.tables.confinement.enabled:
                result = await _confined_call(namespace, operation, table, function, arguments)
            else:
                result = await namespace._run(function, *arguments)
    except errors.TableNotFoundError as exc:
        if table is not None:
            await namespace._require_namespace(table[:-1])
        if branch is not None and f"branch {branch!r} not found" in str(exc):
            # pylance's words for a missing branch of an existing table
            raise errors.TableBranchNotFoundError(str(exc)) from None
        raise
    return _answer(operation, result)


#: a confined call whose table's location pylance must be asked for first
_UNKNOWN = object()


async def _confined_call(
    namespace: DirectoryCore,
    operation: Operation,
    table: Identifier,
    function: Any,
    arguments: tuple[Any, ...],
) -> Any:
    """pylance's ``function`` once the table's location passed the confinement: checked
    in the same worker-thread hop when the manifest copy knows it, else first."""
    what = operation.operation_id

    def checked_then_called() -> Any:
        if not namespace._confine_known(table, what):
            return _UNKNOWN
        return function(*arguments)

    result = await namespace._run(checked_then_called)
    if result is _UNKNOWN:
        await namespace._confine_table(table, what)
        result = await namespace._run(function, *arguments)
    return result


def _with_a_batch(stream: bytes) -> bytes:
    """``stream``, or when it holds no batch, its schema with one empty batch (pylance
    then creates the empty table, as the catalog backends do)."""
    import pyarrow as pa

    reader = pa.ipc.open_stream(pa.BufferReader(stream))
    for _ in reader:
        return stream
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, reader.schema) as writer:
        writer.write_batch(pa.RecordBatch.from_pylist([], schema=reader.schema))
    return bytes(sink.getvalue().to_pybytes())


_QUERIES = frozenset({"QueryTable", "AnalyzeTableQueryPlan", "ExplainTableQueryPlan"})


def _answer(operation: Operation, result: Any) -> Any:
    kind = operation.response_body
    if kind == "arrow":
        return bytes(result)
    model = operation.response_class()
    if kind in ("integer", "string"):
        return model.from_dict({operation.response_field: result})
    return model.from_dict(drop_nones(dict(result or {})))


async def _update_field_metadata(namespace: DirectoryCore, request: Any) -> Any:
    """UpdateFieldMetadata, which pylance's DirectoryNamespace lacks: on the dataset
    (:func:`~.._storage.requests.update_field_metadata`, shared with the catalog backends).
    """
    from .. import errors
    from .._core.base import json_data
    from .._storage.requests import update_field_metadata
    from ..models import UpdateFieldMetadataResponse

    body: dict[str, Any] = json_data(request)
    table = namespace._table_id(body.get("id"))
    if body.get("branch"):
        raise errors.UnsupportedOperationError("UpdateFieldMetadata on a branch")
    location = await namespace._describe_location(table)
    dataset = await namespace.tables.require(location)
    updates = body.get("updates") or []
    answer = await namespace._run(update_field_metadata, dataset, updates)
    return UpdateFieldMetadataResponse.from_dict(answer)


async def _build_index(namespace: DirectoryCore, request: Any, operation_id: str) -> Any:
    """CreateTableIndex / CreateTableScalarIndex on the table itself: pylance's
    DirectoryNamespace drops the build parameters (num_partitions, num_sub_vectors,
    num_bits, m, ...), so the index is built with :func:`index_builder`, as on the
    catalog backends."""
    from .._core.base import json_data
    from .._core.operations import OPERATIONS_BY_ID
    from .._storage.indexes import index_builder
    from ._branches import refuse_branch

    body: dict[str, Any] = json_data(request)
    table = namespace._table_id(body.get("id"))
    refuse_branch(body, operation_id)
    await namespace._confine_table(table, operation_id)
    location = await namespace._describe_location(table)
    dataset = await namespace.tables.require(location)
    build = index_builder(dataset, body, operation_id)
    with namespace._storage_context():
        await namespace._run(build)
    return OPERATIONS_BY_ID[operation_id].response_class().from_dict({})


async def _create_table_index(namespace: DirectoryCore, request: Any) -> Any:
    return await _build_index(namespace, request, "CreateTableIndex")


async def _create_table_scalar_index(namespace: DirectoryCore, request: Any) -> Any:
    return await _build_index(namespace, request, "CreateTableScalarIndex")


async def _batch_create_table_versions(namespace: DirectoryCore, request: Any) -> Any:
    from ._batch import batch_create_table_versions

    return await batch_create_table_versions(namespace, request)


async def _batch_commit_tables(namespace: DirectoryCore, request: Any) -> Any:
    from ._batch import batch_commit_tables

    return await batch_commit_tables(namespace, request)


#: what this module implements itself, beyond pylance's DirectoryNamespace
_OWN = {
    "update_field_metadata": _update_field_metadata,
    # every build parameter honoured (pylance's operation drops them)
    "create_table_index": _create_table_index,
    "create_table_scalar_index": _create_table_scalar_index,
    # all-or-none batches on the files of the tables (_batch)
    "batch_create_table_versions": _batch_create_table_versions,
    "batch_commit_tables": _batch_commit_tables,
}


#: operations pylance's DirectoryNamespace has a method for that may answer "not
#: implemented" (the lance-namespace trait's defaults, which pylance 14.0.2 keeps for
#: these three): asked of the pylance installed (:func:`_pylance_unimplemented`)
_MAYBE_DEFAULTED = frozenset(
    {"create_materialized_view", "refresh_materialized_view", "alter_table_backfill_columns"}
)


def _pylance_runs(method: str) -> bool:
    """Whether pylance's DirectoryNamespace really runs ``method``: it has the method,
    and calling it does not answer "not implemented" (:func:`_pylance_unimplemented`)."""
    from lance.lance import PyDirectoryNamespace  # type: ignore[attr-defined]

    if not hasattr(PyDirectoryNamespace, method):
        return False
    return method not in _MAYBE_DEFAULTED or method not in _pylance_unimplemented()


@functools.cache
def _pylance_unimplemented() -> frozenset[str]:
    """Which of ``_MAYBE_DEFAULTED`` pylance's DirectoryNamespace answers "not
    implemented" (pylance 14.0.2: all three), found by calling each once, in a directory
    of its own, with a request holding every field the spec requires (pylance reads the
    request before its default answers): the answer of the pylance installed, so an
    upgrade that implements one lists it with no change here (tens of milliseconds,
    once per process)."""
    import tempfile

    from lance.namespace import DirectoryNamespace

    from .._core.request_samples import sample_request

    found: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="lance-ns-probe-") as place:
        inner = DirectoryNamespace(root=place)._inner  # type: ignore[no-untyped-call]
        for operation in OPERATIONS:
            if operation.method not in _MAYBE_DEFAULTED:
                continue
            function = getattr(inner, operation.method, None)
            if function is None:
                continue
            body = sample_request(operation.request_model, ["probe"])
            try:
                function(body, b"") if operation.takes_data else function(body)
            except NotImplementedError:
                found.add(operation.method)
            except Exception:  # any other answer: pylance ran it
                continue
    return frozenset(found)


def install_pylance_operations(cls: type[DirectoryCore]) -> None:
    """A ``_<operation>`` on ``cls`` for each operation it lacks, handed to pylance.

    Whether pylance runs an operation is asked only when it is called (or listed),
    so importing the backend does not import pylance.
    """
    from .._core.base import AsyncLanceNamespace

    # the backend's own classes (its operations are spread over mixins), not the base's
    backend = [k for k in cls.__mro__ if issubclass(k, AsyncLanceNamespace)]
    backend.remove(AsyncLanceNamespace)
    handed: set[str] = set()
    for operation in OPERATIONS:
        name = f"_{operation.method}"
        if any(name in vars(k) for k in backend):
            continue
        own = _OWN.get(operation.method)
        if own is not None:
            setattr(cls, name, own)
            continue
        handed.add(operation.method)
        if operation.takes_data:

            async def call_with_data(
                self: DirectoryCore, request: Any, data: ArrowData, _op: Operation = operation
            ) -> Any:
                return await _call_pylance(self, _op, request, data)

            setattr(cls, name, call_with_data)
        else:

            async def call(self: DirectoryCore, request: Any, _op: Operation = operation) -> Any:
                return await _call_pylance(self, _op, request, None)

            setattr(cls, name, call)
    listed = cls.list_operations

    def list_operations(klass: type[DirectoryCore]) -> list[str]:
        """The operations implemented here, by pylance's DirectoryNamespace, or by the
        pipeline (:mod:`.._core.pipeline_hook`, which takes them before pylance would)."""
        pipeline = pipeline_hook.available()
        return [
            m
            for m in listed()
            if m not in handed or (pipeline and m in pipeline_hook.METHODS) or _pylance_runs(m)
        ]

    cls.list_operations = classmethod(list_operations)  # type: ignore[method-assign,assignment]
