"""A materialized view's ``output_schema``: parsed, and checked against its query's schema.

The protocol sends the schema as a string. We accept the protocol's own
``JsonArrowSchema`` as JSON (``{"fields": [{"name", "type": {"type": ...}, "nullable"}]}``,
the form DescribeTable answers, type names as pylance writes them: ``int64``, ``utf8``,
``large_utf8``, ``double``, ``list`` with ``fields``, ``decimal128`` with ``length =
precision * 1000 + scale`` ...) and, for people typing it, a Spark DDL string
(``"country STRING, total BIGINT"``), turned into Arrow the way Spark hands rows to Python.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from .. import errors

__all__ = ["fits", "parse_output_schema"]

_SIMPLE: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "boolean": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "halffloat": pa.float16(),
    "float16": pa.float16(),
    "float": pa.float32(),
    "float32": pa.float32(),
    "double": pa.float64(),
    "float64": pa.float64(),
    "utf8": pa.utf8(),
    "string": pa.utf8(),
    "large_utf8": pa.large_utf8(),
    "large_string": pa.large_utf8(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "date32": pa.date32(),
    "date64": pa.date64(),
    # pylance's JSON form drops the unit and zone; Spark's timestamps are microseconds
    "timestamp": pa.timestamp("us"),
    "null": pa.null(),
}


def _bad(why: str) -> errors.InvalidInputError:
    return errors.InvalidInputError(f"output_schema: {why}")


def _data_type(body: Any) -> pa.DataType:
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise _bad(f"a type must be an object with a string 'type', got {body!r}")
    name = body["type"].lower()
    if name in _SIMPLE:
        return _SIMPLE[name]
    children = [_field(child) for child in body.get("fields") or []]
    length = body.get("length")
    if name in ("list", "large_list", "fixed_size_list"):
        if len(children) != 1:
            raise _bad(f"{name} needs exactly one child field")
        if name == "list":
            return pa.list_(children[0])
        if name == "large_list":
            return pa.large_list(children[0])
        if not isinstance(length, int) or length < 0:
            raise _bad("fixed_size_list needs a non-negative 'length'")
        return pa.list_(children[0], length)
    if name == "struct":
        return pa.struct(children)
    if name in ("decimal128", "decimal256", "decimal"):
        if not isinstance(length, int) or length < 1000:
            raise _bad(f"{name} needs 'length' = precision * 1000 + scale")
        precision, scale = divmod(length, 1000)
        return (pa.decimal256 if name == "decimal256" else pa.decimal128)(precision, scale)
    if name == "fixed_size_binary":
        if not isinstance(length, int) or length < 0:
            raise _bad("fixed_size_binary needs a non-negative 'length'")
        return pa.binary(length)
    raise _bad(f"unknown type {body['type']!r}")


def _field(body: Any) -> pa.Field:
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        raise _bad(f"a field must be an object with a string 'name', got {body!r}")
    metadata = body.get("metadata")
    return pa.field(
        body["name"],
        _data_type(body.get("type")),
        nullable=body.get("nullable", True) is not False,
        metadata=metadata if isinstance(metadata, dict) and metadata else None,
    )


def _from_json(body: Any) -> pa.Schema:
    fields = body.get("fields") if isinstance(body, dict) else None
    if not isinstance(fields, list) or not fields:
        raise _bad("a JsonArrowSchema needs a non-empty 'fields' list")
    schema = pa.schema([_field(f) for f in fields])
    if len(set(schema.names)) != len(schema.names):
        raise _bad(f"duplicate column names in {schema.names}")
    return schema


def _from_ddl(text: str, spark: Any) -> pa.Schema:
    from pyspark.errors import PySparkException
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    try:
        struct = StructType.fromDDL(text) if spark is not None else None
    except (PySparkException, ValueError) as exc:
        raise _bad(f"neither JSON nor a Spark DDL schema: {exc}") from None
    if not isinstance(struct, StructType) or not struct.fields:
        raise _bad("neither JSON nor a Spark DDL schema")
    return to_arrow_schema(struct, timezone="UTC")


def parse_output_schema(text: str, spark: Any = None) -> pa.Schema:
    """The view's Arrow schema from ``output_schema`` (JSON, or DDL given a session)."""
    if not isinstance(text, str) or not text.strip():
        raise _bad("must be a non-empty string")
    try:
        body = json.loads(text)
    except ValueError:
        if spark is None:
            raise _bad("is not a JsonArrowSchema JSON string") from None
        return _from_ddl(text, spark)
    return _from_json(body)


def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether every value of ``source`` casts to ``target`` unchanged."""
    if source.equals(target) or pa.types.is_null(source):
        return True
    t = pa.types
    if t.is_integer(source) and t.is_integer(target):
        if t.is_signed_integer(source) and not t.is_signed_integer(target):
            return False
        return bool(target.bit_width > source.bit_width) or (
            target.bit_width == source.bit_width and t.is_signed_integer(source)
        )
    if t.is_floating(source) and t.is_floating(target):
        return bool(target.bit_width >= source.bit_width)
    if t.is_integer(source) and t.is_floating(target):
        return bool(source.bit_width < target.bit_width)
    strings = (t.is_string(source) or t.is_large_string(source)) and (
        t.is_string(target) or t.is_large_string(target)
    )
    binaries = (t.is_binary(source) or t.is_large_binary(source)) and (
        t.is_binary(target) or t.is_large_binary(target)
    )
    if strings or binaries:
        return True
    if t.is_timestamp(source) and t.is_timestamp(target):
        return True  # Spark's are microseconds; a coarser target is the user's choice
    if t.is_decimal(source) and t.is_decimal(target):
        return bool(
            target.scale >= source.scale
            and target.precision - target.scale >= source.precision - source.scale
        )
    return False


def fits(query_schema: pa.Schema, output: pa.Schema) -> None:
    """Refuse (InvalidInput) a query whose rows do not fit the output schema.

    The query must produce exactly the output's columns (by name, any order); each
    column's type must cast to the output's without loss. Nullability is checked on
    the data: Spark marks most computed columns nullable.
    """
    wanted, produced = set(output.names), set(query_schema.names)
    if wanted != produced:
        raise errors.InvalidInputError(
            f"the query produces columns {query_schema.names}, output_schema has "
            f"{output.names}: missing {sorted(wanted - produced)}, "
            f"extra {sorted(produced - wanted)}"
        )
    for field in output:
        source = query_schema.field(field.name).type
        if not _widens(source, field.type):
            raise errors.InvalidInputError(
                f"column {field.name!r}: the query produces {source}, which does not fit "
                f"output_schema's {field.type} without loss"
            )
