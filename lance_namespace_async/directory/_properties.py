"""The properties of ``impl="dir"`` and the namespace directory they name.

The spec's "Directory Path": the root is a URI, an absolute POSIX path, or a
relative one resolved against the current directory of the running process.
"""

from __future__ import annotations

import os

import attrs

from .. import errors
from .._core.config import BackendConfig, parse_bool, parse_positive_int, prop
from .._storage.places import (
    allowed_locations_prop,
    confine_storage_prop,
    drop_allowed_locations_prop,
    table_storage_options_prop,
)

__all__ = ["DirectoryConfig", "absolute_root"]


@attrs.frozen
class DirectoryConfig(BackendConfig):
    """Properties of ``impl="dir"``, as pylance's DirectoryNamespace takes them."""

    root: str = prop(doc="namespace directory: local path (relative to cwd) or URI")
    manifest_enabled: bool = prop(default=True, parse=parse_bool)
    dir_listing_enabled: bool = prop(default=True, parse=parse_bool)
    inline_optimization_enabled: bool | None = prop(default=None, parse=parse_bool)
    table_version_tracking_enabled: bool | None = prop(default=None, parse=parse_bool)
    dir_listing_to_manifest_migration_enabled: bool | None = prop(default=None, parse=parse_bool)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)
    credential_vendor: dict[str, str] = prop(prefix="credential_vendor.", secret=True)
    worker_threads: int = prop(default=8, parse=parse_positive_int, doc="blocking-call threads")
    drop_allowed_locations: tuple[str, ...] = drop_allowed_locations_prop()
    table_storage_options: frozenset[str] | None = table_storage_options_prop()
    confine_storage: bool = confine_storage_prop()
    allowed_locations: tuple[str, ...] = allowed_locations_prop()

    def rust_properties(self, root: str) -> dict[str, str]:
        """The map pylance's Rust DirectoryNamespace is built from."""
        passed: dict[str, str] = {"root": root}
        for key in (
            "manifest_enabled",
            "dir_listing_enabled",
            "inline_optimization_enabled",
            "table_version_tracking_enabled",
            "dir_listing_to_manifest_migration_enabled",
        ):
            value = getattr(self, key)
            if value is not None:
                passed[key] = "true" if value else "false"
        passed.update({f"storage.{k}": v for k, v in self.storage.items()})
        passed.update({f"credential_vendor.{k}": v for k, v in self.credential_vendor.items()})
        return passed


def absolute_root(root: str) -> str:
    """The root as pylance resolves it: URIs as given, paths against the cwd."""
    if root == "":
        raise errors.InvalidInputError("configuration key 'root' must not be empty")
    if "://" in root:
        return root.rstrip("/")
    return os.path.abspath(os.path.expanduser(root))
