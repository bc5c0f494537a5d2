"""Arrow schemas in the protocol's ``JsonArrowSchema`` form.

Produces what pylance's Rust namespace code produces for the same schema
(type names such as ``utf8``, ``large_utf8``, ``fixed_size_list`` with
``length``, decimals with ``length = precision * 1000 + scale``), so a describe
through any backend reads the same.
"""

from __future__ import annotations

from typing import Any

__all__ = ["json_arrow_schema"]


def _decode(metadata: dict[bytes, bytes] | None) -> dict[str, str] | None:
    if not metadata:
        return None
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in metadata.items()}


def _simple_name(data_type: Any) -> str:
    import pyarrow as pa

    checks: list[tuple[Any, str]] = [
        (pa.types.is_boolean, "bool"),
        (pa.types.is_large_string, "large_utf8"),
        (pa.types.is_string, "utf8"),
        (pa.types.is_large_binary, "large_binary"),
        (pa.types.is_binary, "binary"),
        (pa.types.is_date32, "date32"),
        (pa.types.is_date64, "date64"),
        (pa.types.is_timestamp, "timestamp"),
        (pa.types.is_null, "null"),
    ]
    for check, name in checks:
        if check(data_type):
            return name
    return str(data_type)


def _data_type(data_type: Any) -> dict[str, Any]:
    import pyarrow as pa

    if pa.types.is_fixed_size_list(data_type):
        return {
            "type": "fixed_size_list",
            "fields": [_field(data_type.value_field)],
            "length": data_type.list_size,
        }
    if pa.types.is_large_list(data_type):
        return {"type": "large_list", "fields": [_field(data_type.value_field)]}
    if pa.types.is_list(data_type):
        return {"type": "list", "fields": [_field(data_type.value_field)]}
    if pa.types.is_struct(data_type):
        return {
            "type": "struct",
            "fields": [_field(data_type.field(i)) for i in range(data_type.num_fields)],
        }
    if pa.types.is_decimal(data_type):
        return {
            "type": f"decimal{data_type.bit_width}",
            "length": data_type.precision * 1000 + data_type.scale,
        }
    if pa.types.is_fixed_size_binary(data_type):
        return {"type": "fixed_size_binary", "length": data_type.byte_width}
    return {"type": _simple_name(data_type)}


def _field(field: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": field.name,
        "nullable": field.nullable,
        "type": _data_type(field.type),
    }
    metadata = _decode(field.metadata)
    if metadata:
        body["metadata"] = metadata
    return body


def json_arrow_schema(schema: Any) -> dict[str, Any]:
    """``pyarrow.Schema`` -> ``JsonArrowSchema`` body."""
    body: dict[str, Any] = {"fields": [_field(f) for f in schema]}
    metadata = _decode(schema.metadata)
    if metadata:
        body["metadata"] = metadata
    return body
