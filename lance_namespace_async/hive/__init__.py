"""Lance tables in a Hive Metastore (the "Lance HMS Namespace"): ``impl="hive"``.

The root namespace is the whole metastore and its databases are the child
namespaces, so identifiers are ``[database]`` and ``[database, table]``. A Lance
table is an ``EXTERNAL_TABLE`` with the parameter ``table_type=lance`` and its
location as the storage descriptor location; namespace properties are the
database parameters.

Thrift is blocking, so calls run on anyio worker threads through a bounded pool
of ``pool_size`` open metastore connections (not a connection per call). A
broken connection is dropped and reopened; reads are retried on it up to
``max_retries`` times, writes only when the request cannot have reached the
metastore (the connection failed to open). Each call is held to a deadline
(``call_timeout``, or the caller's ``timeout=``) and to ``max_response_bytes`` however
the metastore answers (``_thrift``). The thrift client is the one
pymetastore ships (generated from Hive's IDL, maintained on PyPI), rather than
a copy generated here. Only calls that Hive 2.3 through 4 all answer are used:
Hive 4 dropped ``get_table`` and ``get_table_objects_by_name`` for their
``*_req`` forms, which 2.3 already has.

Deletion (decided once in ``_storage.tables``): the storage root is ``root`` when
configured; DropTable deletes a table's data only strictly inside it (or below a
``drop_allowed_locations`` prefix), never the root itself, a directory inside
or holding another Lance table, nor the place of the table whose default
location (``<root>/<database>/<name>``) it is. Without ``root`` only a table's
own default location (``<database location>/<name>``) is deleted. Elsewhere a
drop deregisters the table and keeps its data. RegisterTable (a Lance table
required) and DeclareTable (no data yet) refuse the root and places inside,
holding or belonging to another table.

Layer (ARCHITECTURE.md): a backend, independent of the others. May import storage,
the core, ``errors`` and ``models``; never another backend.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self, TypeVar

from .. import errors
from .._core.arrow_json import hive_type
from .._core.identifiers import Identifier, validate_identifier
from .._core.modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, REGISTER_MODES, parse_mode
from .._core.paging import page_of
from .._core.unique_names import refuse_existing_table
from .._storage.operations import StorageTableOperations
from .._storage.places import Claims, canonical
from .._storage.table_base import StorageTable
from .._storage.tables import (
    TABLE_TYPE,
    LanceTables,
    catalog_claims,
    is_lance_table,
    lance_parameters,
)
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

try:
    from pymetastore.hive_metastore import ttypes as hive
    from thrift.protocol.TProtocol import TProtocolException
    from thrift.Thrift import TException
except ImportError as _missing:  # pragma: no cover - exercised without the extra only
    raise errors.MissingDependencyError.for_extra("impl 'hive'", "hive", _missing) from _missing

from ._properties import HiveConfig
from ._thrift import AnswerTooLarge, CallBudget, DeadlinePassed, NotSent, Pool

__all__ = ["HiveConfig", "HiveNamespace"]

T = TypeVar("T")
#: parameters the metastore keeps for itself; not storage options
_HMS_PARAMETERS = frozenset(
    {
        TABLE_TYPE,
        "EXTERNAL",
        "transient_lastDdlTime",
        "COLUMN_STATS_ACCURATE",
        "numFiles",
        "numRows",
        "rawDataSize",
        "totalSize",
        # Hive 4: its stats, and what it adds to a managed table it made external
        "numFilesErasureCoded",
        "TRANSLATED_TO_EXTERNAL",
        "external.table.purge",
    }
)


def _get_table(client: Any, database: str, name: str) -> Any:
    """One table. ``get_table_req``: Hive 4 removed ``get_table`` (2.3 has both)."""
    return client.get_table_req(hive.GetTableRequest(dbName=database, tblName=name)).table


def _get_tables(client: Any, database: str, names: list[str]) -> list[Any]:
    """Tables by name. ``get_table_objects_by_name_req``: Hive 4 removed the plain call."""
    request = hive.GetTablesRequest(dbName=database, tblNames=names)
    return list(client.get_table_objects_by_name_req(request).tables or [])


def _is_lance(table: Any) -> bool:
    return is_lance_table(
        table.parameters, table_kind=table.tableType, external_kind="EXTERNAL_TABLE"
    )


def _hive_columns(schema: Any) -> list[Any]:
    return [hive.FieldSchema(name=field.name, type=hive_type(field.type)) for field in schema]


class HiveNamespace(StorageTableOperations):
    """``impl="hive"``: Lance tables as EXTERNAL_TABLEs of a Hive Metastore."""

    impl_name: ClassVar[str] = "hive"
    delimiter = "."
    config: HiveConfig

    def __init__(self, config: HiveConfig) -> None:
        super().__init__(config)
        self.tables = LanceTables(
            threads=config.pool_size,
            backend="hive",
            storage_options=config.storage,
            storage_root=config.root,
            drop_allowed=config.drop_allowed_locations,
            table_option_keys=config.table_storage_options,
            confined=config.confine_storage,
            allowed_locations=config.allowed_locations,
        )
        self._pool = Pool(config)

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(HiveConfig.from_properties(properties))

    def namespace_id(self) -> str:
        return f"HiveNamespace(uri={self.config.uri!r})"

    async def aclose(self) -> None:
        await self.tables.run(self._pool.close)

    # -- plumbing -------------------------------------------------------------------

    async def _hms(
        self,
        what: str,
        call: Callable[[Any], T],
        *,
        idempotent: bool,
        not_found: type[errors.LanceNamespaceError] = errors.NamespaceNotFoundError,
        exists: type[errors.LanceNamespaceError] = errors.NamespaceAlreadyExistsError,
    ) -> T:
        budget = CallBudget.for_call(self.config)  # here: the caller's timeout= is in context

        def run() -> T:
            try:
                return self._pool.run(call, budget, idempotent=idempotent)
            except DeadlinePassed:
                raise errors.ServiceUnavailableError(
                    f"{what}: timed out (the call's deadline of {budget.total:g} s passed)"
                ) from None
            except AnswerTooLarge:
                raise errors.InternalError(
                    f"{what}: the metastore's answer is larger than max_response_bytes "
                    f"({budget.max_bytes} bytes)"
                ) from None
            except TProtocolException as exc:
                raise errors.InternalError(f"{what}: malformed metastore answer ({exc})") from None
            except hive.NoSuchObjectException as exc:
                raise not_found(f"{what}: {exc.message}") from None
            except hive.AlreadyExistsException as exc:
                raise exists(f"{what}: {exc.message}") from None
            except (hive.InvalidObjectException, hive.InvalidOperationException) as exc:
                raise errors.InvalidInputError(f"{what}: {exc.message}") from None
            except hive.MetaException as exc:
                raise errors.InternalError(f"{what}: {exc.message}") from None
            except (NotSent, TException, OSError, EOFError) as exc:
                raise errors.ServiceUnavailableError(
                    f"{what}: metastore unreachable ({type(exc).__name__}: {exc})"
                ) from None

        return await self.tables.run(run, kind="thrift")

    def _namespace(self, body: Mapping[str, Any], *, allow_root: bool = True) -> Identifier:
        parts = validate_identifier(
            body.get("id"),
            delimiter=self.delimiter,
            storage_backed=True,  # default table locations are built from the names
            allow_root=allow_root,
            what="namespace id",
        )
        if len(parts) > 1:
            raise errors.InvalidInputError(
                f"Hive namespaces are databases: the namespace id has {len(parts)} levels"
            )
        return parts

    def _table(self, body: Mapping[str, Any]) -> tuple[str, str]:
        parts = validate_identifier(
            body.get("id"),
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=False,
            what="table id",
        )
        if len(parts) != 2:
            raise errors.InvalidInputError(
                f"a Hive table id is [database, table], got {len(parts)} level(s)"
            )
        return parts[0], parts[1]

    async def _database(self, name: str, what: str) -> Any:
        return await self._hms(what, lambda c: c.get_database(name), idempotent=True)

    # -- namespaces -----------------------------------------------------------------------

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        body = request.to_dict()
        parts = self._namespace(body, allow_root=False)
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        parameters = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
        name = parts[0]
        what = f"CreateNamespace {name}"
        if mode == "Overwrite":
            with contextlib.suppress(errors.NamespaceNotFoundError):
                await self._database(name, what)  # Hive 2.3 lists a missing one with an NPE
                await self._drop_database(name, cascade=True, what=what)
        database = hive.Database(name=name, parameters=parameters)
        try:
            await self._hms(what, lambda c: c.create_database(database), idempotent=False)
        except errors.NamespaceAlreadyExistsError:
            if mode != "ExistOk":
                raise
            existing = await self._database(name, what)
            return CreateNamespaceResponse.from_dict({"properties": existing.parameters or {}})
        return CreateNamespaceResponse.from_dict({"properties": parameters})

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        body = request.to_dict()
        parts = self._namespace(body)
        names: list[str] = []
        if parts:
            await self._database(parts[0], f"ListNamespaces {parts[0]}")  # databases are leaves
        else:
            names = await self._hms(
                "ListNamespaces", lambda c: list(c.get_all_databases()), idempotent=True
            )
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListNamespacesResponse.from_dict({"namespaces": page, "page_token": token})

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        parts = self._namespace(request.to_dict())
        if not parts:
            return DescribeNamespaceResponse.from_dict({"properties": {}})
        database = await self._database(parts[0], f"DescribeNamespace {parts[0]}")
        return DescribeNamespaceResponse.from_dict({"properties": database.parameters or {}})

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        parts = self._namespace(request.to_dict())
        if parts:
            await self._database(parts[0], f"NamespaceExists {parts[0]}")
        return NamespaceExistsResponse()

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        body = request.to_dict()
        parts = self._namespace(body, allow_root=False)
        mode = parse_mode(body.get("mode"), DROP_MODES, default="Fail")
        behavior = parse_mode(body.get("behavior"), DROP_BEHAVIORS, default="Restrict")
        what = f"DropNamespace {parts[0]}"
        try:
            database = await self._database(parts[0], what)
        except errors.NamespaceNotFoundError:
            if mode == "Skip":
                return DropNamespaceResponse.from_dict({})
            raise
        await self._drop_database(parts[0], cascade=behavior == "Cascade", what=what)
        return DropNamespaceResponse.from_dict({"properties": database.parameters or {}})

    async def _drop_database(self, name: str, *, cascade: bool, what: str) -> None:
        """Restrict: refuse a database with tables. Cascade: Lance tables only, data too."""
        names = await self._hms(what, lambda c: list(c.get_all_tables(name)), idempotent=True)
        if names and not cascade:
            raise errors.NamespaceNotEmptyError(f"{what}: holds {len(names)} table(s)")
        if names:
            tables = await self._hms(what, lambda c: _get_tables(c, name, names), idempotent=True)
            foreign = [t.tableName for t in tables if not _is_lance(t)]
            if foreign:
                raise errors.NamespaceNotEmptyError(
                    f"{what}: holds tables that are not Lance tables: {', '.join(foreign)}"
                )
            for table in tables:
                await self._purge(table, what)
        await self._hms(what, lambda c: c.drop_database(name, False, False), idempotent=False)

    # -- tables -----------------------------------------------------------------------------

    async def _get_table(self, database: str, name: str, what: str) -> Any:
        return await self._hms(
            what,
            lambda c: _get_table(c, database, name),
            idempotent=True,
            not_found=errors.TableNotFoundError,
        )

    async def _get_lance_table(self, database: str, name: str, what: str) -> Any:
        try:
            table = await self._get_table(database, name, what)
        except errors.TableNotFoundError:
            await self._database(database, what)  # a missing database says so
            raise
        if not _is_lance(table):
            raise errors.InvalidInputError(f"{what}: {name!r} is not a Lance table")
        return table

    def _storage_options(self, parameters: Mapping[str, Any]) -> dict[str, str]:
        return self.tables.options_for(parameters, _HMS_PARAMETERS)

    async def _create_catalog_entry(
        self,
        database: str,
        name: str,
        location: str,
        parameters: dict[str, str],
        columns: list[Any],
        what: str,
    ) -> None:
        table = hive.Table(
            tableName=name,
            dbName=database,
            tableType="EXTERNAL_TABLE",
            parameters={**parameters, "EXTERNAL": "TRUE"},
            partitionKeys=[],
            sd=hive.StorageDescriptor(
                cols=columns,
                location=location,
                inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                serdeInfo=hive.SerDeInfo(
                    name=name,
                    serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                    parameters={},
                ),
                parameters={},
                compressed=False,
                numBuckets=-1,
                bucketCols=[],
                sortCols=[],
            ),
        )
        try:
            await self._hms(
                what,
                lambda c: c.create_table(table),
                idempotent=False,
                exists=errors.TableAlreadyExistsError,
            )
        except errors.InvalidInputError:
            await self._database(database, what)  # "no such database" arrives as invalid
            raise

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        parts = self._namespace(body)
        names: list[str] = []
        if parts:
            database = parts[0]
            what = f"ListTables {database}"
            await self._database(database, what)
            all_names = await self._hms(
                what, lambda c: list(c.get_all_tables(database)), idempotent=True
            )
            if all_names:
                tables = await self._hms(
                    what,
                    lambda c: _get_tables(c, database, all_names),
                    idempotent=True,
                )
                names = [t.tableName for t in tables if _is_lance(t)]
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        database, name = self._table(body)
        what = f"DeclareTable {database}.{name}"
        location = body.get("location") or await self._default_location(database, name, what)
        parameters = lance_parameters(body.get("properties"))
        await refuse_existing_table(self, (database, name))
        await self.tables.check_placement(
            location,
            require_table=False,
            claims=self._claims(database, name),
            what=f"{what}: location",
        )
        await self._create_catalog_entry(database, name, location, parameters, [], what)
        return DeclareTableResponse.from_dict(
            {
                "location": canonical(location),
                "storage_options": self._storage_options(parameters),
                "properties": parameters,
            }
        )

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        database, name = self._table(body)
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        what = f"RegisterTable {database}.{name}"
        if mode == "Create":  # a taken name is TableAlreadyExists, whatever the location
            await refuse_existing_table(self, (database, name))
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
        columns = _hive_columns(dataset.schema)
        await self._create_catalog_entry(database, name, location, parameters, columns, what)
        return RegisterTableResponse.from_dict(
            {"location": canonical(location), "properties": parameters}
        )

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        body = request.to_dict()
        database, name = self._table(body)
        what = f"DescribeTable {database}.{name}"
        table = await self._get_lance_table(database, name, what)
        parameters = {str(k): str(v) for k, v in (table.parameters or {}).items()}
        location = canonical(str(table.sd.location if table.sd else ""))
        result: dict[str, Any] = {
            "table": name,
            "namespace": [database],
            "location": location,
            "storage_options": self._storage_options(parameters),
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
        database, name = self._table(request.to_dict())
        await self._get_lance_table(database, name, f"TableExists {database}.{name}")
        return TableExistsResponse()

    async def _deregister(self, database: str, name: str, what: str) -> Any:
        table = await self._get_lance_table(database, name, what)
        await self._hms(
            what,
            lambda c: c.drop_table(database, name, False),
            idempotent=False,
            not_found=errors.TableNotFoundError,
        )
        return table

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        database, name = self._table(request.to_dict())
        table = await self._deregister(database, name, f"DeregisterTable {database}.{name}")
        return DeregisterTableResponse.from_dict(
            {
                "id": [database, name],
                "location": canonical(table.sd.location) if table.sd else None,
                "properties": table.parameters or {},
            }
        )

    async def _purge(self, table: Any, what: str) -> None:
        """Data first: a failed delete leaves the table registered, never orphaned data."""
        location = str(table.sd.location if table.sd else "")
        if location:
            await self.tables.drop_data(
                location,
                self._storage_options(table.parameters or {}),
                default_location=await self._default_location(table.dbName, table.tableName, what),
                claims=self._claims(table.dbName, table.tableName),
            )
        await self._hms(
            what,
            lambda c: c.drop_table(table.dbName, table.tableName, False),
            idempotent=False,
            not_found=errors.TableNotFoundError,
        )

    async def _schema_changed(self, table: StorageTable, dataset: Any) -> None:
        """Keep the Metastore's columns (``sd.cols``) the table's, so Hive and Spark
        users see them after an added, altered or dropped column."""
        database, name = self._table({"id": table.id})
        what = f"update the columns of {database}.{name}"
        stored = await self._get_lance_table(database, name, what)
        stored.sd.cols = _hive_columns(dataset.schema)
        await self._hms(
            what,
            lambda c: c.alter_table(database, name, stored),
            idempotent=True,
            not_found=errors.TableNotFoundError,
        )

    async def _creation_location(self, table: list[str]) -> str:
        database, name = self._table({"id": table})
        return await self._default_location(database, name, f"CreateTable {database}.{name}")

    async def _default_location(self, database: str, name: str, what: str) -> str:
        """``<root>/<database>/<name>``, or without a root ``<database location>/<name>``."""
        if self.config.root:
            return f"{self.config.root.rstrip('/')}/{database}/{name}"
        db = await self._database(database, what)
        return f"{str(db.locationUri).rstrip('/')}/{name}"

    def _claims(self, database: str, name: str) -> Claims:
        """Other tables at a place below the root, by the default layout."""
        return catalog_claims(self, self.tables, (database, name), shortest=2, longest=2)

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        database, name = self._table(request.to_dict())
        what = f"DropTable {database}.{name}"
        table = await self._get_lance_table(database, name, what)
        await self._purge(table, what)
        return DropTableResponse.from_dict(
            {
                "id": [database, name],
                "location": canonical(table.sd.location) if table.sd else None,
                "properties": table.parameters or {},
            }
        )

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        body = request.to_dict()
        database, name = self._table(body)
        new_name = body.get("new_table_name")
        target = validate_identifier(
            [new_name] if isinstance(new_name, str) else new_name,
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=False,
            what="new_table_name",
        )[0]
        new_parent = body.get("new_namespace_id")
        target_database = (
            self._namespace({"id": new_parent}, allow_root=False)[0]
            if new_parent is not None
            else database
        )
        what = f"RenameTable {database}.{name}"
        table = await self._get_lance_table(database, name, what)
        await self._database(target_database, what)
        try:
            await self._get_table(target_database, target, what)
        except errors.TableNotFoundError:
            pass
        else:
            raise errors.TableAlreadyExistsError(
                f"{what}: {target_database}.{target} exists already"
            )
        table.tableName = target
        table.dbName = target_database
        await self._hms(
            what,
            lambda c: c.alter_table(database, name, table),
            idempotent=False,
            not_found=errors.TableNotFoundError,
        )
        return RenameTableResponse()
