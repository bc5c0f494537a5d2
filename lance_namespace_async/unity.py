"""Lance tables in Unity Catalog OSS: ``impl="unity"``.

Mapping (the Lance Namespace's Unity implementation spec).
The root namespace lists Unity catalogs; ``[catalog,
schema]`` is a namespace (Unity's fixed catalog.schema.table hierarchy, so
identifiers deeper than that, or shallower where a level is required, are
InvalidInput). A Lance table is an ``EXTERNAL`` Unity table with
``data_source_format`` ``TEXT`` (Unity has no Lance format), ``storage_location``
the Lance table root and ``properties.table_type=lance`` (case-insensitive when
read); its ``columns`` are the Lance table's Arrow schema in Unity's column
format whenever that schema is known (RegisterTable). The REST base is
``/api/2.1/unity-catalog``, as Unity OSS serves it.

Namespaces and tables are listed sorted, as the seed says, so every page of the
server is followed first and the sorted result is paginated here. Beyond the
seed: NamespaceExists, TableExists, RegisterTable, DropTable (also deletes the
data), detailed DescribeTable, catalogs created and dropped where the server
allows it, and DropNamespace Cascade over Lance tables only.

Deletion (decided once in ``_storage.tables``): the storage root is ``root`` when
the properties set it; DropTable deletes a table's data only strictly inside it
(or below a ``drop_allowed_locations`` prefix), never the root itself, a
directory inside or holding another Lance table, nor the place of the table
whose default location (``<root>/<catalog>/<schema>/<name>``) it is. Without
``root`` set, only a table's own default location (under ``/tmp/lance``) is
deleted. Elsewhere a drop deregisters the table and keeps its data.
RegisterTable (a Lance table required) and DeclareTable (no data yet) refuse
the root and places inside, holding or belonging to another table.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self, TypeVar
from urllib.parse import quote

import attrs

from . import errors
from ._core import pipeline_hook
from ._core.arrow_json import spark_type
from ._core.config import mask_url_userinfo, parse_bool, parse_positive_int, prop
from ._core.identifiers import Identifier, validate_identifier
from ._core.modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, REGISTER_MODES, parse_mode
from ._core.paging import PageTrail, page_of
from ._core.unique_names import refuse_existing_table
from ._storage.operations import StorageTableOperations
from ._storage.places import (
    Claims,
    allowed_locations_prop,
    confine_storage_prop,
    drop_allowed_locations_prop,
    storage_root_prop,
    table_storage_options_prop,
    table_version_tracking_prop,
)
from ._storage.tables import LanceTables, catalog_claims, is_lance_table, lance_parameters
from ._storage.vended_credentials import (
    VENDING_DOC,
    VendedCredentialCache,
    VendedCredentials,
    from_unity,
    wants_vending,
    with_vended,
)
from ._transport.catalog import CatalogHttp, ErrorClass
from ._transport.config import HttpConfig, parse_http_url
from ._transport.transport import HttpTransport
from .models import (
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
    TableExistsRequest,
    TableExistsResponse,
)

__all__ = ["UnityConfig", "UnityNamespace", "arrow_to_unity_columns"]

API_BASE = "/api/2.1/unity-catalog"
PAGE_SIZE = 50  # the largest max_results Unity's API declares


@attrs.frozen
class UnityConfig(HttpConfig):
    """Properties of ``impl="unity"`` as the Unity implementation spec lists them (ms)."""

    endpoint: str = prop(
        parse=parse_http_url,
        shown=mask_url_userinfo,
        doc="Unity Catalog server, e.g. http://host:8080 (a user:password@ is HTTP Basic auth)",
    )
    read_timeout: int = prop(default=300000, parse=parse_positive_int)
    root: str = storage_root_prop(
        default="/tmp/lance",
        doc="storage root of new tables; once set, DropTable deletes data inside it "
        "(unset: only at a table's default location)",
    )
    drop_allowed_locations: tuple[str, ...] = drop_allowed_locations_prop()
    table_storage_options: frozenset[str] | None = table_storage_options_prop()
    confine_storage: bool = confine_storage_prop()
    spark_clusters: dict[str, str] = pipeline_hook.spark_clusters_prop()
    job_heartbeat_timeout: float = pipeline_hook.job_heartbeat_timeout_prop()
    job_retention_days: float = pipeline_hook.job_retention_days_prop()
    pipeline_allow_udfs: bool = pipeline_hook.pipeline_allow_udfs_prop()
    table_version_tracking_enabled: bool = table_version_tracking_prop()
    allowed_locations: tuple[str, ...] = allowed_locations_prop()
    worker_threads: int = prop(default=8, parse=parse_positive_int)
    vend_credentials: bool = prop(default=False, parse=parse_bool, doc=VENDING_DOC)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)


def _is_lance(table: Mapping[str, Any]) -> bool:
    return is_lance_table(
        table.get("properties"), table_kind=table.get("table_type"), external_kind="EXTERNAL"
    )


_Kept = TypeVar("_Kept")


def _name(item: Mapping[str, Any]) -> str | None:
    """A listed catalog's or schema's name (None: it has none)."""
    name = item.get("name")
    return str(name) if name else None


def _lance_name(table: Mapping[str, Any]) -> str | None:
    """A listed table's name if it is a Lance table."""
    return _name(table) if _is_lance(table) else None


