"""BatchCommitTables of ``managed_by=impl`` tables: one Iceberg CommitTransaction.

The catalog holds the version of an implementation-managed table (:mod:`._managed`),
so a batch that advances several of them is all-or-none only if the catalog advances
them together. The Iceberg REST spec's CommitTransaction
(``POST /v1/{prefix}/transactions/commit``) does that: one request carrying each
table's UpdateTable (its ``assert-ref-snapshot-id`` = the version its writer started
from, ``assert-table-uuid``, and the snapshot of the new version). The catalog checks
every requirement before it changes anything, so a table another writer advanced
fails the whole transaction with 409 (ConcurrentModification, 14) and every table
stays where it was.

The Lance side follows the catalog, as a single CreateTableVersion does: each
version's manifest is staged by its writer (``_versions/<final>.manifest-<uuid>``),
checked before the catalog is asked, and renamed to its final name only after the
transaction committed. Nothing is written before that, so a refused transaction
leaves storage as it was: the writer's staged files are the writer's (a staged name
is never a version to Lance; pylance writes a fresh one when it retries). A commit
whose answer was lost leaves staged manifests that the catalog may have accepted: the
snapshots record their staged names (``lance-staged``) and the next DescribeTable
finishes the renames (:func:`._managed._finish_lost_rename`).

A batch may mix them with operations on storage-managed tables (declares, their version
records and deletions, deregisters): those are applied by the storage batch of
:mod:`.._storage.version_batches`, in order and with undo steps, and the catalog's
transaction comes last (:data:`~.._storage.version_batches.Elsewhere`), so a refused
transaction undoes them and a failed storage operation means the catalog is never
asked. The guarantee is then the storage batch's: a reader may see a storage
operation of a batch that is later undone, never the outcome of a failed batch. A
managed table gets one version per batch, and no other operation of the batch may
name it (InvalidInput, 13: the transaction's place in the order is last); all of
them are in one warehouse (one catalog).

A catalog without the route (404 without an Iceberg error type, 405 or 501) is
noted once per backend object, with one warning in the log; from then on a batch of
one managed table is committed with UpdateTable (atomic by itself), and a batch of
several is refused with UnsupportedOperation (0): sequential UpdateTables would show
readers a half-applied batch and could not always be undone.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import attrs

from .. import errors
from .._core.base import json_data
from .._core.identifiers import Identifier
from .._storage.version_batches import batch_commit_tables
from ._managed import ManagedIcebergVersions, _finalize, _require_file, _staged_manifest
from ._mapping import snapshot_updates

__all__ = ["ManagedIcebergBatches"]

logger = logging.getLogger("lance_namespace_async.iceberg")

#: statuses of a catalog that does not serve CommitTransaction at all
_NO_ROUTE = frozenset({404, 405, 501})
#: Iceberg error types of a 404 that is about the request's tables, not the route
_MISSING_THINGS = frozenset({"NoSuchTableException", "NoSuchNamespaceException"})


@attrs.frozen
class _Change:
    """One table's new version in the transaction, checked."""

    index: int
    table: list[str]
    levels: Identifier
    name: str
    metadata: dict[str, Any]
    version: int
    staged: str
    final: str

    @property
    def expected(self) -> int | None:
        return self.version - 1 if self.version > 1 else None

    def body(self) -> dict[str, Any]:
        """The table's UpdateTableRequest inside the CommitTransactionRequest."""
        location = str(self.metadata.get("location") or "")
        requirements: list[dict[str, Any]] = [
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": self.expected}
        ]
        if self.metadata.get("table-uuid"):
            requirements.append({"type": "assert-table-uuid", "uuid": self.metadata["table-uuid"]})
        return {
            "identifier": {"namespace": list(self.levels), "name": self.name},
            "requirements": requirements,
            "updates": snapshot_updates(
                self.version,
                location,
                manifest=f"_versions/{os.path.basename(self.final)}",
                staged=os.path.basename(self.staged),
            ),
        }


def _table_named(item: Any) -> tuple[str, ...] | None:
    """The table id an operation of a batch names (None for a malformed one)."""
    if not isinstance(item, dict):
        return None
    for body in item.values():
        if isinstance(body, dict) and isinstance(body.get("id"), list):
            return tuple(str(part) for part in body["id"])
    return None


