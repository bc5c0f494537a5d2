"""Arrow schemas in the protocol's ``JsonArrowSchema`` form, and as Spark/Hive type names.

Produces what pylance's Rust namespace code produces for the same schema
(type names such as ``utf8``, ``large_utf8``, ``fixed_size_list`` with
``length``, decimals with ``length = precision * 1000 + scale``), so a describe
through any backend reads the same.
"""

from __future__ import annotations

from typing import Any

from .. import errors

__all__ = ["hive_type", "json_arrow_schema", "spark_type"]


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


def spark_type(data_type: Any) -> tuple[str, str, Any]:
    """(type_name, type_text, type_json value) of an Arrow type, as Spark/Unity name them."""
    import pyarrow as pa

    t = pa.types
    simple: list[tuple[Any, str, str, str]] = [
        (t.is_boolean, "BOOLEAN", "boolean", "boolean"),
        (t.is_int8, "BYTE", "tinyint", "byte"),
        (t.is_int16, "SHORT", "smallint", "short"),
        (t.is_uint8, "SHORT", "smallint", "short"),
        (t.is_int32, "INT", "int", "integer"),
        (t.is_uint16, "INT", "int", "integer"),
        (t.is_int64, "LONG", "bigint", "long"),
        (t.is_uint32, "LONG", "bigint", "long"),
        (t.is_float16, "FLOAT", "float", "float"),
        (t.is_float32, "FLOAT", "float", "float"),
        (t.is_float64, "DOUBLE", "double", "double"),
        (t.is_string, "STRING", "string", "string"),
        (t.is_large_string, "STRING", "string", "string"),
        (t.is_binary, "BINARY", "binary", "binary"),
        (t.is_large_binary, "BINARY", "binary", "binary"),
        (t.is_fixed_size_binary, "BINARY", "binary", "binary"),
        (t.is_date, "DATE", "date", "date"),
        (t.is_null, "NULL", "void", "void"),
    ]
    for check, name, text, spark in simple:
        if check(data_type):
            return name, text, spark
    if t.is_timestamp(data_type):
        if data_type.tz:
            return "TIMESTAMP", "timestamp", "timestamp"
        return "TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz"
    if t.is_decimal(data_type) or t.is_uint64(data_type):
        precision, scale = (
            (data_type.precision, data_type.scale) if t.is_decimal(data_type) else (20, 0)
        )
        return "DECIMAL", f"decimal({precision},{scale})", f"decimal({precision},{scale})"
    if t.is_list(data_type) or t.is_large_list(data_type) or t.is_fixed_size_list(data_type):
        _, element_text, element_json = spark_type(data_type.value_type)
        return (
            "ARRAY",
            f"array<{element_text}>",
            {
                "type": "array",
                "elementType": element_json,
                "containsNull": data_type.value_field.nullable,
            },
        )
    if t.is_map(data_type):
        _, key_text, key_json = spark_type(data_type.key_type)
        _, value_text, value_json = spark_type(data_type.item_type)
        return (
            "MAP",
            f"map<{key_text},{value_text}>",
            {
                "type": "map",
                "keyType": key_json,
                "valueType": value_json,
                "valueContainsNull": data_type.item_field.nullable,
            },
        )
    if t.is_struct(data_type):
        fields = [data_type.field(i) for i in range(data_type.num_fields)]
        texts = []
        jsons = []
        for field in fields:
            _, text, spark = spark_type(field.type)
            texts.append(f"{field.name}:{text}")
            jsons.append(
                {"name": field.name, "type": spark, "nullable": field.nullable, "metadata": {}}
            )
        return "STRUCT", f"struct<{','.join(texts)}>", {"type": "struct", "fields": jsons}
    raise errors.InvalidInputError(f"no Unity column type for Arrow type {data_type}")


def hive_type(data_type: Any) -> str:
    """An Arrow type's Hive type name, as Hive and Glue keep catalog columns (and Athena and
    Spark read them): Spark's type text, whose ``timestamp_ntz`` Hive spells ``timestamp``."""
    return spark_type(data_type)[1].replace("timestamp_ntz", "timestamp")
