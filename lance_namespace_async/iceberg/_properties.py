"""The properties of ``impl="iceberg"``: seed 000's configuration list, plus what it leaves open.

Its own module so the list reads as the spec's does: ``endpoint``, ``auth_token``,
``credential``, ``connect_timeout``, ``read_timeout`` and ``max_retries`` (the last
five are the shared HTTP client's, :class:`~.._transport.config.HttpConfig`) and ``root``;
then seed 003's ``managed_by`` default and ``iceberg_tooling``, and this implementation's
own: deletion prefixes, the prefix rule of warehouses without one, concurrency,
credential vending and the storage options of the tables.
"""

from __future__ import annotations

import attrs

from .._core import pipeline_hook
from .._core.config import mask_url_userinfo, parse_bool, parse_positive_int, prop
from .._storage.places import (
    allowed_locations_prop,
    confine_storage_prop,
    drop_allowed_locations_prop,
    storage_root_prop,
    table_storage_options_prop,
    table_version_tracking_prop,
)
from .._storage.vended_credentials import VENDING_DOC
from .._transport.config import HttpConfig, parse_http_url
from ._mapping import MANAGED_BY, managed_by

__all__ = ["IcebergConfig"]


@attrs.frozen
class IcebergConfig(HttpConfig):
    """Properties of ``impl="iceberg"`` as the Iceberg implementation spec lists them (ms)."""

    endpoint: str = prop(
        parse=parse_http_url,
        shown=mask_url_userinfo,
        doc="the Iceberg REST Catalog, e.g. http://host:8181 (a user:password@ is HTTP Basic auth)",
    )
    root: str | None = storage_root_prop()
    drop_allowed_locations: tuple[str, ...] = drop_allowed_locations_prop()
    table_storage_options: frozenset[str] | None = table_storage_options_prop()
    confine_storage: bool = confine_storage_prop()
    spark_clusters: dict[str, str] = pipeline_hook.spark_clusters_prop()
    job_heartbeat_timeout: float = pipeline_hook.job_heartbeat_timeout_prop()
    job_retention_days: float = pipeline_hook.job_retention_days_prop()
    pipeline_allow_udfs: bool = pipeline_hook.pipeline_allow_udfs_prop()
    table_version_tracking_enabled: bool = table_version_tracking_prop()
    allowed_locations: tuple[str, ...] = allowed_locations_prop()
    iceberg_tooling: bool = prop(default=False, parse=parse_bool)
    managed_by: str = prop(
        default="storage",
        parse=lambda value: managed_by({MANAGED_BY: value}),
        doc="managed_by of the tables created, declared or registered without one (seed 003)",
    )
    warehouse_prefix: bool = prop(
        default=True,
        parse=parse_bool,
        doc="a warehouse whose config names no prefix is the API prefix (seed 000); false: "
        "no prefix (/v1/namespaces), as for single-catalog servers like Iceberg's reference one",
    )
    list_concurrency: int = prop(default=16, parse=parse_positive_int)
    warehouses: tuple[str, ...] = prop(
        default=(),
        parse=lambda value: tuple(part.strip() for part in value.split(",") if part.strip()),
        doc="comma-separated warehouses ListAllTables walks (the Iceberg REST protocol "
        "cannot list them); without any, ListAllTables is unsupported (code 0)",
    )
    worker_threads: int = prop(default=8, parse=parse_positive_int)
    vend_credentials: bool = prop(default=False, parse=parse_bool, doc=VENDING_DOC)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)
