"""The properties of ``impl="dir"`` and the namespace directory they name.

The spec's "Directory Path": the root is a URI, an absolute POSIX path, or a
relative one resolved against the current directory of the running process.
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from .. import errors
from .._core import pipeline_hook
from .._core.config import (
    BackendConfig,
    parse_bool,
    parse_non_negative_int,
    parse_positive_int,
    prop,
)
from .._storage.places import (
    allowed_locations_prop,
    confine_storage_prop,
    drop_allowed_locations_prop,
    table_storage_options_prop,
)

__all__ = ["DirectoryConfig", "absolute_root", "context_provider"]

#: the keys of pylance 14.0.2's DirectoryNamespace we pass on unchanged (its Rust
#: ``DirectoryNamespaceBuilder::from_properties``), besides ``root`` and the families
_PYLANCE_FLAGS = (
    "manifest_enabled",
    "dir_listing_enabled",
    "inline_optimization_enabled",
    "table_version_tracking_enabled",
    "dir_listing_to_manifest_migration_enabled",
    "vend_input_storage_options",
    "ops_metrics_enabled",
)
_PYLANCE_NUMBERS = ("commit_retries", "vend_input_storage_options_refresh_interval_millis")


def _parse_u32(value: str) -> int:
    number = parse_non_negative_int(value)
    if number >= 2**32:
        raise ValueError("expected an integer below 2**32")
    return number


def _parse_millis(value: str) -> int:
    number = parse_positive_int(value)
    if number >= 2**63:
        raise ValueError("expected an integer below 2**63")
    return number


@attrs.frozen
class DirectoryConfig(BackendConfig):
    """Properties of ``impl="dir"``, as pylance's DirectoryNamespace takes them."""

    root: str = prop(doc="namespace directory: local path (relative to cwd) or URI")
    manifest_enabled: bool = prop(default=True, parse=parse_bool)
    dir_listing_enabled: bool = prop(default=True, parse=parse_bool)
    inline_optimization_enabled: bool | None = prop(default=None, parse=parse_bool)
    table_version_tracking_enabled: bool | None = prop(default=None, parse=parse_bool)
    dir_listing_to_manifest_migration_enabled: bool | None = prop(default=None, parse=parse_bool)
    commit_retries: int | None = prop(
        default=None, parse=_parse_u32, doc="retries of a __manifest commit (pylance: 20)"
    )
    vend_input_storage_options: bool | None = prop(
        default=None,
        parse=parse_bool,
        doc="DescribeTable/DeclareTable answer the storage.* options (this backend always "
        "does when there are any; pylance only with this key)",
    )
    vend_input_storage_options_refresh_interval_millis: int | None = prop(
        default=None,
        parse=_parse_millis,
        doc="with vend_input_storage_options: vended options carry expires_at_millis "
        "= now + this interval",
    )
    ops_metrics_enabled: bool = prop(
        default=False,
        parse=parse_bool,
        doc="count the calls of each operation (retrieve_ops_metrics / reset_ops_metrics)",
    )
    storage: dict[str, str] = prop(prefix="storage.", secret=True)
    credential_vendor: dict[str, str] = prop(prefix="credential_vendor.", secret=True)
    dynamic_context_provider: dict[str, str] = prop(
        prefix="dynamic_context_provider.",
        secret=True,
        doc="impl=<module.Class> built with the other keys, handed to pylance as its "
        "context_provider (pylance's directory namespace keeps it; no operation reads it)",
    )
    worker_threads: int = prop(default=8, parse=parse_positive_int, doc="blocking-call threads")
    drop_allowed_locations: tuple[str, ...] = drop_allowed_locations_prop()
    table_storage_options: frozenset[str] | None = table_storage_options_prop()
    confine_storage: bool = confine_storage_prop()
    spark_clusters: dict[str, str] = pipeline_hook.spark_clusters_prop()
    job_heartbeat_timeout: float = pipeline_hook.job_heartbeat_timeout_prop()
    job_retention_days: float = pipeline_hook.job_retention_days_prop()
    pipeline_allow_udfs: bool = pipeline_hook.pipeline_allow_udfs_prop()
    allowed_locations: tuple[str, ...] = allowed_locations_prop()

    def rust_properties(self, root: str) -> dict[str, str]:
        """The map pylance's Rust DirectoryNamespace is built from."""
        passed: dict[str, str] = {"root": root}
        for key in _PYLANCE_FLAGS:
            value = getattr(self, key)
            if value is not None:
                passed[key] = "true" if value else "false"
        for key in _PYLANCE_NUMBERS:
            value = getattr(self, key)
            if value is not None:
                passed[key] = str(value)
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


def context_provider(settings: dict[str, str]) -> Any:
    """pylance's ``context_provider`` from the ``dynamic_context_provider.*`` keys, as
    pylance's Python DirectoryNamespace builds it: ``impl`` is ``module.Class``, built
    with the other keys as keyword arguments. None without ``impl``."""
    import importlib

    impl = settings.get("impl")
    if not impl:
        if settings:
            raise errors.InvalidInputError(
                "dynamic_context_provider.* keys need dynamic_context_provider.impl"
            )
        return None
    module_name, dot, class_name = impl.rpartition(".")
    if not dot or not module_name:
        raise errors.InvalidInputError(
            f"dynamic_context_provider.impl must be module.Class, got {impl!r}"
        )
    try:
        provider_class = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise errors.InvalidInputError(
            f"dynamic_context_provider.impl {impl!r} cannot be loaded: {exc}"
        ) from None
    return provider_class(**{k: v for k, v in settings.items() if k != "impl"})
