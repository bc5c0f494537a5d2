"""Seed 004's namespace levels: which catalog, child catalog or database an id names.

The root namespace is the starting catalog: ``catalog_id`` or, unset, the caller's
account catalog (its id asked of STS once). Child catalogs are inner levels, with the
id ``<root id>:<name>[/<name>...]``, and databases are the leaf level. A one-level id
is a database of the starting catalog unless a child catalog of that name exists, so
``["mydb", "mytable"]`` works as it does for pyiceberg's Glue users. Catalogs found to
exist are remembered for the connection. Apart from the operations, which then read as
the seed's steps ("parse the identifier to determine the level", "verify the parent").
"""

from __future__ import annotations

import contextlib
from typing import Any

from .. import errors
from .._core.identifiers import Identifier
from ._client import GlueClient
from ._errors import NoCatalogApis
from ._mapping import Database

__all__ = ["CatalogTree", "catalog_name"]


class CatalogTree:
    """The catalog hierarchy of one namespace instance, resolved through its client."""

    def __init__(self, client: GlueClient) -> None:
        self._client = client
        self._root_id: str | None = client.config.catalog_id
        self._known: set[str] = set()

    @property
    def enabled(self) -> bool:
        """Child catalogs are namespace levels (see ``GlueClient.child_catalogs``)."""
        return self._client.child_catalogs

    async def root_id(self) -> str:
        """The starting catalog's id (the account id when ``catalog_id`` is unset)."""
        if self._root_id is None:
            self._root_id = await self._client.caller_account()
        return self._root_id

    async def child_id(self, path: Identifier) -> str:
        return f"{await self.root_id()}:{'/'.join(path)}"

    async def exists(self, path: Identifier) -> bool:
        if not path:
            return True
        catalog_id = await self.child_id(path)
        if catalog_id in self._known:
            return True
        try:
            await self._client.call(
                "get_catalog",
                f"GetCatalog {'$'.join(path)}",
                CatalogId=catalog_id,
                not_found=errors.NamespaceNotFoundError,
            )
        except (errors.NamespaceNotFoundError, NoCatalogApis):
            return False
        self._known.add(catalog_id)
        return True

    def forget(self, catalog_id: str) -> None:
        """A catalog was deleted."""
        self._known.discard(catalog_id)

    async def catalog_of(self, path: Identifier) -> str | None:
        """The CatalogId of a catalog path (None: the default account catalog)."""
        if not path:
            return self._client.config.catalog_id
        if not self.enabled:
            raise errors.InvalidInputError(
                "child catalogs are off (child_catalogs=false, or the endpoint lacks the "
                "catalog APIs): namespaces are databases"
            )
        if not await self.exists(path):
            raise errors.NamespaceNotFoundError(f"catalog {'$'.join(path)!r} not found")
        return await self.child_id(path)

    async def database(self, path: Identifier) -> Database:
        """A namespace that must be a database: child catalogs, then the database."""
        if not path:
            raise errors.InvalidInputError("tables live in a database, not in the root catalog")
        return Database(await self.catalog_of(path[:-1]), path[-1], path)

    async def kind(self, path: Identifier) -> str:
        """``catalog`` or ``database``: a child catalog of that name wins (seed 004)."""
        if not path:
            return "catalog"
        if self.enabled:
            await self.catalog_of(path[:-1])
            if await self.exists(path):
                return "catalog"
        return "database"

    async def children(
        self, path: Identifier, what: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The Glue records of (databases, child catalogs) of a catalog namespace."""
        catalog_id = await self.catalog_of(path)
        databases = await self._client.pages(
            "get_databases", "DatabaseList", what, CatalogId=catalog_id
        )
        catalogs: list[dict[str, Any]] = []
        if self.enabled:
            parent = catalog_id or await self.root_id()
            with contextlib.suppress(NoCatalogApis):
                catalogs = await self._client.pages(
                    "get_catalogs", "CatalogList", what, ParentCatalogId=parent, Recursive=False
                )
        return databases, catalogs

    async def child_names(self, path: Identifier, what: str) -> tuple[list[str], list[str]]:
        """(databases, child catalogs) of a catalog namespace, by name."""
        databases, catalogs = await self.children(path, what)
        return [str(d["Name"]) for d in databases], [catalog_name(c) for c in catalogs]


def catalog_name(record: dict[str, Any]) -> str:
    """A child catalog's own name (Glue names it by its path from the root, ``a/b``)."""
    return str(record["Name"]).rsplit("/", 1)[-1]
