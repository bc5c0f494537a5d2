"""Names are unique among a namespace's objects, tables and child namespaces alike.

Seed 002: "the name of any object must be unique among all other objects that
share the same parent namespace". Catalogs that keep tables and child
namespaces under one parent (the directory manifest, where both are rows keyed
by the same object id; Iceberg REST, whose namespaces hold both) need this
checked before a table or a namespace is created, or a table ``a.x`` and a
namespace ``a.x`` coexist (the directory manifest then answers a misleading
"Table already exists" while TableExists says 404; in Iceberg the namespace's
tables are laid out inside the table's directory).

The check is made with the backend's own NamespaceExists/TableExists, once here
for every backend that needs it. It is not atomic with the creation that
follows; it keeps honest clients from building colliding names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import errors
from ..models import NamespaceExistsRequest, TableExistsRequest

if TYPE_CHECKING:
    from .base import AsyncLanceNamespace

__all__ = ["refuse_existing_table", "refuse_namespace_named_like", "refuse_table_named_like"]


def _parent(identifier: Sequence[str]) -> str:
    return repr(".".join(identifier[:-1])) if len(identifier) > 1 else "the root namespace"


async def _exists(ns: AsyncLanceNamespace, kind: str, identifier: Sequence[str]) -> bool:
    """Whether a ``kind`` ("namespace" or "table") has this id, by the backend's own check.

    InvalidInput counts as absent: no object of that kind can have the id.
    """
    try:
        if kind == "namespace":
            await ns.namespace_exists(NamespaceExistsRequest.from_dict({"id": list(identifier)}))
        else:
            await ns.table_exists(TableExistsRequest.from_dict({"id": list(identifier)}))
    except (errors.NotFoundError, errors.InvalidInputError):
        return False
    return True


def _taken(kind: str, wanted: str, identifier: Sequence[str]) -> str:
    name = ".".join(identifier)
    return (
        f"cannot create {wanted} {name!r}: {kind} {name!r} has that name in "
        f"{_parent(identifier)}, and names are unique among a namespace's tables and namespaces"
    )


async def refuse_namespace_named_like(ns: AsyncLanceNamespace, table: Sequence[str]) -> None:
    """TableAlreadyExists (5) when a child namespace already has the table's name."""
    if await _exists(ns, "namespace", table):
        raise errors.TableAlreadyExistsError(_taken("namespace", "table", table))


async def refuse_table_named_like(ns: AsyncLanceNamespace, namespace: Sequence[str]) -> None:
    """NamespaceAlreadyExists (2) when a table already has the namespace's name."""
    if await _exists(ns, "table", namespace):
        raise errors.NamespaceAlreadyExistsError(_taken("table", "namespace", namespace))


async def refuse_existing_table(ns: AsyncLanceNamespace, table: Sequence[str]) -> None:
    """TableAlreadyExists (5) for a table that exists, before DeclareTable checks its
    location (whose data would otherwise be the reason given)."""
    if await _exists(ns, "table", table):
        raise errors.TableAlreadyExistsError(f"table {'.'.join(table)!r} already exists")
