"""``GlueNamespace``: seed 004's basic operations, in the seed's order, then the rest.

CreateNamespace, ListNamespaces, DescribeNamespace, DropNamespace, DeclareTable,
ListTables, DescribeTable and DeregisterTable follow the seed's steps; RegisterTable,
TableExists, DropTable and RenameTable follow, and every data operation comes from
:class:`~.._storage.operations.StorageTableOperations`. The calls go through
:class:`~._client.GlueClient`, ids are resolved by :class:`~._catalogs.CatalogTree`
and Glue's records are read and written by :mod:`._mapping`.

Deletion (decided once in ``_storage.tables``): the storage root is ``root`` when
configured; DropTable deletes a table's data only strictly inside it (or below a
``drop_allowed_locations`` prefix; for S3, bucket and key prefix are compared),
never the root itself, a directory inside or holding another Lance table, nor
the place of the table whose default location (``<root>/<namespace...>/<name>``)
it is. Without ``root`` only a table's own default location (under the cwd) is
deleted. Elsewhere a drop deregisters the table and keeps its data.
RegisterTable (a Lance table required) and DeclareTable (no data yet) refuse
the root and places inside, holding or belonging to another table.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from .. import errors
from .._core.identifiers import Identifier, validate_identifier
from .._core.modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, REGISTER_MODES, parse_mode
from .._core.namespace_guard import NamespaceGuard
from .._core.paging import page_of
from .._core.unique_names import refuse_existing_table
from .._storage.operations import StorageTableOperations
from .._storage.places import Claims
from .._storage.table_base import StorageTable
from .._storage.tables import LanceTables, catalog_claims, lance_parameters
from ..models import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    DropTableRequest,
    DropTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from ._catalogs import CatalogTree, catalog_name
from ._client import GlueClient
from ._mapping import (
    NAMESPACE_TYPE,
    Database,
    glue_columns,
    is_lance,
    location_of,
    parameters_of,
    table_input,
)
from ._properties import GlueConfig

__all__ = ["GlueNamespace"]


class GlueNamespace(StorageTableOperations):
    """``impl="glue"``: Lance tables as EXTERNAL_TABLEs of the AWS Glue Data Catalog."""

    impl_name: ClassVar[str] = "glue"
    delimiter = "$"
    config: GlueConfig

    def __init__(self, config: GlueConfig) -> None:
        super().__init__(config)
        self.root = (config.root or os.getcwd()).rstrip("/")
        self.tables = LanceTables(
            threads=config.worker_threads,
            backend="glue",
            storage_options=config.storage,
            storage_root=config.root,
            drop_allowed=config.drop_allowed_locations,
            table_option_keys=config.table_storage_options,
            confined=config.confine_storage,
            confine_root=self.root,
            allowed_locations=config.allowed_locations,
        )
        self._glue = GlueClient(config)
        self._catalogs = CatalogTree(self._glue)
        # DeleteDatabase cascades: a Restrict drop checks "empty" itself, so creations
        # inside a namespace are kept apart from its drop (in this process)
        self._guard = NamespaceGuard()

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(GlueConfig.from_properties(properties))

    def namespace_id(self) -> str:
        return (
            f"GlueNamespace(catalog_id={self.config.catalog_id!r}, "
            f"region={self.config.region!r}, endpoint={self.config.endpoint!r})"
        )

    async def aclose(self) -> None:
        await self._glue.aclose()

    # -- identifiers ------------------------------------------------------------------------

    def _ids(self, body: Mapping[str, Any], what: str, *, allow_root: bool = True) -> Identifier:
        # storage_backed: default table locations are built from the names
        return validate_identifier(
            body.get("id"),
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=allow_root,
            what=what,
        )

    async def _table_ref(self, body: Mapping[str, Any]) -> tuple[Database, str]:
        parts = self._ids(body, "table id", allow_root=False)
        if len(parts) < 2:
            raise errors.InvalidInputError("a Glue table id is [catalog..., database, table]")
        return await self._catalogs.database(parts[:-1]), parts[-1]

    # -- namespaces: catalogs and databases ------------------------------------------------

    async def _get_database(self, database: Database, what: str) -> dict[str, Any]:
        answer = await self._glue.call(
            "get_database",
            what,
            CatalogId=database.catalog_id,
            Name=database.name,
            not_found=errors.NamespaceNotFoundError,
        )
        return dict(answer.get("Database") or {})

    async def _namespace_parameters(self, path: Identifier, what: str) -> dict[str, str]:
        if await self._catalogs.kind(path) == "catalog":
            if not path:
                return {}
            answer = await self._glue.call(
                "get_catalog",
                what,
                CatalogId=await self._catalogs.child_id(path),
                not_found=errors.NamespaceNotFoundError,
            )
            return dict((answer.get("Catalog") or {}).get("Parameters") or {})
        database = await self._get_database(await self._catalogs.database(path), what)
        return dict(database.get("Parameters") or {})

    async def _tables_of(self, database: Database, what: str) -> list[dict[str, Any]]:
        """Every Glue table of a database, Lance or not."""
        return await self._glue.pages(
            "get_tables",
            "TableList",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            not_found=errors.NamespaceNotFoundError,
        )

    # CreateNamespace

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        path = self._ids(request.to_dict(), "namespace id", allow_root=False)
        async with self._guard.filling(path[:-1]):
            return await self._create_namespace_guarded(request)

    async def _create_namespace_guarded(
        self, request: CreateNamespaceRequest
    ) -> CreateNamespaceResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id", allow_root=False)
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        parameters = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
        as_catalog = parameters.pop(NAMESPACE_TYPE, "database").lower() == "catalog"
        what = f"CreateNamespace {'$'.join(path)}"
        parent = await self._catalogs.catalog_of(path[:-1])  # the parent must exist (seed 004)
        try:
            existing = await self._namespace_parameters(path, what)
        except errors.NamespaceNotFoundError:
            existing = None
        if existing is not None:
            if mode == "Create":
                raise errors.NamespaceAlreadyExistsError(f"{what}: it exists already")
            if mode == "ExistOk":
                return CreateNamespaceResponse.from_dict({"properties": existing})
            await self._drop_tree(path, what)
        if as_catalog:
            if not self._catalogs.enabled:
                raise errors.InvalidInputError(
                    "child catalogs are off (child_catalogs=false, or the endpoint lacks the "
                    "catalog APIs)"
                )
            await self._glue.call(
                "create_catalog",
                what,
                Name="/".join(path),
                CatalogInput={"Parameters": parameters},
                exists=errors.NamespaceAlreadyExistsError,
            )
        else:
            await self._glue.call(
                "create_database",
                what,
                CatalogId=parent,
                DatabaseInput={"Name": path[-1], "Parameters": parameters},
                not_found=errors.NamespaceNotFoundError,
                exists=errors.NamespaceAlreadyExistsError,
            )
        return CreateNamespaceResponse.from_dict({"properties": parameters})

    # ListNamespaces

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id")
        what = f"ListNamespaces {'$'.join(path) or '<root>'}"
        names: list[str] = []
        if await self._catalogs.kind(path) == "catalog":
            databases, catalogs = await self._catalogs.children(path, what)
            names += [str(d["Name"]) for d in databases if d.get("Name")]
            names += [catalog_name(c) for c in catalogs if c.get("Name")]
        else:
            database = await self._catalogs.database(path)
            await self._get_database(database, what)  # databases are leaves
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListNamespacesResponse.from_dict({"namespaces": page, "page_token": token})

    # DescribeNamespace (and NamespaceExists)

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        path = self._ids(request.to_dict(), "namespace id")
        parameters = await self._namespace_parameters(path, f"DescribeNamespace {'$'.join(path)}")
        return DescribeNamespaceResponse.from_dict({"properties": parameters})

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        path = self._ids(request.to_dict(), "namespace id")
        await self._namespace_parameters(path, f"NamespaceExists {'$'.join(path)}")
        return NamespaceExistsResponse()

    # DropNamespace

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        path = self._ids(request.to_dict(), "namespace id", allow_root=False)
        async with self._guard.dropping(path):
            return await self._drop_namespace_guarded(request)

    async def _drop_namespace_guarded(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id", allow_root=False)
        mode = parse_mode(body.get("mode"), DROP_MODES, default="Fail")
        behavior = parse_mode(body.get("behavior"), DROP_BEHAVIORS, default="Restrict")
        what = f"DropNamespace {'$'.join(path)}"
        try:
            parameters = await self._namespace_parameters(path, what)
        except errors.NamespaceNotFoundError:
            if mode == "Skip":
                return DropNamespaceResponse.from_dict({})
            raise
        if behavior == "Cascade":
            await self._drop_tree(path, what)
        else:
            await self._drop_one(path, what)
        return DropNamespaceResponse.from_dict({"properties": parameters})

    async def _drop_one(self, path: Identifier, what: str) -> None:
        """Restrict: verified empty before anything is deleted (seed 004)."""
        if await self._catalogs.kind(path) == "catalog":
            databases, catalogs = await self._catalogs.child_names(path, what)
            if databases or catalogs:
                raise errors.NamespaceNotEmptyError(
                    f"{what}: holds {len(databases)} database(s) and {len(catalogs)} catalog(s)"
                )
            catalog_id = await self._catalogs.child_id(path)
            await self._glue.call(
                "delete_catalog",
                what,
                CatalogId=catalog_id,
                not_found=errors.NamespaceNotFoundError,
            )
            self._catalogs.forget(catalog_id)
            return
        database = await self._catalogs.database(path)
        tables = await self._tables_of(database, what)
        if tables:
            raise errors.NamespaceNotEmptyError(f"{what}: holds {len(tables)} table(s)")
        await self._glue.call(
            "delete_database",
            what,
            CatalogId=database.catalog_id,
            Name=database.name,
            not_found=errors.NamespaceNotFoundError,
        )

    async def _drop_tree(self, path: Identifier, what: str) -> None:
        """Cascade: Lance tables (with data) and children; a foreign table stops it."""
        if await self._catalogs.kind(path) == "catalog":
            databases, catalogs = await self._catalogs.child_names(path, what)
            for name in catalogs:
                await self._drop_tree((*path, name), what)
            for name in databases:
                await self._drop_tree((*path, name), what)
            await self._drop_one(path, what)
            return
        database = await self._catalogs.database(path)
        tables = await self._tables_of(database, what)
        foreign = [str(t.get("Name")) for t in tables if not is_lance(t)]
        if foreign:
            raise errors.NamespaceNotEmptyError(
                f"{what}: holds tables that are not Lance tables: {', '.join(foreign)}"
            )
        for table in tables:
            await self._purge(database, table, what)
        await self._drop_one(path, what)

    # -- tables: Glue's EXTERNAL_TABLEs --------------------------------------------------------

    async def _get_table(self, database: Database, name: str, what: str) -> dict[str, Any]:
        answer = await self._glue.call(
            "get_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            Name=name,
            not_found=errors.TableNotFoundError,
        )
        return dict(answer.get("Table") or {})

    async def _get_lance_table(self, database: Database, name: str, what: str) -> dict[str, Any]:
        table = await self._get_table(database, name, what)
        if not is_lance(table):
            raise errors.InvalidInputError(f"{what}: {name!r} is not a Lance table")
        return table

    async def _create_catalog_entry(
        self,
        database: Database,
        name: str,
        location: str,
        parameters: dict[str, str],
        what: str,
        columns: list[dict[str, str]] | None = None,
    ) -> None:
        await self._glue.call(
            "create_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            TableInput=table_input(name, location, parameters, columns),
            not_found=errors.NamespaceNotFoundError,
            exists=errors.TableAlreadyExistsError,
        )

    async def _delete_catalog_entry(
        self, database: Database, name: str, what: str, **route: Any
    ) -> None:
        await self._glue.call(
            "delete_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            Name=name,
            **route,
        )

    # DeclareTable

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        parts = self._ids(request.to_dict(), "table id", allow_root=False)
        async with self._guard.filling(parts[:-1]):
            return await self._declare_table_guarded(request)

    async def _declare_table_guarded(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        database, name = await self._table_ref(body)
        what = f"DeclareTable {database.table_id(name)}"
        await self._get_database(database, what)  # seed 004: verify the parent
        location = body.get("location") or self._default_location(database, name)
        parameters = lance_parameters(body.get("properties"))
        await refuse_existing_table(self, (*database.path, name))
        await self.tables.check_placement(
            location,
            require_table=False,
            claims=self._claims(database, name),
            what=f"{what}: location",
        )
        await self._create_catalog_entry(database, name, location, parameters, what)
        return DeclareTableResponse.from_dict(
            {
                "location": location,
                "storage_options": self.tables.options_for(parameters),
                "properties": parameters,
            }
        )

    # ListTables

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id")
        what = f"ListTables {'$'.join(path) or '<root>'}"
        names: list[str] = []
        if await self._catalogs.kind(path) == "database":
            database = await self._catalogs.database(path)
            await self._get_database(database, what)  # seed 004: verify it exists
            tables = await self._tables_of(database, what)
            names = [str(t["Name"]) for t in tables if t.get("Name") and is_lance(t)]
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})

    # DescribeTable (and TableExists)

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        body = request.to_dict()
        database, name = await self._table_ref(body)
        what = f"DescribeTable {database.table_id(name)}"
        table = await self._get_lance_table(database, name, what)
        parameters = parameters_of(table)
        location = location_of(table)
        result: dict[str, Any] = {
            "table": name,
            "namespace": list(database.path),
            "location": location,
            "storage_options": self.tables.options_for(parameters),
            "properties": parameters,
        }
        await self.tables.complete(result, body, location, body.get("version"))
        return DescribeTableResponse.from_dict(result)

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        if isinstance(request.to_dict().get("version"), int):  # that version must exist too
            body = request.to_dict()
            await self._describe_table(
                DescribeTableRequest.from_dict({"id": body.get("id"), "version": body["version"]})
            )
            return TableExistsResponse()
        database, name = await self._table_ref(request.to_dict())
        await self._get_lance_table(database, name, f"TableExists {database.table_id(name)}")
        return TableExistsResponse()

    # DeregisterTable

    async def _deregister(self, database: Database, name: str, what: str) -> dict[str, Any]:
        table = await self._get_lance_table(database, name, what)
        await self._delete_catalog_entry(database, name, what, not_found=errors.TableNotFoundError)
        return table

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        database, name = await self._table_ref(request.to_dict())
        table = await self._deregister(database, name, f"DeregisterTable {database.table_id(name)}")
        return DeregisterTableResponse.from_dict(_removed(database, name, table))

    # -- beyond seed 004 ----------------------------------------------------------------------

    # RegisterTable

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        parts = self._ids(request.to_dict(), "table id", allow_root=False)
        async with self._guard.filling(parts[:-1]):
            return await self._register_table_guarded(request)

    async def _register_table_guarded(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        database, name = await self._table_ref(body)
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        what = f"RegisterTable {database.table_id(name)}"
        if mode == "Create":  # a taken name is TableAlreadyExists, whatever the location
            await refuse_existing_table(self, (*database.path, name))
        dataset = await self.tables.check_placement(
            location,
            require_table=True,
            claims=self._claims(database, name),
            what=f"{what}: location",
        )
        parameters = lance_parameters(body.get("properties"))
        if mode == "Overwrite":
            with contextlib.suppress(errors.TableNotFoundError):
                await self._deregister(database, name, what)
        columns = glue_columns(dataset.schema)
        await self._create_catalog_entry(database, name, location, parameters, what, columns)
        return RegisterTableResponse.from_dict({"location": location, "properties": parameters})

    # DropTable

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        database, name = await self._table_ref(request.to_dict())
        what = f"DropTable {database.table_id(name)}"
        table = await self._get_lance_table(database, name, what)
        await self._purge(database, table, what)
        return DropTableResponse.from_dict(_removed(database, name, table))

    async def _purge(self, database: Database, table: Mapping[str, Any], what: str) -> None:
        """Data first: a failed delete leaves the table registered, never orphaned data."""
        location = location_of(table)
        name = str(table["Name"])
        if location:
            await self.tables.drop_data(
                location,
                self.tables.options_for(table.get("Parameters") or {}),
                default_location=self._default_location(database, name),
                claims=self._claims(database, name),
            )
        await self._deregister(database, name, what)

    # RenameTable

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """Glue has no rename: create the new entry (conflict-checked), then drop the old."""
        body = request.to_dict()
        database, name = await self._table_ref(body)
        new_name = body.get("new_table_name")
        target_name = validate_identifier(
            [new_name] if isinstance(new_name, str) else new_name,
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=False,
            what="new_table_name",
        )[0]
        new_parent = body.get("new_namespace_id")
        target = (
            await self._catalogs.database(
                self._ids({"id": new_parent}, "new_namespace_id", allow_root=False)
            )
            if new_parent is not None
            else database
        )
        what = f"RenameTable {database.table_id(name)}"
        table = await self._get_lance_table(database, name, what)
        await self._get_database(target, what)
        location = location_of(table)
        parameters = parameters_of(table)
        columns = (table.get("StorageDescriptor") or {}).get("Columns")
        async with self._guard.filling(target.path):
            await self._create_catalog_entry(
                target, target_name, location, parameters, what, columns
            )
        try:
            await self._delete_catalog_entry(
                database, name, what, not_found=errors.TableNotFoundError
            )
        except BaseException:
            with contextlib.suppress(errors.LanceNamespaceError):
                await self._delete_catalog_entry(target, target_name, what)
            raise
        return RenameTableResponse()

    # -- storage: where tables go, and the columns Glue keeps ----------------------------------

    async def _creation_location(self, table: list[str]) -> str:
        database, name = await self._table_ref({"id": table})
        return self._default_location(database, name)

    def _default_location(self, database: Database, name: str) -> str:
        return "/".join((self.root, *database.path, name))

    def _claims(self, database: Database, name: str) -> Claims:
        """Other tables at a place below the root, by the default layout."""
        return catalog_claims(self, self.tables, (*database.path, name), shortest=2)

    async def _schema_changed(self, table: StorageTable, dataset: Any) -> None:
        """Keep ``StorageDescriptor.Columns`` the table's, so Athena and Spark-on-Glue
        users see the real columns after an added, altered or dropped column."""
        database, name = await self._table_ref({"id": table.id})
        what = f"update the columns of {database.table_id(name)}"
        stored = await self._get_lance_table(database, name, what)
        await self._glue.call(
            "update_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            TableInput=table_input(
                name, location_of(stored), parameters_of(stored), glue_columns(dataset.schema)
            ),
            not_found=errors.TableNotFoundError,
        )


def _removed(database: Database, name: str, table: Mapping[str, Any]) -> dict[str, Any]:
    """The answer of DeregisterTable and DropTable: the table's id, location and properties
    as the catalog held them."""
    return {
        "id": [*database.path, name],
        "location": (table.get("StorageDescriptor") or {}).get("Location"),
        "properties": table.get("Parameters") or {},
    }
