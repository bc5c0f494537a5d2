"""Lance tables in a directory: ``impl="dir"`` (the Lance Directory Namespace).

The module was moved here as is (``_namespace``), with its helpers ``_ops``
(pylance's data operations), ``_batch`` (all-or-none batches) and
``_manifest_snapshot`` (reads from a copy of the manifest), so that it can be
split by responsibility.
"""

from ._namespace import MANIFEST_DIR, DirectoryConfig, DirectoryNamespace

__all__ = ["MANIFEST_DIR", "DirectoryConfig", "DirectoryNamespace"]
