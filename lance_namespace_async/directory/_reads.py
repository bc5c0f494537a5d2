"""Reading a table of the directory backend directly at the location the manifest copy
proves (:mod:`._manifest_snapshot`), on a worker thread: the shared step of
CountTableRows, InsertIntoTable (:mod:`._data`) and QueryTable (:mod:`._query`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ._manifest import manifest_id

if TYPE_CHECKING:
    from .._core.identifiers import Identifier
    from ._manifest_snapshot import ManifestSnapshots

__all__ = ["Confine", "located", "read_directly"]

T = TypeVar("T")
#: refuses (PermissionDenied) a location outside a confined backend's root (worker thread)
Confine = Callable[[str], None]


def located(snapshots: ManifestSnapshots, table: Identifier, confine: Confine) -> str | None:
    """The table's location, from a copy of the manifest proven current (worker thread),
    once ``confine`` has let it through (PermissionDenied for one outside the root)."""
    snapshot = snapshots.current()
    stored = None if snapshot is None else snapshot.tables.get(manifest_id(table))
    if stored is None:
        return None
    location = str(snapshots.described(table, stored)["location"])
    confine(location)
    return location


def read_directly(
    snapshots: ManifestSnapshots,
    session: Any,
    table: Identifier,
    version: int | None,
    read: Callable[[Any], T | None],
    confine: Confine,
) -> T | None:
    """``read`` of the table's dataset at ``version`` (worker thread), or None when pylance
    must answer: no location the manifest copy proves, or any failure (a read changes
    nothing, so asking pylance as well is safe, and it reports the error in its words)."""
    location = located(snapshots, table, confine)
    if location is None:
        return None
    try:
        return read(snapshots.datasets.open(location, version, session))
    except Exception:  # pylance's operation reports it, in its words
        return None
