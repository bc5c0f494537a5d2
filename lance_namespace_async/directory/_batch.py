"""BatchCreateTableVersions and BatchCommitTables of the directory backend: all or none.

pylance 14.0.2's DirectoryNamespace has neither. They are the shared implementation of
:mod:`.._storage.version_batches` (which the catalog backends use too), given this
backend as its :class:`~.._storage.version_batches.BatchHost`: table ids checked as
the directory checks them, locations from pylance's DescribeTable (checked by the
confinement), recorded versions answered by pylance's DescribeTableVersion with the
manifest path relative to the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._storage import version_batches
from .._storage.version_batches import BatchHost
from ._core import drop_nones
from ._versions import relative_manifest

if TYPE_CHECKING:
    from .._core.identifiers import Identifier
    from ._core import DirectoryCore

__all__ = ["batch_commit_tables", "batch_create_table_versions"]


def _host(namespace: DirectoryCore) -> BatchHost:
    async def location(table: Identifier, what: str, deletes: bool) -> str:
        # the root is where the directory keeps its tables; registered ones elsewhere
        # are judged by the confinement, as every operation on their storage is
        found = await namespace._describe_location(table)
        await namespace.tables.confinement.check(found, what)
        return found

    async def describe_version(table: Identifier, version: int) -> dict[str, Any]:
        described = await namespace._call(
            "describe_table_version", {"id": list(table), "version": version}
        )
        found = await namespace._describe_location(table)
        answered = dict(described.get("version") or {})
        return drop_nones(relative_manifest(answered, found))

    return BatchHost(namespace, namespace.tables, namespace._table_id, location, describe_version)


async def batch_create_table_versions(namespace: DirectoryCore, request: Any) -> Any:
    """Record one version of each listed table: every one, or none."""
    return await version_batches.batch_create_table_versions(_host(namespace), request)


async def batch_commit_tables(namespace: DirectoryCore, request: Any) -> Any:
    """Apply declares, version records, version deletions and deregisters in order:
    every one, or none."""
    return await version_batches.batch_commit_tables(_host(namespace), request)