def _whole(item: dict[str, Any]) -> dict[str, Any]:
    return item


def _take_page(
    body: Mapping[str, Any],
    field: str,
    keep: Callable[[dict[str, Any]], _Kept | None],
    kept: list[_Kept],
) -> Any:
    """What ``keep`` takes from a listing page's ``field`` items, added to ``kept``; the
    page's next token as the catalog sent it (for :class:`._core.paging.PageTrail` to follow)."""
    for item in body.get(field) or ():
        if isinstance(item, dict) and (value := keep(item)) is not None:
            kept.append(value)
    return body.get("next_page_token")


# -- Arrow -> Unity columns ----------------------------------------------------------------


def arrow_to_unity_columns(schema: Any) -> list[dict[str, Any]]:
    """A pyarrow schema as Unity ``ColumnInfo`` entries (Spark type names and JSON)."""
    columns = []
    for position, field in enumerate(schema):
        type_name, type_text, spark = spark_type(field.type)
        column: dict[str, Any] = {
            "name": field.name,
            "type_name": type_name,
            "type_text": type_text,
            "type_json": json.dumps(
                {"name": field.name, "type": spark, "nullable": field.nullable, "metadata": {}}
            ),
            "position": position,
            "nullable": field.nullable,
        }
        if type_name == "DECIMAL":
            precision, scale = type_text[len("decimal(") : -1].split(",")
            column["type_precision"] = int(precision)
            column["type_scale"] = int(scale)
        columns.append(column)
    return columns


# -- the backend ----------------------------------------------------------------------------

_UNITY_CODES: dict[str, ErrorClass] = {
    "INVALID_ARGUMENT": errors.InvalidInputError,
    "PERMISSION_DENIED": errors.PermissionDeniedError,
    "UNAUTHENTICATED": errors.UnauthenticatedError,
    "RESOURCE_EXHAUSTED": errors.ThrottlingError,
    "UNAVAILABLE": errors.ServiceUnavailableError,
    "TEMPORARILY_UNAVAILABLE": errors.ServiceUnavailableError,
    "UNIMPLEMENTED": errors.UnsupportedOperationError,
    "NOT_IMPLEMENTED": errors.UnsupportedOperationError,
}


