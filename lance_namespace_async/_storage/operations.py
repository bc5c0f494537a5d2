"""Table operations on storage for the catalog backends (iceberg, unity, glue, hive).

A catalog only knows where a Lance table lives. Every data, index, tag, version
and schema operation of a storage-managed table is therefore the same on every
catalog, and is written once here: the table is resolved through the backend's
own DescribeTable (its location and storage options, so endpoints and
credentials come from the catalog), and the operation runs on the dataset with
pylance, on the backend's bounded worker threads (requests become pylance arguments
in :mod:`.requests`), with pylance's failures
translated by :func:`~.failures.translate` (the translation the directory
backend uses too).

Written as two mixins over :class:`~.table_base.StorageTableBase` (which resolves
the table): :class:`~.data_ops.StorageDataOperations` (rows: create, insert,
merge, update, delete, query, counts and statistics),
:class:`~.metadata_ops.StorageMetadataOperations` (indices, tags, versions,
columns and schema), :class:`~.version_ops.StorageVersionOperations` (versions
recorded from staged manifests, version deletion and the all-or-none batches, shared
with the directory backend through :mod:`.version_batches`) and
:class:`~.branch_ops.StorageBranchOperations` (the dataset's Lance branches; every
operation that takes ``branch`` acts on the dataset checked out on it) and
:class:`~.transaction_ops.StorageTransactionOperations` (DescribeTransaction and
AlterTransaction, as pylance's directory answers them). A backend mixes
:class:`StorageTableOperations` in and adds only what its catalog must see:

* :meth:`~StorageTableOperations._creation_location`: where CreateTable writes a
  new table (the backend's default layout);
* :meth:`~StorageTableOperations._storage_access`: whether the catalog lets
  operations write storage directly, which version readers see, and whether
  pylance must commit through the namespace (Iceberg's ``managed_by=impl``
  tables: the catalog's version, and every commit through its UpdateTable);
* :meth:`~StorageTableOperations._schema_changed`: called after an operation
  changed the table's columns, for catalogs that store them;
* :meth:`~StorageTableOperations._describe_for_storage`: the DescribeTable an
  operation resolves the table with (Unity asks it for credentials that fit the
  operation, READ or READ_WRITE, when it vends: see :mod:`.vended_credentials`).

CreateTable writes the rows first and then registers the table through the
backend's own RegisterTable; a failure of either step leaves neither behind. It
writes only where it could undo the write: an empty location that the shared
deletion rules of :class:`~.tables.LanceTables` allow deleting.

ListAllTables is the same on every catalog too: a bounded-concurrency walk of the
backend's own ListNamespaces and ListTables (:class:`~.._core.walk.ListAllTablesByWalking`).
"""

from __future__ import annotations

from .._core.walk import ListAllTablesByWalking
from .branch_ops import StorageBranchOperations
from .data_ops import StorageDataOperations
from .metadata_ops import StorageMetadataOperations
from .transaction_ops import StorageTransactionOperations
from .version_ops import StorageVersionOperations

__all__ = ["StorageTableOperations"]


class StorageTableOperations(
    StorageDataOperations,
    StorageMetadataOperations,
    StorageVersionOperations,
    StorageBranchOperations,
    StorageTransactionOperations,
    ListAllTablesByWalking,
):
    """The table operations of a catalog backend, run on storage through pylance, and
    ListAllTables as a walk of its catalog (:mod:`.._core.walk`)."""
