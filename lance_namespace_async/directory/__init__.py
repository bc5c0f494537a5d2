"""Lance tables in a directory: ``impl="dir"``, the spec's Lance Directory Namespace.

A namespace directory (the ``root``: a URI, an absolute path, or a path relative to
the current directory) holds the tables of the root namespace as table directories
``<root>/<name>.lance``. Nested namespaces, their properties and their tables are
rows of the ``__manifest`` Lance table at the root, as pylance's own
DirectoryNamespace keeps them, so a catalog written by either is usable by the other.

A package, so that each part reads on its own:

* ``_properties``: the configuration properties (:class:`DirectoryConfig`) and the root;
* ``_manifest``: the ``__manifest`` table, for what pylance has no call for;
* ``_open_datasets``: tables' datasets kept open between reads while their manifest holds;
* ``_manifest_snapshot``: reads answered from a copy of the manifest while it holds;
* ``_placement``: where tables are and how their locations are stored;
* ``_core``: the pylance handle, id and parent checks, and DropTable's deletion;
* ``_versions``: ListTableVersions' answer;
* ``_reads``: a table read directly where the manifest copy proves its location;
* ``_query``: QueryTable's scanner, as pylance's operation builds it;
* ``_branches``: the data operations of a branch, on the branch;
* ``_namespaces``: the namespace operations and the listing of tables;
* ``_tables``: the table operations;
* ``_batch``: the all-or-none batches pylance lacks;
* ``_ops``: every other operation, handed to pylance;
* ``_data``: CountTableRows, InsertIntoTable and QueryTable on the table itself;
* ``_namespace``: :class:`DirectoryNamespace`, the backend.

Each module imports only modules listed before it, so the package has no import cycle.

Layer (ARCHITECTURE.md): a backend, independent of the others. May import storage,
the core, ``errors`` and ``models``; never another backend, the facade or the server.
"""

from ._manifest import MANIFEST_DIR
from ._namespace import DirectoryNamespace
from ._properties import DirectoryConfig

__all__ = ["MANIFEST_DIR", "DirectoryConfig", "DirectoryNamespace"]