# Every error_code a Unity release has used for "not there" / "already there": 0.1-0.4.0 sent
# NOT_FOUND (404) and ALREADY_EXISTS (409); 0.4.1 CATALOG_/SCHEMA_/TABLE_ALREADY_EXISTS with
# HTTP 400 (kept since for backwards compatibility); 0.5+ also CATALOG_/SCHEMA_/TABLE_NOT_FOUND
# (404). So the code, not the status, says what happened; RESOURCE_* are Databricks'.
_NOT_FOUND_CODES = frozenset(
    {
        "NOT_FOUND",
        "RESOURCE_DOES_NOT_EXIST",
        "CATALOG_NOT_FOUND",
        "SCHEMA_NOT_FOUND",
        "TABLE_NOT_FOUND",
    }
)
_ALREADY_EXISTS_CODES = frozenset(
    {
        "ALREADY_EXISTS",
        "RESOURCE_ALREADY_EXISTS",
        "CATALOG_ALREADY_EXISTS",
        "SCHEMA_ALREADY_EXISTS",
        "TABLE_ALREADY_EXISTS",
        "RESOURCE_CONFLICT",
    }
)


def _classify_unity_error(
    status: int, body: dict[str, Any], not_found: ErrorClass, conflict: ErrorClass
) -> tuple[ErrorClass | None, str]:
    """The class Unity's ``error_code`` names (else None: the HTTP status decides), and
    Unity's message."""
    error_code = str(body.get("error_code") or "")
    message = str(body.get("message") or "")
    if error_code in _NOT_FOUND_CODES:
        return not_found, message
    if error_code in _ALREADY_EXISTS_CODES:
        return conflict, message
    if error_code == "FAILED_PRECONDITION":
        # HTTP 400 in every release: on a delete, the catalog or schema is not empty; on
        # anything else (e.g. ambiguous external locations) the request cannot be served
        is_drop = conflict is errors.NamespaceNotEmptyError
        return (conflict if is_drop else errors.InvalidInputError), message
    return _UNITY_CODES.get(error_code), message


