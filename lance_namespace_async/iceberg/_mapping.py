"""Seeds 000 and 003's object mapping: how Iceberg table metadata holds a Lance table.

A Lance table is an Iceberg table whose ``location`` is the Lance table root, created
with a dummy schema (one nullable string column ``dummy``) and whose ``properties``
carry ``table_type=lance`` (case-insensitive when read) and ``managed_by``
(``storage``, the default, or ``impl``). For a ``managed_by=impl`` table the
``current-snapshot-id`` is the Lance version. In tooling mode the metadata also
carries the Lance schema in Iceberg types (Arrow -> Iceberg conversion) and a
snapshot whose id is the Lance version. Pure functions over Iceberg's JSON shapes,
apart from the calls that send them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from .. import errors
from .._storage.tables import TABLE_TYPE, is_lance_table, lance_parameters

__all__ = [
    "DUMMY_SCHEMA",
    "MANAGED_BY",
    "MARKERS",
    "UNIT_SEPARATOR",
    "arrow_to_iceberg_schema",
    "create_table_body",
    "current_version",
    "is_lance",
    "managed_by",
    "schema_changes",
    "separator_of",
    "snapshot_updates",
    "storage_properties",
    "table_properties",
]

#: joins namespace levels in API paths and ``parent`` unless the server names another
UNIT_SEPARATOR = "\x1f"
MANAGED_BY = "managed_by"
#: the properties that mark a Lance table, never storage options
MARKERS = frozenset({TABLE_TYPE, MANAGED_BY})
DUMMY_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "dummy", "required": False, "type": "string"}],
}

#: table properties of Iceberg's own families, never storage options (Iceberg's
#: reference server sets ``write.parquet.compression-codec`` on every table it creates)
_ICEBERG_PROPERTY_FAMILIES = (
    "read.",
    "write.",
    "commit.",
    "history.",
    "gc.",
    "engine.",
    "compatibility.",
    "schema.",
    "format-version",
)


# -- namespaces -----------------------------------------------------------------------------


def separator_of(config: Mapping[str, str]) -> str:
    """The ``namespace-separator`` a server advertises (URL-encoded), else 0x1F."""
    advertised = unquote(config.get("namespace-separator") or "")
    return advertised or UNIT_SEPARATOR


# -- tables: properties ---------------------------------------------------------------------


def is_lance(properties: Mapping[str, Any]) -> bool:
    """Whether an Iceberg table is a Lance table (seed 000's Lance Table Identification:
    its properties alone, Iceberg tables have no external kind)."""
    return is_lance_table(properties)


def managed_by(properties: Mapping[str, Any]) -> str:
    """A table's ``managed_by`` (seed 003): ``storage`` unless set, else ``impl``."""
    value = str(properties.get(MANAGED_BY) or "storage").lower()
    if value not in ("storage", "impl"):
        raise errors.InvalidInputError(f"managed_by must be 'storage' or 'impl', got {value!r}")
    return value


def table_properties(
    requested: Mapping[str, Any] | None, default_managed_by: str
) -> dict[str, str]:
    """The properties of a table to create: the caller's, marked as Lance, with a
    ``managed_by`` (``default_managed_by`` unless the caller names one)."""
    properties = lance_parameters(requested)
    properties.setdefault(MANAGED_BY, default_managed_by)
    properties[MANAGED_BY] = managed_by(properties)
    return properties


def storage_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """A table's properties less Iceberg's own families: those that may be storage options."""
    return {
        key: value
        for key, value in properties.items()
        if not str(key).startswith(_ICEBERG_PROPERTY_FAMILIES)
    }


def create_table_body(name: str, location: str, properties: dict[str, str]) -> dict[str, Any]:
    """CreateTable's request: the Lance table root as location, the dummy schema."""
    return {"name": name, "location": location, "schema": DUMMY_SCHEMA, "properties": properties}


def current_version(metadata: Mapping[str, Any]) -> int | None:
    """The catalog's Lance version of a ``managed_by=impl`` table (``current-snapshot-id``)."""
    current = metadata.get("current-snapshot-id")
    if isinstance(current, bool) or not isinstance(current, int) or current < 0:
        return None
    return current


# -- tooling mode: Arrow -> Iceberg types (seed 003) ----------------------------------------


class _FieldIds:
    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


