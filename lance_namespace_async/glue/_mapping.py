"""Seed 004's object mapping: how Glue databases and tables hold Lance namespaces and tables.

A Lance table is an ``EXTERNAL_TABLE`` whose ``Parameters`` carry ``table_type=lance``
(case-insensitive when read) and whose ``StorageDescriptor.Location`` is its root; its
columns are kept in ``StorageDescriptor.Columns`` under their Hive type names, so that
Athena and Spark-on-Glue see them. Pure functions over Glue's JSON shapes, apart from
the calls that send them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .._core.arrow_json import hive_type
from .._core.identifiers import Identifier, join_identifier
from .._storage.tables import is_lance_table

__all__ = [
    "NAMESPACE_TYPE",
    "Database",
    "glue_columns",
    "is_lance",
    "location_of",
    "parameters_of",
    "table_input",
]

#: the CreateNamespace property that asks for a child catalog instead of a database
NAMESPACE_TYPE = "glue.namespace_type"


@attrs.frozen
class Database:
    """A leaf namespace: a database of a catalog."""

    catalog_id: str | None  # None: the caller's account catalog
    name: str
    path: Identifier  # the namespace identifier, for locations and messages

    def table_id(self, table: str) -> str:
        """``catalog$database$table``: a table of this database as people read it."""
        return join_identifier((*self.path, table))


def is_lance(table: Mapping[str, Any]) -> bool:
    """Whether a Glue table is a Lance table (seed 004's Lance Table Identification)."""
    return is_lance_table(
        table.get("Parameters"), table_kind=table.get("TableType"), external_kind="EXTERNAL_TABLE"
    )


def location_of(table: Mapping[str, Any]) -> str:
    """A Glue table's ``StorageDescriptor.Location`` ("" when it has none)."""
    return str((table.get("StorageDescriptor") or {}).get("Location") or "")


def parameters_of(table: Mapping[str, Any]) -> dict[str, str]:
    """A Glue table's ``Parameters`` as strings."""
    return {str(k): str(v) for k, v in (table.get("Parameters") or {}).items()}


def glue_columns(schema: Any) -> list[dict[str, str]]:
    """A Lance schema as Glue columns (Hive type names, as Athena and Spark read them)."""
    return [{"Name": field.name, "Type": hive_type(field.type)} for field in schema]


def table_input(
    name: str, location: str, parameters: dict[str, str], columns: list[dict[str, str]] | None
) -> dict[str, Any]:
    """The ``TableInput`` of CreateTable/UpdateTable for a Lance table."""
    descriptor: dict[str, Any] = {"Location": location}
    if columns:
        descriptor["Columns"] = columns
    return {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": parameters,
        "StorageDescriptor": descriptor,
    }
