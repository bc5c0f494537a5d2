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

from . import errors
from .models import NamespaceExistsRequest, TableExistsRequest

if TYPE_CHECKING:
    from ._base import AsyncLanceNamespace

__all__ = ["refuse_existing_table", "refuse_namespace_named_like", "refuse_table_named_like"]


def _parent(identifier: Sequence[str]) -> str:
    return repr(".".join(identifier[:-1])) if len(identifier) > 1 else "the root namespace"


async def refuse_namespace_named_like(ns: AsyncLanceNamespace, table: Sequence[str]) -> None:
    """TableAlreadyExists (5) when a child namespace already has the table's name."""
    try:
        await ns.namespace_exists(NamespaceExistsRequest.from_dict({"id": list(table)}))
    except (errors.NotFoundError, errors.InvalidInputError):
        return  # no such namespace (or no namespace can have that id)
    raise errors.TableAlreadyExistsError(
        f"cannot create table {'.'.join(table)!r}: namespace {'.'.join(table)!r} has that "
        f"name in {_parent(table)}, and names are unique among a namespace's tables "
        "and namespaces"
    )


async def refuse_table_named_like(ns: AsyncLanceNamespace, namespace: Sequence[str]) -> None:
    """NamespaceAlreadyExists (2) when a table already has the namespace's name."""
    try:
        await ns.table_exists(TableExistsRequest.from_dict({"id": list(namespace)}))
    except (errors.NotFoundError, errors.InvalidInputError):
        return  # no such table (or no table can have that id)
    raise errors.NamespaceAlreadyExistsError(
        f"cannot create namespace {'.'.join(namespace)!r}: table {'.'.join(namespace)!r} "
        f"has that name in {_parent(namespace)}, and names are unique among a "
        "namespace's tables and namespaces"
    )


async def refuse_existing_table(ns: AsyncLanceNamespace, table: Sequence[str]) -> None:
    """TableAlreadyExists (5) for a table that exists, before DeclareTable checks its
    location (whose data would otherwise be the reason given)."""
    try:
        await ns.table_exists(TableExistsRequest.from_dict({"id": list(table)}))
    except (errors.NotFoundError, errors.InvalidInputError):
        return
    raise errors.TableAlreadyExistsError(f"table {'.'.join(table)!r} already exists")
