"""The ``__manifest`` table, read and written here for what pylance has no call for.

Nested namespaces, their properties and the tables of child namespaces are rows
of the Lance table ``<root>/__manifest`` (pylance's layout). Our own writes are
few: a location outside the root (pylance joins every location to the root), a
rename (a new row, then the old one deleted), a root table's row after its
directory moved or its link went. Calls here block: run them on a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import errors
from .._core.identifiers import Identifier, join_identifier

__all__ = ["MANIFEST_DELIMITER", "MANIFEST_DIR", "Manifest", "manifest_id"]

MANIFEST_DIR = "__manifest"
MANIFEST_DELIMITER = "$"


def manifest_id(identifier: Identifier) -> str:
    """The manifest's ``object_id`` of a namespace or table: its parts joined by ``$``."""
    return join_identifier(identifier, MANIFEST_DELIMITER)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class Manifest:
    """The manifest of the namespace directory ``root`` (absent when disabled)."""

    def __init__(self, root: str, storage_options: Mapping[str, str] | None, enabled: bool) -> None:
        self.uri = f"{root}/{MANIFEST_DIR}"
        self.storage_options = dict(storage_options or {}) or None
        self.enabled = enabled

    def open(self) -> Any:
        import lance

        return lance.dataset(self.uri, storage_options=self.storage_options)

    def row(self, object_id: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            manifest = self.open()
        except (ValueError, OSError):
            return None
        rows = manifest.to_table(filter=f"object_id = {_quote(object_id)}").to_pylist()
        return rows[0] if rows else None

    def insert(self, row: dict[str, Any]) -> None:
        import pyarrow as pa

        manifest = self.open()
        table = pa.Table.from_pylist([row], schema=manifest.schema)
        result = manifest.merge_insert("object_id").when_not_matched_insert_all().execute(table)
        if int(result.get("num_inserted_rows", 0)) != 1:
            raise errors.TableAlreadyExistsError(
                f"table {row['object_id'].replace(MANIFEST_DELIMITER, '.')!r} already exists"
            )

    def set_location(self, object_id: str, location: str) -> None:
        import pyarrow as pa

        row = self.row(object_id)
        if row is None:
            raise errors.TableNotFoundError(f"table {object_id!r} vanished while registering")
        manifest = self.open()
        row["location"] = location
        table = pa.Table.from_pylist([row], schema=manifest.schema)
        manifest.merge_insert("object_id").when_matched_update_all().execute(table)

    def delete(self, object_id: str) -> None:
        self.open().delete(f"object_id = {_quote(object_id)}")

    def table_locations(self) -> list[tuple[str, str]]:
        """(object id, stored location) of every table row with a location."""
        try:
            manifest = self.open() if self.enabled else None
        except (ValueError, OSError):
            manifest = None
        if manifest is None:
            return []
        rows = manifest.to_table(
            columns=["object_id", "location"], filter="object_type = 'table'"
        ).to_pylist()
        return [(str(r["object_id"]), r["location"]) for r in rows if r["location"]]
