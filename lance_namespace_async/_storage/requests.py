"""Lance REST requests as pylance arguments, and pylance's answers as response bodies.

The pure half of the catalog backends' table operations (:mod:`.operations`):
QueryTable as scanner arguments, versions, tags, indices and fragment statistics as
the bodies of the operation table's responses, and UpdateFieldMetadata on a dataset
(which the directory backend uses too). Nothing here does I/O but on the dataset
it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import errors
from .._core.request_rules import PROBE_FIELDS, merge_keys
from .ref_names import check_ref_names

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "dataset_indices",
    "distance_type",
    "fragment_summary",
    "merge_insert",
    "scan_arguments",
    "tag_name",
    "update_field_metadata",
    "vector_column",
    "version_entry",
]


def update_field_metadata(dataset: Any, updates: list[Mapping[str, Any]]) -> dict[str, Any]:
    """UpdateFieldMetadata on ``dataset`` (blocking), for every backend.

    Entries with ``replace`` replace a field's metadata, the others merge into it
    (a null value removes the key); the answer holds the new version and the
    metadata of each updated top-level field.
    """
    merged: dict[str, dict[str, str | None]] = {}
    replaced: dict[str, dict[str, str | None]] = {}
    for entry in updates:
        target = replaced if entry.get("replace") else merged
        target.setdefault(entry["path"], {}).update(entry.get("metadata") or {})
    names = set(dataset.schema.names)
    for path in [*merged, *replaced]:
        if path.split(".", 1)[0] not in names:
            raise errors.TableColumnNotFoundError(f"column {path!r} not found")
    if merged:
        dataset.update_field_metadata(merged)
    if replaced:
        dataset.update_field_metadata(replaced, replace=True)
    fields = {
        path: {
            k.decode(): v.decode() for k, v in (dataset.schema.field(path).metadata or {}).items()
        }
        for path in [*merged, *replaced]
        if path in names
    }
    return {"version": dataset.version, "fields": fields}


def dataset_indices(dataset: Any) -> list[dict[str, Any]]:
    """The table's indices with their uuids (which ``describe_indices`` leaves out)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return list(dataset.list_indices())


def tag_name(body: Mapping[str, Any], what: str) -> str:
    tag = body.get("tag")
    if not isinstance(tag, str) or not tag:
        raise errors.InvalidInputError(f"{what} needs a tag name")
    check_ref_names("Tag", {"tag": tag})  # a name pylance cannot hold is code 13
    return tag


def version_entry(
    location: str, entry: Mapping[str, Any], *, manifest_path: str | None = None
) -> dict[str, Any]:
    """A version of pylance's ``versions()`` as a TableVersion body (``manifest_path``:
    where its manifest is, when not ``<location>/_versions/<version>.manifest``)."""
    number = int(entry["version"])
    version: dict[str, Any] = {
        "version": number,
        "manifest_path": manifest_path or f"{location.rstrip('/')}/_versions/{number}.manifest",
    }
    timestamp = entry.get("timestamp")
    if timestamp is not None and hasattr(timestamp, "timestamp"):
        version["timestamp_millis"] = int(timestamp.timestamp() * 1000)
    metadata = entry.get("metadata")
    if metadata:
        version["metadata"] = {str(k): str(v) for k, v in metadata.items()}
    return version


def fragment_summary(lengths: list[int]) -> dict[str, int]:
    def at(share: float) -> int:
        return lengths[min(len(lengths) - 1, int(share * len(lengths)))]

    return {
        "min": lengths[0],
        "max": lengths[-1],
        "mean": sum(lengths) // len(lengths),
        "p25": at(0.25),
        "p50": at(0.5),
        "p75": at(0.75),
        "p99": at(0.99),
    }


def distance_type(stats: Mapping[str, Any]) -> str | None:
    for index in stats.get("indices") or []:
        metric = index.get("metric_type") if isinstance(index, Mapping) else None
        if metric:
            return str(metric).lower()
    return None


def vector_column(schema: pa.Schema, what: str) -> str:
    import pyarrow as pa

    found: list[str] = [
        str(f.name)
        for f in schema
        if pa.types.is_fixed_size_list(f.type) and pa.types.is_floating(f.type.value_type)
    ]
    if len(found) != 1:
        raise errors.InvalidInputError(f"{what}: name the vector_column (candidates: {found})")
    return found[0]


def scan_arguments(query: Mapping[str, Any], schema: pa.Schema, what: str) -> dict[str, Any]:
    """pylance scanner arguments of a QueryTable request."""
    for unsupported in ("full_text_query", "lower_bound", "upper_bound"):
        if query.get(unsupported) is not None:
            raise errors.UnsupportedOperationError(f"{what} with {unsupported}")
    arguments: dict[str, Any] = {}
    columns = query.get("columns")
    if isinstance(columns, dict):
        if columns.get("column_aliases"):
            raise errors.UnsupportedOperationError(f"{what} with column aliases")
        if columns.get("column_names") is not None:
            arguments["columns"] = list(columns["column_names"])
    elif isinstance(columns, list):
        arguments["columns"] = list(columns)
    if query.get("filter") is not None:
        arguments["filter"] = str(query["filter"])
    k = query.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
        raise errors.InvalidInputError(f"{what}: k must be an integer >= 0, got {k!r}")
    vector = query.get("vector")
    single = vector.get("single_vector") if isinstance(vector, dict) else vector
    if isinstance(vector, dict) and vector.get("multi_vector"):
        raise errors.UnsupportedOperationError(f"{what} with a multi-vector")
    if single:
        column = query.get("vector_column") or vector_column(schema, what)
        nearest: dict[str, Any] = {"column": column, "q": list(single), "k": k or 10}
        if query.get("distance_type"):
            nearest["metric"] = str(query["distance_type"]).lower()
        for ours in ("nprobes", *PROBE_FIELDS, "refine_factor", "ef"):
            if query.get(ours) is not None:
                nearest[ours] = query[ours]
        if query.get("bypass_vector_index") is True:
            nearest["use_index"] = False
        arguments["nearest"] = nearest
        arguments["prefilter"] = query.get("prefilter") is not False
        if query.get("fast_search") is True:
            arguments["fast_search"] = True
    elif k:
        arguments["limit"] = k
    if query.get("offset") is not None:
        arguments["offset"] = query["offset"]
    if query.get("with_row_id") is True:
        arguments["with_row_id"] = True
    return arguments


def merge_insert(dataset: Any, body: Mapping[str, Any], rows: Any) -> dict[str, Any]:
    """MergeInsertIntoTable of ``rows`` on ``dataset`` (main or a checked-out branch), as
    the request's ``on`` keys and ``when_*`` clauses say; the answer's fields."""
    on = body.get("on")
    keys = merge_keys(on) if isinstance(on, str) else on
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
        raise errors.InvalidInputError("MergeInsertIntoTable needs its key columns 'on'")
    builder = dataset.merge_insert(list(keys))
    if body.get("when_matched_update_all"):
        builder = builder.when_matched_update_all(body.get("when_matched_update_all_filt"))
    if body.get("when_not_matched_insert_all"):
        builder = builder.when_not_matched_insert_all()
    if body.get("when_not_matched_by_source_delete"):
        builder = builder.when_not_matched_by_source_delete(
            body.get("when_not_matched_by_source_delete_filt")
        )
    stats = dict(builder.execute(rows))
    return {
        "num_inserted_rows": int(stats.get("num_inserted_rows", 0)),
        "num_updated_rows": int(stats.get("num_updated_rows", 0)),
        "num_deleted_rows": int(stats.get("num_deleted_rows", 0)),
        "version": int(dataset.latest_version),
    }