def _version_record(item: Any) -> dict[str, Any] | None:
    """The ``create_table_version`` body of a batch operation that holds only that."""
    if not isinstance(item, dict):
        return None
    record = item.get("create_table_version")
    others = [k for k, v in item.items() if k != "create_table_version" and v is not None]
    if not isinstance(record, dict) or [k for k in others if k != "additional_properties"]:
        return None
    return record


class ManagedIcebergBatches(ManagedIcebergVersions):
    """BatchCommitTables of ``managed_by=impl`` tables through CommitTransaction;
    other batches keep the shared storage implementation."""

    #: API bases (``/v1/<prefix>``) whose catalog answered that it has no CommitTransaction
    _without_transactions: set[str] | None = None

    async def _batch_commit_tables(self, request: Any) -> Any:
        body: dict[str, Any] = json_data(request)
        operations = body.get("operations")
        if not isinstance(operations, list):
            return await super()._batch_commit_tables(request)  # its InvalidInput
        managed: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
        for index, item in enumerate(operations):
            record = _version_record(item)
            if record is None:
                continue
            warehouse, levels, name = self._table_parts(record)
            what = f"BatchCommitTables operations[{index}]"
            try:
                metadata = await self._load_lance_table(warehouse, levels, name, what)
            except errors.TableNotFoundError:
                continue  # the storage batch judges it (a table the batch declares, say)
            if self._is_managed(metadata.get("properties") or {}):
                managed.append((index, record, metadata))
        if not managed:  # the storage batch, which judges every operation as before
            return await super()._batch_commit_tables(request)
        tables = [tuple(record["id"]) for _, record, _ in managed]  # checked above
        if len(set(tables)) != len(tables):
            raise errors.InvalidInputError(
                "BatchCommitTables: a managed_by=impl table may get one version per batch"
            )
        indices = frozenset(index for index, _, _ in managed)
        for index, item in enumerate(operations):
            if index not in indices and _table_named(item) in tables:
                raise errors.InvalidInputError(
                    f"BatchCommitTables: operations[{index}] names a managed_by=impl table "
                    "whose version the batch commits in the catalog's transaction, which "
                    "comes after every other operation: commit it in a batch of its own"
                )
        # every version record checked before anything changes
        changes = [await self._change(index, record, meta) for index, record, meta in managed]
        base = await self._transaction_base(changes)

        async def commit() -> dict[int, dict[str, Any]]:
            # last, after the batch's other operations landed: its failure undoes them;
            # once the catalog took it nothing may undo them (hence the shield)
            await self._commit_changes(base, changes)
            landed: dict[int, dict[str, Any]] = {}
            with anyio.CancelScope(shield=True):
                landed = await self._land(changes)
            return landed

        elsewhere = (indices, commit)
        return await batch_commit_tables(self._version_host(), request, elsewhere=elsewhere)

    async def _change(
        self, index: int, record: dict[str, Any], metadata: Mapping[str, Any]
    ) -> _Change:
        """One managed table's version record checked, as CreateTableVersion checks it."""
        warehouse, levels, name = self._table_parts(record)
        table = [warehouse, *levels, name]
        what = f"BatchCommitTables operations[{index}] ({'.'.join(table)})"
        if record.get("branch") not in (None, "", "main"):
            raise errors.UnsupportedOperationError(f"{what}: CreateTableVersion on a branch")
        version = record.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or not 0 < version < 2**63:
            raise errors.InvalidInputError(f"{what}: version must be an integer >= 1")
        location = str(metadata.get("location") or "")
        await self.tables.confinement.check(location, what)
        staged, final, _ = _staged_manifest(
            location, record.get("manifest_path"), version, record.get("naming_scheme"), what
        )
        await anyio.to_thread.run_sync(_require_file, staged, what)
        size = record.get("manifest_size")
        if size is not None and size != await anyio.to_thread.run_sync(os.path.getsize, staged):
            raise errors.InvalidInputError(f"{what}: manifest_size {size!r} is not the file's size")
        return _Change(index, table, levels, name, dict(metadata), version, staged, final)

    async def _transaction_base(self, changes: list[_Change]) -> str:
        """The API base (``/v1/<prefix>``) of the one catalog of the batch's managed
        tables, refused (before anything changes) where the transaction cannot be made."""
        bases = {await self._rest.base(change.table[0]) for change in changes}
        if len(bases) != 1:
            raise errors.InvalidInputError(
                "BatchCommitTables: the managed_by=impl tables of one batch must be in one "
                "warehouse (one catalog transaction)"
            )
        base = bases.pop()
        if len(changes) > 1 and base in (self._without_transactions or set()):
            raise _no_transactions(base)
        return base

    async def _commit_changes(self, base: str, changes: list[_Change]) -> None:
        """The catalog's transaction; on a catalog without one, the fallback (module
        docstring)."""
        missing = self._without_transactions or set()
        if base not in missing and await self._commit_transaction(base, changes):
            return
        if len(changes) > 1:
            raise _no_transactions(base)
        change = changes[0]
        await self.commit_snapshot(
            change.table,
            change.metadata,
            change.version,
            expected=change.expected,
            what=f"BatchCommitTables {'.'.join(change.table)}",
            manifest=f"_versions/{os.path.basename(change.final)}",
            staged=os.path.basename(change.staged),
        )

    async def _commit_transaction(self, base: str, changes: list[_Change]) -> bool:
        """POST the CommitTransaction: True once committed, False when the catalog has
        no such route (noted, and warned about once); any refusal is raised typed."""
        rest = self._rest
        what = "BatchCommitTables (Iceberg CommitTransaction of " + ", ".join(
            ".".join(change.table) for change in changes
        )
        what += ")"
        response, state = await rest.transport.request(
            "POST",
            f"{base}/transactions/commit",
            what=what,
            idempotent=False,
            json={"table-changes": [change.body() for change in changes]},
        )
        if response.status_code < 300:
            return True
        if response.status_code in _NO_ROUTE and not _names_missing_things(response.content):
            if self._without_transactions is None:
                self._without_transactions = set()
                logger.warning(
                    "the Iceberg catalog at %s has no CommitTransaction route (POST %s/"
                    "transactions/commit answered HTTP %d): BatchCommitTables commits a single "
                    "managed_by=impl table with UpdateTable and refuses several",
                    self.namespace_id(),
                    base,
                    response.status_code,
                )
            self._without_transactions.add(base)
            return False
        raise rest.http.error(
            response,
            what,
            errors.TableNotFoundError,
            errors.ConcurrentModificationError,
            state.retried_ambiguously,
        )

    async def _land(self, changes: list[_Change]) -> dict[int, dict[str, Any]]:
        """After the catalog committed: the manifests get their final names (a rename
        that fails is finished by the next reader), tooling's schemas follow, and each
        operation's result. Nothing here raises: the batch has landed."""
        from ..models import DescribeTableVersionRequest

        results: dict[int, dict[str, Any]] = {}
        for change in changes:
            answer: dict[str, Any] = {"version": change.version, "manifest_path": change.final}
            try:
                await anyio.to_thread.run_sync(_finalize, change.staged, change.final)
                if self._tooling:
                    location = str(change.metadata.get("location") or "")
                    await self._follow_schema(change.table, location, change.version, "Batch")
                asked = {"id": change.table, "version": change.version}
                described = await self._describe_table_version(
                    DescribeTableVersionRequest.from_dict(asked)
                )
                answer = described.version.to_dict()
            except (OSError, errors.LanceNamespaceError) as exc:
                logger.warning(
                    "BatchCommitTables: version %d of %s is committed to the catalog; "
                    "finishing it on storage failed (%s), the next reader finishes it",
                    change.version,
                    ".".join(change.table),
                    type(exc).__name__,
                )
            results[change.index] = {"create_table_version": {"version": answer}}
        return results


def _no_transactions(base: str) -> errors.UnsupportedOperationError:
    return errors.UnsupportedOperationError(
        "BatchCommitTables of several managed_by=impl tables needs the catalog's "
        f"CommitTransaction (POST {base}/transactions/commit), which this catalog "
        "does not serve; nothing was changed"
    )


def _names_missing_things(content: bytes) -> bool:
    """Whether a 404's Iceberg error body names a missing table or namespace."""
    import orjson

    try:
        body = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        return False
    nested = body.get("error") if isinstance(body, dict) else None
    return isinstance(nested, dict) and nested.get("type") in _MISSING_THINGS