class UnityNamespace(StorageTableOperations):
    """``impl="unity"``: Lance tables as EXTERNAL tables of Unity Catalog OSS."""

    impl_name: ClassVar[str] = "unity"
    delimiter = "."
    config: UnityConfig

    def __init__(self, config: UnityConfig) -> None:
        super().__init__(config)
        self.root = config.root.rstrip("/")
        self.transport = HttpTransport(
            config, base_url=config.endpoint + API_BASE, url_key="endpoint", backend="unity"
        )
        self.http = CatalogHttp(self.transport, catalog="Unity", classify=_classify_unity_error)
        self.tables = LanceTables(
            threads=config.worker_threads,
            backend="unity",
            storage_options=config.storage,
            storage_root=config.root if "root" in config.properties else None,
            drop_allowed=config.drop_allowed_locations,
            table_option_keys=config.table_storage_options,
            confined=config.confine_storage,
            confine_root=self.root,
            allowed_locations=config.allowed_locations,
        )
        self.vended = VendedCredentialCache()

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(UnityConfig.from_properties(properties))

    def namespace_id(self) -> str:
        return f"UnityNamespace(endpoint={mask_url_userinfo(self.config.endpoint)!r})"

    async def aclose(self) -> None:
        await self.transport.aclose()

    # -- HTTP ------------------------------------------------------------------------

    async def _request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        idempotent: bool,
        not_found: type[errors.LanceNamespaceError],
        conflict: type[errors.LanceNamespaceError] = errors.ConcurrentModificationError,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]:
        """One call's JSON object; deletes answer nothing worth reading (Unity OSS sends a
        plain-text "200 OK"), so theirs is ``{}``."""
        response = await self.http.send(
            method,
            path,
            what=what,
            idempotent=idempotent,
            not_found=not_found,
            conflict=conflict,
            params=params,
            json=json,
        )
        return {} if method == "DELETE" else self.http.decode(response.content, what)

    async def _all_pages(
        self,
        path: str,
        field: str,
        params: dict[str, Any],
        what: str,
        keep: Callable[[dict[str, Any]], _Kept | None],
    ) -> list[_Kept]:
        """What ``keep`` takes from every item of a Unity listing (None: nothing),
        following ``next_page_token`` to the end.

        A page is let go as soon as it is read, before the next one is asked for: a
        listing keeps only what ``keep`` returns, not every table's whole description (a
        50-table page is 23 KB of JSON). With 64 listings in flight, pages still held
        over the next request's wait were what the garbage collector kept running for
        (80 young collections and a full one per 800 listings, 30-95 us per listing,
        against 5-10 and ~2 us when each page goes at once)."""
        kept: list[_Kept] = []
        trail = PageTrail(what)
        token: str | None = None
        while True:
            body = await self._request(
                "GET",
                path,
                params={**params, "max_results": PAGE_SIZE, "page_token": token},
                what=what,
                idempotent=True,
                not_found=errors.NamespaceNotFoundError,
            )
            token = trail.follow(_take_page(body, field, keep, kept))
            del body  # not kept alive over the next request's wait
            if token is None:
                return kept

    def _ids(self, body: Mapping[str, Any], what: str, *, most: int) -> Identifier:
        # storage_backed: default table locations are built from the names
        parts = validate_identifier(
            body.get("id"), delimiter=".", storage_backed=True, allow_root=True, what=what
        )
        if len(parts) > most:
            raise errors.InvalidInputError(
                f"Unity namespaces are catalog.schema: {what} has {len(parts)} levels"
            )
        return parts

    def _table(self, body: Mapping[str, Any]) -> tuple[str, str, str]:
        parts = validate_identifier(
            body.get("id"), delimiter=".", storage_backed=True, allow_root=False, what="table id"
        )
        if len(parts) != 3:
            raise errors.InvalidInputError(
                f"a Unity table id is [catalog, schema, table], got {len(parts)} level(s)"
            )
        return parts[0], parts[1], parts[2]

    @staticmethod
    def _full(*parts: str) -> str:
        return quote(".".join(parts), safe="")

    # -- namespaces ------------------------------------------------------------------------

    async def _namespace_info(self, parts: Identifier, what: str) -> dict[str, Any]:
        if len(parts) == 1:
            return await self._request(
                "GET",
                f"/catalogs/{self._full(*parts)}",
                what=what,
                idempotent=True,
                not_found=errors.NamespaceNotFoundError,
            )
        return await self._request(
            "GET",
            f"/schemas/{self._full(*parts)}",
            what=what,
            idempotent=True,
            not_found=errors.NamespaceNotFoundError,
        )

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id", most=2)
        if not parts:
            raise errors.InvalidInputError("the root namespace cannot be created")
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        properties = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
        what = f"CreateNamespace {'.'.join(parts)}"
        if mode == "Overwrite":
            await self._drop_tree(parts, missing_ok=True)
        if len(parts) == 1:
            path, payload = "/catalogs", {"name": parts[0], "properties": properties}
        else:
            path = "/schemas"
            payload = {"name": parts[1], "catalog_name": parts[0], "properties": properties}
        try:
            created = await self._request(
                "POST",
                path,
                json=payload,
                what=what,
                idempotent=False,
                not_found=errors.NamespaceNotFoundError,
                conflict=errors.NamespaceAlreadyExistsError,
            )
        except errors.NamespaceAlreadyExistsError:
            if mode != "ExistOk":
                raise
            created = await self._namespace_info(parts, what)
        return CreateNamespaceResponse.from_dict({"properties": created.get("properties") or {}})

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id", most=2)
        what = f"ListNamespaces {'.'.join(parts) or '<root>'}"
        if not parts:
            names = await self._all_pages("/catalogs", "catalogs", {}, what, _name)
        elif len(parts) == 1:
            names = await self._all_pages(
                "/schemas", "schemas", {"catalog_name": parts[0]}, what, _name
            )
        else:
            await self._namespace_info(parts, what)
            names = []  # a schema holds tables, not namespaces
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListNamespacesResponse.from_dict({"namespaces": page, "page_token": token})

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        parts = self._ids(request.to_dict(), "namespace id", most=2)
        if not parts:
            return DescribeNamespaceResponse.from_dict({"properties": {}})
        info = await self._namespace_info(parts, f"DescribeNamespace {'.'.join(parts)}")
        return DescribeNamespaceResponse.from_dict({"properties": info.get("properties") or {}})

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        parts = self._ids(request.to_dict(), "namespace id", most=2)
        if parts:
            await self._namespace_info(parts, f"NamespaceExists {'.'.join(parts)}")
        return NamespaceExistsResponse()

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id", most=2)
        if not parts:
            raise errors.InvalidInputError("the root namespace cannot be dropped")
        mode = parse_mode(body.get("mode"), DROP_MODES, default="Fail")
        behavior = parse_mode(body.get("behavior"), DROP_BEHAVIORS, default="Restrict")
        what = f"DropNamespace {'.'.join(parts)}"
        try:
            info = await self._namespace_info(parts, what)
        except errors.NamespaceNotFoundError:
            if mode == "Skip":
                return DropNamespaceResponse.from_dict({})
            raise
        if behavior == "Cascade":
            await self._drop_tree(parts, missing_ok=mode == "Skip")
        else:
            await self._delete_namespace(parts, what)
        return DropNamespaceResponse.from_dict({"properties": info.get("properties") or {}})

    async def _delete_namespace(self, parts: Identifier, what: str) -> None:
        kind = "catalogs" if len(parts) == 1 else "schemas"
        await self._request(
            "DELETE",
            f"/{kind}/{self._full(*parts)}",
            what=what,
            idempotent=False,
            not_found=errors.NamespaceNotFoundError,
            conflict=errors.NamespaceNotEmptyError,
        )

    async def _drop_tree(self, parts: Identifier, *, missing_ok: bool) -> None:
        """Cascade over Lance tables only: a foreign table stops the drop."""
        what = f"DropNamespace {'.'.join(parts)}"
        try:
            await self._namespace_info(parts, what)
        except errors.NamespaceNotFoundError:
            if missing_ok:
                return
            raise
        if len(parts) == 1:
            schemas = await self._all_pages(
                "/schemas", "schemas", {"catalog_name": parts[0]}, what, _whole
            )
            for schema in schemas:
                await self._drop_tree((parts[0], str(schema["name"])), missing_ok=True)
        else:
            tables = await self._schema_tables(parts[0], parts[1], what, _whole)
            foreign = [str(t.get("name")) for t in tables if not _is_lance(t)]
            if foreign:
                raise errors.NamespaceNotEmptyError(
                    f"{what}: holds tables that are not Lance tables: {', '.join(foreign)}"
                )
            for table in tables:
                await self._purge(parts[0], parts[1], str(table["name"]), table, what)
        await self._delete_namespace(parts, what)

    # -- tables ---------------------------------------------------------------------------

    async def _schema_tables(
        self,
        catalog: str,
        schema: str,
        what: str,
        keep: Callable[[dict[str, Any]], _Kept | None],
    ) -> list[_Kept]:
        return await self._all_pages(
            "/tables", "tables", {"catalog_name": catalog, "schema_name": schema}, what, keep
        )

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id", most=2)
        what = f"ListTables {'.'.join(parts) or '<root>'}"
        names: list[str] = []
        if len(parts) == 2:
            names = await self._schema_tables(parts[0], parts[1], what, _lance_name)
        elif parts:
            await self._namespace_info(parts, what)  # a catalog holds schemas, not tables
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})

    async def _get_table(self, catalog: str, schema: str, name: str, what: str) -> dict[str, Any]:
        return await self._request(
            "GET",
            f"/tables/{self._full(catalog, schema, name)}",
            what=what,
            idempotent=True,
            not_found=errors.TableNotFoundError,
        )

    async def _get_lance_table(
        self, catalog: str, schema: str, name: str, what: str
    ) -> dict[str, Any]:
        table = await self._get_table(catalog, schema, name, what)
        if not _is_lance(table):
            raise errors.InvalidInputError(f"{what}: {name!r} is not a Lance table")
        return table

    async def _create_catalog_entry(
        self,
        catalog: str,
        schema: str,
        name: str,
        location: str,
        properties: dict[str, str],
        columns: list[dict[str, Any]],
        what: str,
    ) -> dict[str, Any]:
        try:
            return await self._request(
                "POST",
                "/tables",
                json={
                    "name": name,
                    "catalog_name": catalog,
                    "schema_name": schema,
                    "table_type": "EXTERNAL",
                    "data_source_format": "TEXT",
                    "storage_location": location,
                    "columns": columns,
                    "properties": properties,
                },
                what=what,
                idempotent=False,
                not_found=errors.NamespaceNotFoundError,
                conflict=errors.TableAlreadyExistsError,
            )
        except errors.NamespaceNotFoundError:
            raise errors.NamespaceNotFoundError(
                f"{what}: schema {catalog}.{schema} not found"
            ) from None

    async def _rename_table(self, request: Any) -> Any:
        """Unsupported, on purpose: Unity OSS has no rename call. Emulated (a new entry
        at the same location, then the old one deleted), the table would come back
        with another ``table_id``, so without the grants, owner, lineage and comment
        Unity keeps by that id: a copy of a table presented as a rename."""
        raise errors.UnsupportedOperationError(
            "RenameTable is not supported by the unity backend: Unity Catalog OSS has no "
            "rename call, and re-creating the entry under the new name would give the "
            "table a new table_id, losing the grants, owner and lineage Unity keeps by it"
        )

    _rename_table.__lance_unsupported__ = True  # type: ignore[attr-defined]

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        catalog, schema, name = self._table(body)
        location = body.get("location") or self._default_location(catalog, schema, name)
        properties = lance_parameters(body.get("properties"))
        what = f"DeclareTable {catalog}.{schema}.{name}"
        await refuse_existing_table(self, (catalog, schema, name))
        await self.tables.check_placement(
            location,
            require_table=False,
            claims=self._claims(catalog, schema, name),
            what=f"{what}: location",
        )
        created = await self._create_catalog_entry(
            catalog, schema, name, location, properties, [], what
        )
        location = str(created.get("storage_location") or location)  # as Unity stored it
        return DeclareTableResponse.from_dict(
            {
                "location": location,
                "storage_options": self.tables.options_for(properties),
                "properties": properties,
            }
        )

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        catalog, schema, name = self._table(body)
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        properties = lance_parameters(body.get("properties"))
        what = f"RegisterTable {catalog}.{schema}.{name}"
        if mode == "Create":  # a taken name is TableAlreadyExists, whatever the location
            await refuse_existing_table(self, (catalog, schema, name))
        dataset = await self.tables.check_placement(
            location,
            require_table=True,
            claims=self._claims(catalog, schema, name),
            what=f"{what}: location",
        )
        columns = arrow_to_unity_columns(dataset.schema)
        if mode == "Overwrite":
            with contextlib.suppress(errors.TableNotFoundError):
                await self._deregister(catalog, schema, name, what)
        await self._create_catalog_entry(catalog, schema, name, location, properties, columns, what)
        return RegisterTableResponse.from_dict({"location": location, "properties": properties})

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        # a client may write through what it is handed: the broadest credentials it may hold
        return await self._describe(request.to_dict(), access=None)

    async def _describe_for_storage(self, table: list[str], *, writes: bool) -> Any:
        return await self._describe({"id": table}, access="READ_WRITE" if writes else "READ")

    async def _describe(self, body: Mapping[str, Any], access: str | None) -> DescribeTableResponse:
        catalog, schema, name = self._table(body)
        vend = wants_vending(body, self.config.vend_credentials)
        what = f"DescribeTable {catalog}.{schema}.{name}"
        table = await self._get_lance_table(catalog, schema, name, what)
        properties = {str(k): str(v) for k, v in (table.get("properties") or {}).items()}
        location = str(table.get("storage_location") or "")
        options = self.tables.options_for(properties)
        if vend:
            options = with_vended(options, await self._vend(table, access, what))
        result: dict[str, Any] = {
            "table": name,
            "namespace": [catalog, schema],
            "location": location,
            "storage_options": options,
            "properties": properties,
        }
        await self.tables.complete(result, body, location, body.get("version"), options)
        return DescribeTableResponse.from_dict(result)

    async def _vend(
        self, table: Mapping[str, Any], access: str | None, what: str
    ) -> VendedCredentials | None:
        """Unity's temporary credentials for ``table``: for ``access`` (READ or READ_WRITE),
        or (None) READ_WRITE where Unity grants it and READ where it refuses that."""
        table_id = table.get("table_id")
        if not isinstance(table_id, str) or not table_id:
            raise errors.InternalError(f"{what}: Unity named no table_id to vend credentials for")

        async def ask(operation: str) -> VendedCredentials | None:
            answer = await self._request(
                "POST",
                "/temporary-table-credentials",
                json={"table_id": table_id, "operation": operation},
                what=f"{what}: temporary credentials",
                idempotent=True,  # nothing is created: asking again is harmless
                not_found=errors.TableNotFoundError,
            )
            return from_unity(answer, what)

        async def broadest() -> VendedCredentials | None:
            try:
                return await ask("READ_WRITE")
            except errors.PermissionDeniedError:
                return await ask("READ")

        # keyed by Unity's table id: a table dropped and created again gets new credentials
        if access is None:
            return await self.vended.get((table_id, "broadest"), broadest)
        return await self.vended.get((table_id, access), functools.partial(ask, access))

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        if isinstance(request.to_dict().get("version"), int):  # that version must exist too
            body = request.to_dict()
            await self._describe_table(
                DescribeTableRequest.from_dict({"id": body.get("id"), "version": body["version"]})
            )
            return TableExistsResponse()
        catalog, schema, name = self._table(request.to_dict())
        await self._get_lance_table(catalog, schema, name, f"TableExists {catalog}.{schema}.{name}")
        return TableExistsResponse()

    async def _deregister(self, catalog: str, schema: str, name: str, what: str) -> dict[str, Any]:
        table = await self._get_lance_table(catalog, schema, name, what)
        await self._request(
            "DELETE",
            f"/tables/{self._full(catalog, schema, name)}",
            what=what,
            idempotent=False,
            not_found=errors.TableNotFoundError,
        )
        return table

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        catalog, schema, name = self._table(request.to_dict())
        table = await self._deregister(
            catalog, schema, name, f"DeregisterTable {catalog}.{schema}.{name}"
        )
        return DeregisterTableResponse.from_dict(
            {
                "id": [catalog, schema, name],
                "location": table.get("storage_location"),
                "properties": table.get("properties") or {},
            }
        )

    async def _purge(
        self, catalog: str, schema: str, name: str, table: Mapping[str, Any], what: str
    ) -> None:
        """Data first: a failed delete leaves the table registered, never orphaned data."""
        location = str(table.get("storage_location") or "")
        if location:
            await self.tables.drop_data(
                location,
                self.tables.options_for(table.get("properties") or {}),
                default_location=self._default_location(catalog, schema, name),
                claims=self._claims(catalog, schema, name),
            )
        await self._deregister(catalog, schema, name, what)

    async def _creation_location(self, table: list[str]) -> str:
        catalog, schema, name = self._table({"id": table})
        return self._default_location(catalog, schema, name)

    def _default_location(self, catalog: str, schema: str, name: str) -> str:
        return f"{self.root}/{catalog}/{schema}/{name}"

    def _claims(self, catalog: str, schema: str, name: str) -> Claims:
        """Other tables at a place below the root, by the default layout."""
        return catalog_claims(self, self.tables, (catalog, schema, name), shortest=3, longest=3)

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        catalog, schema, name = self._table(request.to_dict())
        what = f"DropTable {catalog}.{schema}.{name}"
        table = await self._get_lance_table(catalog, schema, name, what)
        await self._purge(catalog, schema, name, table, what)
        return DropTableResponse.from_dict(
            {
                "id": [catalog, schema, name],
                "location": table.get("storage_location"),
                "properties": table.get("properties") or {},
            }
        )
