"""The properties of ``impl="hive"``: where the metastore is, timeouts and limits, storage."""

from __future__ import annotations

from urllib.parse import urlparse

import attrs

from .._core import pipeline_hook
from .._core.config import (
    BackendConfig,
    call_timeout_prop,
    max_response_bytes_prop,
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

__all__ = ["HiveConfig"]


def _thrift_uri(value: str) -> str:
    parsed = urlparse(value)
    if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
        raise ValueError("must be thrift://host:port")
    return value


@attrs.frozen
class HiveConfig(BackendConfig):
    """Properties of ``impl="hive"`` (timeouts in milliseconds)."""

    uri: str = prop(parse=_thrift_uri, doc="the metastore, thrift://host:port")
    root: str | None = storage_root_prop(
        doc="root of new table locations, inside which DropTable deletes data (default: "
        "the database's location, and only a table's default location is deleted)",
    )
    drop_allowed_locations: tuple[str, ...] = drop_allowed_locations_prop()
    table_storage_options: frozenset[str] | None = table_storage_options_prop()
    confine_storage: bool = confine_storage_prop()
    spark_clusters: dict[str, str] = pipeline_hook.spark_clusters_prop()
    job_heartbeat_timeout: float = pipeline_hook.job_heartbeat_timeout_prop()
    job_retention_days: float = pipeline_hook.job_retention_days_prop()
    pipeline_allow_udfs: bool = pipeline_hook.pipeline_allow_udfs_prop()
    table_version_tracking_enabled: bool = table_version_tracking_prop()
    allowed_locations: tuple[str, ...] = allowed_locations_prop()
    pool_size: int = prop(default=8, parse=parse_positive_int)
    connect_timeout: int = prop(default=10000, parse=parse_positive_int)
    read_timeout: int = prop(default=30000, parse=parse_positive_int)
    call_timeout: int = call_timeout_prop(
        "deadline of one metastore call in ms: connecting, the answer and retries included"
    )
    max_response_bytes: int = max_response_bytes_prop(
        "largest answer one metastore call reads (bytes)"
    )
    max_retries: int = prop(default=3, parse=parse_non_negative_int)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)
