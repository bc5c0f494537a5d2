"""The directory namespace (the Lance Namespace specification's "Lance Directory Namespace").

A namespace directory holds one sub-directory per table. Nested namespaces,
properties and declared tables live in the ``__manifest`` Lance table at the
root, exactly as pylance's own ``DirectoryNamespace`` keeps them, so a catalog
written by either is fully usable by the other.

This backend drives pylance's Rust implementation (the layout's reference) on
bounded anyio worker threads and fixes, above it, what pylance 14.0.2 lacks:

* CreateNamespace modes ExistOk and Overwrite;
* DropNamespace mode Skip and behavior Cascade (children and their tables);
* NamespaceNotFound when a parent namespace is missing (list, declare, register);
* pagination of ListNamespaces and ListAllTables, and ListAllTables recursion;
* RegisterTable of an absolute location (relative when inside the root);
* DescribeTable ``load_detailed_metadata`` with stats; TableExists of a version;
* RenameTable, including a move to another namespace;
* DropTable deleting data, DeregisterTable never touching it;
* names unique among a namespace's tables and child namespaces (seed 002).

pylance resolves every manifest location against the root; a location we
register outside the root is kept absolute and resolved here. Such a table is
usable through this backend (and the sync facade given to pylance), not
through pylance's own DirectoryNamespace.

Deletion (``_storage.tables`` decides it, as for every backend): the storage root
is ``root``. DropTable deletes a table's data only strictly inside the root (or
below a ``drop_allowed_locations`` prefix), never the root, the ``__manifest``,
a directory inside or holding another Lance table, nor a location another
table of the manifest points at; otherwise it deregisters the table and keeps
the data. RegisterTable needs a Lance table at the location and refuses the
root, the manifest and places inside, holding, or shared with another table.

The namespace operations are in ``_namespaces``, the table operations in
``_tables``, CountTableRows and InsertIntoTable in ``_data`` (on the table, located by
the manifest copy, when it can), what they share in ``_core``; every other operation is
pylance's (``_ops``), the batches ours (``_batch``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Self

from ._data import DataOperations
from ._namespaces import NamespaceOperations
from ._ops import install_pylance_operations
from ._properties import DirectoryConfig

__all__ = ["DirectoryNamespace"]


class DirectoryNamespace(NamespaceOperations, DataOperations):
    """``impl="dir"``: Lance tables in a directory, nested namespaces in its manifest."""

    impl_name: ClassVar[str] = "dir"

    @classmethod
    def from_properties(cls, properties: dict[str, str] | Any) -> Self:
        return cls(DirectoryConfig.from_properties(properties))

    def namespace_id(self) -> str:
        """Equal for equal settings (pylance shares caches by it), secrets only as a digest.

        Written as pylance's DirectoryNamespace writes its own
        (``DirectoryNamespace { root: "/data" }``): callers parse the root out of it.
        """
        root = json.dumps(self.root)
        if not (self.config.storage or self.config.credential_vendor):
            return f"DirectoryNamespace {{ root: {root} }}"
        settings = json.dumps(
            [sorted(self.config.storage.items()), sorted(self.config.credential_vendor.items())]
        )
        digest = hashlib.sha256(settings.encode()).hexdigest()[:12]
        return f"DirectoryNamespace {{ root: {root}, options: {json.dumps(digest)} }}"


install_pylance_operations(DirectoryNamespace)
