"""The properties of ``impl="glue"``: seed 004's configuration list, plus client settings.

Its own module so the list reads as the spec's table does (catalog, endpoint, region,
static and session credentials, assume-role), followed by what the spec leaves to
the implementation: the storage root and deletion prefixes, the child-catalog switch,
botocore's retries, timeouts and pool, and the storage options of the tables.
"""

from __future__ import annotations

import attrs

from .. import errors
from .._core import pipeline_hook
from .._core.config import (
    BackendConfig,
    call_timeout_prop,
    max_response_bytes_prop,
    parse_bool,
    parse_non_negative_int,
    parse_positive_int,
    prop,
)
from .._storage.places import (
    allowed_locations_prop,
    confine_storage_prop,
    drop_allowed_locations_prop,
    storage_root_prop,
    table_storage_options_prop,
    table_version_tracking_prop,
)

__all__ = ["GlueConfig"]


@attrs.frozen
class GlueConfig(BackendConfig):
    """Properties of ``impl="glue"`` as the Glue implementation spec lists them, plus client
    settings."""

    catalog_id: str | None = prop(default=None, doc="starting catalog (default: the account's)")
    endpoint: str | None = prop(default=None, doc="Glue endpoint of an API-compatible metastore")
    sts_endpoint: str | None = prop(default=None, doc="STS endpoint for assume-role")
    region: str | None = prop(default=None)
    access_key_id: str | None = prop(default=None, secret=True)
    secret_access_key: str | None = prop(default=None, secret=True)
    session_token: str | None = prop(default=None, secret=True)
    assume_role_arn: str | None = prop(default=None)
    assume_role_region: str | None = prop(default=None)
    assume_role_external_id: str | None = prop(default=None, secret=True)
    assume_role_session_name: str = prop(default="lance-namespace-async")
    assume_role_timeout_sec: int = prop(default=3600, parse=parse_positive_int)
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
    child_catalogs: bool | None = prop(
        default=None,
        parse=parse_bool,
        doc="child catalogs as namespace levels; unset: on unless the endpoint lacks the "
        "catalog APIs (then databases only, for this connection)",
    )
    max_retries: int = prop(default=3, parse=parse_non_negative_int)
    connect_timeout: int = prop(default=10000, parse=parse_positive_int)
    read_timeout: int = prop(default=30000, parse=parse_positive_int)
    call_timeout: int = call_timeout_prop(
        "deadline of one Glue or STS call in ms: credentials, the answer and retries included"
    )
    max_response_bytes: int = max_response_bytes_prop("largest Glue or STS answer read (bytes)")
    max_pool_connections: int = prop(default=32, parse=parse_positive_int)
    worker_threads: int = prop(default=8, parse=parse_positive_int)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)

    def __attrs_post_init__(self) -> None:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise errors.InvalidInputError("'access_key_id' and 'secret_access_key' go together")
