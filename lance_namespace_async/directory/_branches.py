"""Operations addressed to a branch (``branch`` set) on the directory backend.

pylance 14.0.2's Rust ``DirectoryNamespace`` reads ``branch`` in a few operations only
(CountTableRows, GetTableStats, DescribeTableVersion) and ignores it in the others: an
InsertIntoTable, MergeInsertIntoTable, UpdateTable, DeleteFromTable or
UpdateTableSchemaMetadata "on dev" changed main, a RestoreTable "on dev" rolled main back,
and a QueryTable "on dev" answered main's rows. So here:

* those writes and QueryTable act on the branch through pylance's Python API (the
  table's dataset checked out at ``(branch, version)``, which writes to the branch);
* the operations pylance reads the branch in go to pylance (:data:`PYLANCE_READS_BRANCH`);
* every other operation with a branch is refused (UnsupportedOperationError, code 0,
  naming the operation): never main.

``main`` (and an empty name) is the table's main line. Branch and tag names are checked
first (:func:`check_ref_names`): a name pylance cannot hold as a path (``.``, ``a//b``,
5,000 characters) is code 13, not its internal error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import errors
from .._storage.ref_names import branch_of, check_ref_names
from .._storage.requests import merge_insert

if TYPE_CHECKING:
    from .._core.arrow_data import ArrowData
    from ._core import DirectoryCore

__all__ = [
    "BRANCH_OPERATIONS",
    "PYLANCE_READS_BRANCH",
    "branch_of",
    "check_ref_names",
    "on_branch",
    "refuse_branch",
]

#: operations pylance's DirectoryNamespace runs on the named branch (checked at runtime)
PYLANCE_READS_BRANCH = frozenset({"CountTableRows", "GetTableStats", "DescribeTableVersion"})


def refuse_branch(body: Mapping[str, Any], operation_id: str) -> None:
    """Refuse an operation that cannot act on a branch when the request names one."""
    check_ref_names(operation_id, body)
    if branch_of(body) is not None:
        raise errors.UnsupportedOperationError(f"{operation_id} on a branch")


async def on_branch(
    namespace: DirectoryCore,
    operation_id: str,
    body: dict[str, Any],
    table: Any,
    data: ArrowData | None,
) -> Any:
    """Run ``operation_id`` on the branch ``body`` names; its answer as a JSON dict (or
    the IPC file of QueryTable)."""
    run = BRANCH_OPERATIONS.get(operation_id)
    if run is None:
        raise errors.UnsupportedOperationError(f"{operation_id} on a branch")
    branch = branch_of(body)
    assert branch is not None
    location = await namespace._describe_location(table)
    dataset = await namespace.tables.require(location)
    version = body.get("version") if operation_id == "QueryTable" else None
    if version is not None and (type(version) is not int or not 0 <= version < 2**63):
        raise errors.InvalidInputError(f"version must be an integer >= 0, got {version!r}")
    rows = None if data is None else await namespace._run(data.read_all)

    def work() -> Any:
        try:
            checked_out = dataset.checkout_version((branch, version))
        except (ValueError, OSError) as exc:
            if "not found" in str(exc).lower():
                raise errors.TableBranchNotFoundError(
                    f"branch {branch!r} of table {'.'.join(table)} not found"
                ) from None
            raise
        return run(checked_out, body, rows)

    return await namespace._run(work)


def _insert(dataset: Any, body: Mapping[str, Any], rows: Any) -> dict[str, Any]:
    import lance

    mode = str(body.get("mode") or "append").lower()
    if mode not in ("append", "overwrite"):
        raise errors.InvalidInputError(
            f"InsertIntoTable mode must be append or overwrite, got {mode!r}"
        )
    written = lance.write_dataset(rows, dataset, mode=mode)
    return {"num_inserted_rows": rows.num_rows, "version": int(written.version)}


def _update(dataset: Any, body: Mapping[str, Any], rows: Any) -> dict[str, Any]:
    updates = body.get("updates") or []
    if not updates or not all(isinstance(u, list) and len(u) == 2 for u in updates):
        raise errors.InvalidInputError("UpdateTable updates are [column, expression] pairs")
    result = dataset.update({str(c): str(e) for c, e in updates}, where=body.get("predicate"))
    return {
        "updated_rows": int(result.get("num_rows_updated", 0)),
        "version": int(dataset.latest_version),
    }


def _delete(dataset: Any, body: Mapping[str, Any], rows: Any) -> dict[str, Any]:
    predicate = body.get("predicate")
    if not isinstance(predicate, str) or not predicate.strip():
        raise errors.InvalidInputError("DeleteFromTable needs a predicate")
    dataset.delete(predicate)
    return {"version": int(dataset.latest_version)}


def _schema_metadata(dataset: Any, body: Mapping[str, Any], rows: Any) -> dict[str, Any]:
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        raise errors.InvalidInputError("UpdateTableSchemaMetadata needs a metadata object")
    dataset.update_schema_metadata(metadata)
    schema = dataset.schema
    return {"metadata": {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}}


def _query(dataset: Any, body: Mapping[str, Any], rows: Any) -> bytes:
    from .._core.arrow_data import ipc_file_bytes
    from ._query import scanner_arguments

    query = {k: v for k, v in body.items() if k not in ("branch", "id")}
    mapped = scanner_arguments(query)
    if mapped is None:
        raise errors.UnsupportedOperationError(
            "QueryTable on a branch supports vector and plain scans with filter, columns, "
            "k, offset and the vector search parameters"
        )
    arguments, column = mapped
    if column is not None and column not in dataset.schema.names:
        raise errors.InvalidInputError(f"vector_column {column!r} is not a column of the table")
    return ipc_file_bytes(dataset.scanner(**arguments).to_table())


#: what runs on the checked-out branch, by operation
BRANCH_OPERATIONS = {
    "InsertIntoTable": _insert,
    "MergeInsertIntoTable": merge_insert,
    "UpdateTable": _update,
    "DeleteFromTable": _delete,
    "UpdateTableSchemaMetadata": _schema_metadata,
    "QueryTable": _query,
}