def _iceberg_type(data_type: Any, ids: _FieldIds) -> Any:
    import pyarrow as pa

    types = pa.types
    simple: list[tuple[Any, str]] = [
        (types.is_boolean, "boolean"),
        (types.is_int64, "long"),
        (types.is_uint32, "long"),
        (types.is_integer, "int"),
        (types.is_float16, "float"),
        (types.is_float32, "float"),
        (types.is_float64, "double"),
        (types.is_string, "string"),
        (types.is_large_string, "string"),
        (types.is_binary, "binary"),
        (types.is_large_binary, "binary"),
        (types.is_date, "date"),
        (types.is_time, "time"),
    ]
    if types.is_uint64(data_type):
        return "decimal(20, 0)"
    for check, name in simple:
        if check(data_type):
            return name
    if types.is_timestamp(data_type):
        return "timestamptz" if data_type.tz else "timestamp"
    if types.is_decimal(data_type):
        return f"decimal({data_type.precision}, {data_type.scale})"
    if types.is_fixed_size_binary(data_type):
        return f"fixed[{data_type.byte_width}]"
    if (
        types.is_list(data_type)
        or types.is_large_list(data_type)
        or (types.is_fixed_size_list(data_type))
    ):
        element_id = ids.next()
        return {
            "type": "list",
            "element-id": element_id,
            "element": _iceberg_type(data_type.value_type, ids),
            "element-required": not data_type.value_field.nullable,
        }
    if types.is_map(data_type):
        key_id, value_id = ids.next(), ids.next()
        return {
            "type": "map",
            "key-id": key_id,
            "key": _iceberg_type(data_type.key_type, ids),
            "value-id": value_id,
            "value": _iceberg_type(data_type.item_type, ids),
            "value-required": not data_type.item_field.nullable,
        }
    if types.is_struct(data_type):
        return {"type": "struct", "fields": _iceberg_fields(list(data_type), ids)}
    raise errors.InvalidInputError(f"no Iceberg type for Arrow type {data_type}")


def _iceberg_fields(fields: list[Any], ids: _FieldIds) -> list[dict[str, Any]]:
    assigned = [(field, ids.next()) for field in fields]
    return [
        {
            "id": field_id,
            "name": field.name,
            "required": not field.nullable,
            "type": _iceberg_type(field.type, ids),
        }
        for field, field_id in assigned
    ]


def arrow_to_iceberg_schema(schema: Any, schema_id: int = 1) -> dict[str, Any]:
    """A pyarrow schema as an Iceberg schema (Arrow -> Iceberg type conversion)."""
    return {
        "type": "struct",
        "schema-id": schema_id,
        "fields": _iceberg_fields(list(schema), _FieldIds()),
    }


# -- a Lance version as an Iceberg snapshot (seed 003) --------------------------------------


def snapshot_updates(
    version: int,
    location: str,
    *,
    schema: dict[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    manifest: str | None = None,
    staged: str | None = None,
) -> list[dict[str, Any]]:
    """The UpdateTable changes that make Lance ``version`` the catalog's current one.

    A snapshot whose id is the version (seed 003), the ``main`` ref moved to it (which
    also appends the snapshot-log entry); with ``schema`` (tooling mode) that schema
    made current first (:func:`schema_changes` of the table's ``metadata``).
    ``manifest``: the version's manifest, relative to the table, and ``staged`` the name
    it is staged under until it gets it, kept in the summary.
    """
    updates: list[dict[str, Any]] = []
    if schema is not None:
        updates += schema_changes(metadata or {}, schema)
    summary = {"operation": "append", "lance-version": str(version)}
    if manifest is not None:
        summary["lance-manifest"] = manifest
    if staged is not None:
        summary["lance-staged"] = staged
    snapshot: dict[str, Any] = {
        "snapshot-id": version,
        "timestamp-ms": int(time.time() * 1000),
        "manifest-list": f"{location.rstrip('/')}/_versions/lance-version-{version}",
        "summary": summary,
    }
    updates += [
        {"action": "add-snapshot", "snapshot": snapshot},
        {
            "action": "set-snapshot-ref",
            "ref-name": "main",
            "type": "branch",
            "snapshot-id": version,
        },
    ]
    return updates


def schema_changes(metadata: Mapping[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The UpdateTable changes that make ``schema`` current: none when it is, a switch to
    an equal schema the table has (Iceberg reuses it rather than adding it again), else
    the schema added (the catalog assigns its id: 1 for a table's first Lance schema)."""
    current = metadata.get("current-schema-id")
    for existing in metadata.get("schemas") or []:
        if isinstance(existing, dict) and _same_fields(existing.get("fields"), schema["fields"]):
            if existing.get("schema-id") == current:
                return []
            return [{"action": "set-current-schema", "schema-id": existing.get("schema-id")}]
    return [
        {"action": "add-schema", "schema": schema},
        {"action": "set-current-schema", "schema-id": -1},  # the one just added
    ]


def _same_fields(left: Any, right: Any) -> bool:
    """Whether two Iceberg schemas' fields are the same columns (field ids aside)."""
    return bool(_fields_shape(left) == _fields_shape(right))


def _type_shape(kind: Any) -> Any:
    if isinstance(kind, dict):
        return tuple(
            sorted(
                (key, _fields_shape(value) if key == "fields" else _type_shape(value))
                for key, value in kind.items()
                if not key.endswith("-id")
            )
        )
    return kind


def _fields_shape(fields: Any) -> Any:
    if not isinstance(fields, list):
        return None
    return tuple(
        (f.get("name"), f.get("required"), _type_shape(f.get("type")))
        for f in fields
        if isinstance(f, dict)
    )
