"""CreateTableVersion, BatchDeleteTableVersions, BatchCreateTableVersions and
BatchCommitTables on storage for the catalog backends (Iceberg, Unity, Glue, Hive).

The same implementation as the directory backend's (:mod:`.version_batches`), given
the catalog as its :class:`~.version_batches.BatchHost`: a table's location comes from
the catalog's DescribeTable (checked by the confinement, refused where the catalog
forbids writing storage), versions are deleted only where DropTable may delete data
(inside the storage root or a ``drop_allowed_locations`` prefix; without a root, at
the table's default location), and declares and deregisters of a batch go through
the catalog's own operations.

A table whose versions the catalog holds (Iceberg's ``managed_by=impl``, whose
CreateTableVersion is the backend's own) takes no part in these: each operation
refuses it with UnsupportedOperation (0) before anything changes, except the version
records of BatchCommitTables that the Iceberg backend commits in one catalog
transaction (``iceberg/_transaction.py``).
"""

from __future__ import annotations

from typing import Any

from .. import errors
from .._core.identifiers import Identifier
from .table_base import StorageTable, StorageTableBase
from .version_batches import (
    BatchHost,
    _VersionEntry,
    batch_commit_tables,
    batch_create_table_versions,
    batch_delete_table_versions,
    create_table_version,
)

__all__ = ["StorageVersionOperations"]


def _table_id(value: Any) -> Identifier:
    """A table id's shape (the catalog judges its names when it is looked up)."""
    if not isinstance(value, list | tuple) or not value:
        raise errors.InvalidInputError("a table id must be a non-empty list of names")
    if not all(isinstance(part, str) and part for part in value):
        raise errors.InvalidInputError("every name of a table id must be a non-empty string")
    return tuple(value)


class StorageVersionOperations(StorageTableBase):
    """Versions recorded from staged manifests and the all-or-none batches, on storage."""

    def _version_host(self) -> BatchHost:
        async def location(table: Identifier, what: str, deletes: bool) -> str:
            resolved = await self._storage_table({"id": list(table)}, what, writes=True)
            if resolved.access.namespace_client is not None:
                raise errors.UnsupportedOperationError(
                    f"{what}: table {'.'.join(table)!r} is managed by the catalog "
                    "(managed_by=impl): its versions are the catalog's commits"
                )
            if deletes:
                default = await self._creation_location(list(table))
                refused = await self.tables.deletion_refused(
                    resolved.location, default_location=default
                )
                if refused is not None:
                    raise errors.PermissionDeniedError(
                        f"{what}: versions of table {'.'.join(table)!r} are not deleted: {refused}"
                    )
            return resolved.location

        async def describe_version(table: Identifier, version: int) -> dict[str, Any]:
            from ..models import DescribeTableVersionRequest

            described = await self._describe_table_version(
                DescribeTableVersionRequest.from_dict({"id": list(table), "version": version})
            )
            answered: dict[str, Any] = described.version.to_dict()
            return answered

        return BatchHost(self, self.tables, _table_id, location, describe_version)

    async def _create_table_version(self, request: Any) -> Any:
        from .._core.base import json_data
        from .places import local_path

        body: dict[str, Any] = json_data(request)
        host = self._version_host()
        entry = _VersionEntry.parse(host, body, "CreateTableVersion")
        table = await self._storage_table(body, "CreateTableVersion", writes=True)
        if local_path(table.location) is not None or table.access.namespace_client is not None:
            return await create_table_version(host, request)
        return await self._create_table_version_on_store(table, entry, body)

    async def _create_table_version_on_store(
        self, table: StorageTable, entry: _VersionEntry, body: dict[str, Any]
    ) -> Any:
        """CreateTableVersion of a table on an object store: put-if-absent on S3
        (:mod:`.store_versions`), one version at a time (no batch: no undo there)."""
        from ..models import CreateTableVersionResponse
        from .store_versions import record_on_store

        recorded = await self.tables.run(
            record_on_store, table.location, table.storage_options, entry
        )
        if isinstance(body.get("e_tag"), str):
            recorded["e_tag"] = body["e_tag"]
        return CreateTableVersionResponse.from_dict({"version": recorded})

    async def _batch_delete_table_versions(self, request: Any) -> Any:
        return await batch_delete_table_versions(self._version_host(), request)

    async def _batch_create_table_versions(self, request: Any) -> Any:
        return await batch_create_table_versions(self._version_host(), request)

    async def _batch_commit_tables(self, request: Any) -> Any:
        return await batch_commit_tables(self._version_host(), request)
