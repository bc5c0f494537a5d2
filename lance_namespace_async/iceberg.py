"""Lance tables in an Apache Iceberg REST Catalog: ``impl="iceberg"``.

Mapping (the Lance Namespace's Iceberg implementation spec).
The root namespace is the catalog server; the first level
is a *warehouse*, whose configuration comes from ``GET /v1/config?warehouse=``
(cached, one request in flight per warehouse; ``defaults`` < our properties <
``overrides``, and the ``prefix`` found there, else the warehouse name, prefixes
every API path). Deeper levels are Iceberg namespaces, joined with the unit
separator ``\\x1F`` and percent-encoded exactly once, in paths and in the
``parent`` query parameter. A table ``[warehouse, ns1, ..., name]`` is an
Iceberg table whose ``location`` is the Lance table root, with a dummy schema
(one nullable string column ``dummy``) and ``properties.table_type=lance``.

Table management (the spec's catalog-managed versions).
``managed_by`` is ``storage`` (default: the Lance
table directory decides the version) or ``impl`` (the catalog decides:
``current-snapshot-id`` is the Lance version, and every commit of a new Lance
version advances it through UpdateTable with an ``assert-ref-snapshot-id``
requirement, so a concurrent commit fails with ConcurrentModification, code 14;
see :mod:`._iceberg_managed`). The ``managed_by`` property names the default of
new tables. With ``iceberg_tooling=true`` the Iceberg metadata also carries the
Lance schema converted to Iceberg types (schema id 1, a new id when the columns
change), and a snapshot plus snapshot-log entry whose id is the Lance version, so
Iceberg tools such as pyiceberg show the real columns.

Where the seed is silent this backend goes further: NamespaceExists and
TableExists use HEAD; every listing follows ``pageToken``/``pageSize``;
ListTables loads table metadata concurrently (bounded) to keep Lance tables only;
DescribeTable can open the Lance table (``load_detailed_metadata``); RegisterTable,
DropTable (deregister, then delete data), RenameTable, and DropNamespace with
Cascade (refused when a non-Lance table is inside) are implemented.

Deletion (decided once in ``_lance_tables``): the storage root is ``root`` when
configured; DropTable deletes a table's data only strictly inside it (or below a
``drop_allowed_locations`` prefix), never the root itself, a directory inside
or holding another Lance table, nor the place of the table whose default
location (``<root>/<warehouse>/<namespace...>/<name>``) it is. Without a
configured ``root`` only the table's own default location (under the cwd) is
deleted. Elsewhere a drop deregisters the table and keeps its data.
RegisterTable (a Lance table required) and DeclareTable (no data yet) refuse
the root and places inside, holding or belonging to another table. A table and
a namespace never share a name under one parent (seed 002).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any, ClassVar, Self
from urllib.parse import quote, unquote

import anyio
import attrs
import httpx

from . import errors
from ._config import mask_url_userinfo, parse_bool, parse_positive_int, prop
from ._http import HttpConfig, HttpTransport, error_from_response, flag_ambiguous, parse_http_url
from ._iceberg_managed import ManagedIcebergVersions
from ._identifiers import Identifier, validate_identifier
from ._lance_tables import (
    DROP_ALLOWED_LOCATIONS_DOC,
    TABLE_TYPE,
    Claims,
    LanceTables,
    catalog_claims,
    lance_parameters,
    parse_locations,
)
from ._modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, REGISTER_MODES, parse_mode
from ._paging import check_limit, token_of
from ._storage_ops import StorageAccess
from ._unique_names import (
    refuse_existing_table,
    refuse_namespace_named_like,
    refuse_table_named_like,
)
from ._vended_credentials import VENDING_DOC, from_iceberg, wants_vending, with_vended
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
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)

__all__ = ["IcebergConfig", "IcebergNamespace", "arrow_to_iceberg_schema"]

UNIT_SEPARATOR = "\x1f"
MANAGED_BY = "managed_by"
_MARKERS = frozenset({TABLE_TYPE, MANAGED_BY})
_NS_PATHS_KEPT = 4096  # namespace API paths remembered per warehouse
DUMMY_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "dummy", "required": False, "type": "string"}],
}


@attrs.frozen
class IcebergConfig(HttpConfig):
    """Properties of ``impl="iceberg"`` as the Iceberg implementation spec lists them (ms)."""

    endpoint: str = prop(
        parse=parse_http_url,
        shown=mask_url_userinfo,
        doc="the Iceberg REST Catalog, e.g. http://host:8181 (a user:password@ is HTTP Basic auth)",
    )
    root: str | None = prop(
        default=None,
        doc="storage root of new tables, inside which DropTable deletes data "
        "(default: new tables under the cwd, deleted only at that default location)",
    )
    drop_allowed_locations: tuple[str, ...] = prop(
        default=(), parse=parse_locations, doc=DROP_ALLOWED_LOCATIONS_DOC
    )
    iceberg_tooling: bool = prop(default=False, parse=parse_bool)
    managed_by: str = prop(
        default="storage",
        parse=lambda value: _managed_by({MANAGED_BY: value}),
        doc="managed_by of the tables created, declared or registered without one (seed 003)",
    )
    warehouse_prefix: bool = prop(
        default=True,
        parse=parse_bool,
        doc="a warehouse whose config names no prefix is the API prefix (seed 000); false: "
        "no prefix (/v1/namespaces), as for single-catalog servers like Iceberg's reference one",
    )
    list_concurrency: int = prop(default=16, parse=parse_positive_int)
    worker_threads: int = prop(default=8, parse=parse_positive_int)
    vend_credentials: bool = prop(default=False, parse=parse_bool, doc=VENDING_DOC)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)


def _is_lance(properties: Mapping[str, Any]) -> bool:
    return str(properties.get(TABLE_TYPE, "")).lower() == "lance"


#: table properties of Iceberg's own families, never storage options (Iceberg's
#: reference server sets ``write.parquet.compression-codec`` on every table it creates)
_ICEBERG_PROPERTY_FAMILIES = (
    "read.",
    "write.",
    "commit.",
    "history.",
    "gc.",
    "engine.",
    "compatibility.",
    "schema.",
    "format-version",
)


def _lance_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in properties.items()
        if not str(key).startswith(_ICEBERG_PROPERTY_FAMILIES)
    }


def _separator(config: Mapping[str, str]) -> str:
    """The ``namespace-separator`` a server advertises (URL-encoded), else 0x1F."""
    advertised = unquote(config.get("namespace-separator") or "")
    return advertised or UNIT_SEPARATOR


def _managed_by(properties: Mapping[str, Any]) -> str:
    value = str(properties.get(MANAGED_BY) or "storage").lower()
    if value not in ("storage", "impl"):
        raise errors.InvalidInputError(f"managed_by must be 'storage' or 'impl', got {value!r}")
    return value


# -- Arrow -> Iceberg types (seed 003, tooling mode) --------------------------------


class _FieldIds:
    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


def _iceberg_type(data_type: Any, ids: _FieldIds) -> Any:
    import pyarrow as pa

    types = pa.types
    simple: list[tuple[Any, str]] = [
        (types.is_boolean, "boolean"),
        (types.is_int64, "long"),
        (types.is_uint32, "long"),
        (types.is_integer, "int"),
        (types.is_float16, "float"),
        (types.is_float32, "float"),
        (types.is_float64, "double"),
        (types.is_string, "string"),
        (types.is_large_string, "string"),
        (types.is_binary, "binary"),
        (types.is_large_binary, "binary"),
        (types.is_date, "date"),
        (types.is_time, "time"),
    ]
    if types.is_uint64(data_type):
        return "decimal(20, 0)"
    for check, name in simple:
        if check(data_type):
            return name
    if types.is_timestamp(data_type):
        return "timestamptz" if data_type.tz else "timestamp"
    if types.is_decimal(data_type):
        return f"decimal({data_type.precision}, {data_type.scale})"
    if types.is_fixed_size_binary(data_type):
        return f"fixed[{data_type.byte_width}]"
    if (
        types.is_list(data_type)
        or types.is_large_list(data_type)
        or (types.is_fixed_size_list(data_type))
    ):
        element_id = ids.next()
        return {
            "type": "list",
            "element-id": element_id,
            "element": _iceberg_type(data_type.value_type, ids),
            "element-required": not data_type.value_field.nullable,
        }
    if types.is_map(data_type):
        key_id, value_id = ids.next(), ids.next()
        return {
            "type": "map",
            "key-id": key_id,
            "key": _iceberg_type(data_type.key_type, ids),
            "value-id": value_id,
            "value": _iceberg_type(data_type.item_type, ids),
            "value-required": not data_type.item_field.nullable,
        }
    if types.is_struct(data_type):
        return {"type": "struct", "fields": _iceberg_fields(list(data_type), ids)}
    raise errors.InvalidInputError(f"no Iceberg type for Arrow type {data_type}")


def _iceberg_fields(fields: list[Any], ids: _FieldIds) -> list[dict[str, Any]]:
    assigned = [(field, ids.next()) for field in fields]
    return [
        {
            "id": field_id,
            "name": field.name,
            "required": not field.nullable,
            "type": _iceberg_type(field.type, ids),
        }
        for field, field_id in assigned
    ]


def arrow_to_iceberg_schema(schema: Any, schema_id: int = 1) -> dict[str, Any]:
    """A pyarrow schema as an Iceberg schema (Arrow -> Iceberg type conversion)."""
    return {
        "type": "struct",
        "schema-id": schema_id,
        "fields": _iceberg_fields(list(schema), _FieldIds()),
    }


# -- the backend ---------------------------------------------------------------------------


@attrs.frozen
class _Warehouse:
    prefix: str
    config: dict[str, str]
    #: joins namespace levels in paths and ``parent``: the config's ``namespace-separator``
    separator: str = UNIT_SEPARATOR
    #: namespace API paths already built (levels -> path): they depend only on the levels
    #: and this config, and every LoadTable of a listing needs its namespace's
    ns_paths: dict[Identifier, str] = attrs.field(factory=dict, eq=False, repr=False)


class IcebergNamespace(ManagedIcebergVersions):
    """``impl="iceberg"``: Lance tables in an Iceberg REST Catalog."""

    impl_name: ClassVar[str] = "iceberg"
    delimiter = "."
    config: IcebergConfig

    def __init__(self, config: IcebergConfig) -> None:
        super().__init__(config)
        self.root = (config.root or os.getcwd()).rstrip("/")
        self.transport = HttpTransport(
            config,
            base_url=config.endpoint,
            url_key="endpoint",
            default_token_url=f"{config.endpoint}/v1/oauth/tokens",
        )
        self.tables = LanceTables(
            threads=config.worker_threads,
            storage_options=config.storage,
            storage_root=config.root,
            drop_allowed=config.drop_allowed_locations,
        )
        self._warehouses: dict[str, _Warehouse] = {}
        self._warehouse_locks: dict[str, anyio.Lock] = {}
        self.config_requests = 0

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(IcebergConfig.from_properties(properties))

    def namespace_id(self) -> str:
        return f"IcebergNamespace(endpoint={mask_url_userinfo(self.config.endpoint)!r})"

    async def aclose(self) -> None:
        await self.transport.aclose()

    # -- HTTP ----------------------------------------------------------------------

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
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        response, state = await self.transport.request(
            method,
            path,
            what=what,
            idempotent=idempotent,
            params=params,
            json=json,
            headers=headers,
        )
        if response.status_code < 300:
            return response
        raise _iceberg_error(response, what, not_found, conflict, state.retried_ambiguously)

    @staticmethod
    def _json(response: httpx.Response, what: str) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            raise errors.InternalError(f"{what}: the catalog sent no JSON") from None
        if not isinstance(body, dict):
            raise errors.InternalError(f"{what}: the catalog sent an unexpected body")
        return body

    async def _warehouse(self, name: str) -> _Warehouse:
        """The warehouse's config: fetched once, whatever the number of waiting calls."""
        cached = self._warehouses.get(name)
        if cached is not None:
            return cached
        lock = self._warehouse_locks.setdefault(name, anyio.Lock())
        async with lock:
            cached = self._warehouses.get(name)
            if cached is not None:
                return cached
            self.config_requests += 1
            response = await self._request(
                "GET",
                "/v1/config",
                params={"warehouse": name},
                what=f"config of warehouse {name!r}",
                idempotent=True,
                not_found=errors.NamespaceNotFoundError,
            )
            body = self._json(response, "GetConfig")
            defaults = body.get("defaults") or {}
            overrides = body.get("overrides") or {}
            merged = {
                **{str(k): str(v) for k, v in defaults.items()},
                **self.config.properties,
                **{str(k): str(v) for k, v in overrides.items()},
            }
            fallback = name if self.config.warehouse_prefix else ""
            prefix = str(overrides.get("prefix") or defaults.get("prefix") or fallback)
            warehouse = _Warehouse(
                prefix=prefix.strip("/"), config=merged, separator=_separator(merged)
            )
            self._warehouses[name] = warehouse
            return warehouse

    async def _joined(self, warehouse: str, levels: Identifier) -> str:
        """Namespace levels joined by the warehouse's separator (0x1F unless it says else).

        A level that contains the separator could not be told apart from two levels.
        """
        separator = (await self._warehouse(warehouse)).separator
        for level in levels:
            if separator in level:
                raise errors.InvalidInputError(
                    f"namespace level {level!r} contains this catalog's namespace "
                    f"separator {separator!r}"
                )
        return separator.join(levels)

    async def _ns_url(self, warehouse: str, levels: Identifier) -> str:
        """The namespace's API path: levels percent-encoded once, joined by the separator
        percent-encoded too (``%1F``; ``%2E`` for ``.``, which ``quote`` would leave as is
        and the server would then read as part of one level)."""
        config = await self._warehouse(warehouse)
        key = tuple(levels)  # hashable whatever sequence a caller holds
        cached = config.ns_paths.get(key)
        if cached is not None:
            return cached
        await self._joined(warehouse, levels)  # refuses a level holding the separator
        encoded = "".join(f"%{byte:02X}" for byte in config.separator.encode())
        joined = encoded.join(quote(level, safe="") for level in levels)
        path = f"{await self._base(warehouse)}/namespaces/{joined}"
        if len(config.ns_paths) >= _NS_PATHS_KEPT:
            config.ns_paths.clear()  # bounded: a crawl of a huge catalog starts over
        config.ns_paths[key] = path
        return path

    async def _base(self, warehouse: str) -> str:
        prefix = (await self._warehouse(warehouse)).prefix
        return f"/v1/{prefix}" if prefix else "/v1"

    def _ids(self, body: Mapping[str, Any], what: str) -> Identifier:
        # storage_backed: default table locations are built from the names
        return validate_identifier(
            body.get("id"), delimiter="", storage_backed=True, allow_root=True, what=what
        )

    def _table_parts(self, body: Mapping[str, Any]) -> tuple[str, Identifier, str]:
        parts = self._ids(body, "table id")
        if len(parts) < 3:
            raise errors.InvalidInputError(
                "an Iceberg table id is [warehouse, namespace..., table], "
                f"got {len(parts)} level(s)"
            )
        return parts[0], parts[1:-1], parts[-1]

    async def _table_path(self, warehouse: str, namespace: Identifier, name: str) -> str:
        return f"{await self._ns_url(warehouse, namespace)}/tables/{quote(name, safe='')}"

    async def _load_table(
        self, warehouse: str, namespace: Identifier, name: str, what: str
    ) -> dict[str, Any]:
        return (await self._load_result(warehouse, namespace, name, what, vend=False))[0]

    async def _load_result(
        self, warehouse: str, namespace: Identifier, name: str, what: str, *, vend: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The table's metadata and the whole LoadTableResult (with vended credentials
        when ``vend``: the ``X-Iceberg-Access-Delegation`` header asks for them)."""
        response = await self._request(
            "GET",
            await self._table_path(warehouse, namespace, name),
            what=what,
            idempotent=True,
            not_found=errors.TableNotFoundError,
            headers={"X-Iceberg-Access-Delegation": "vended-credentials"} if vend else None,
        )
        result = self._json(response, what)
        metadata = result.get("metadata")
        if not isinstance(metadata, dict):
            raise errors.InternalError(f"{what}: LoadTable answered without metadata")
        return metadata, result

    async def _load_lance_table(
        self, warehouse: str, namespace: Identifier, name: str, what: str
    ) -> dict[str, Any]:
        return (await self._load_lance_result(warehouse, namespace, name, what, vend=False))[0]

    async def _load_lance_result(
        self, warehouse: str, namespace: Identifier, name: str, what: str, *, vend: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        metadata, result = await self._load_result(warehouse, namespace, name, what, vend=vend)
        if not _is_lance(metadata.get("properties") or {}):
            raise errors.InvalidInputError(f"{what}: {name!r} is not a Lance table")
        return metadata, result

    # -- namespaces ----------------------------------------------------------------------

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id")
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        if len(parts) < 2:
            raise errors.UnsupportedOperationError(
                "the root and warehouses are not created through the Iceberg REST protocol"
            )
        warehouse, levels = parts[0], parts[1:]
        properties = dict(body.get("properties") or {})
        what = f"CreateNamespace {'.'.join(parts)}"
        await self._joined(warehouse, levels)  # a level holding the separator: unreachable
        if len(levels) > 1:
            await self._require_namespace(warehouse, levels[:-1], what)
        await refuse_table_named_like(self, parts)
        if mode == "Overwrite":
            await self._drop_tree(warehouse, levels, missing_ok=True)
        try:
            response = await self._request(
                "POST",
                f"{await self._base(warehouse)}/namespaces",
                json={"namespace": list(levels), "properties": properties},
                what=what,
                idempotent=False,
                not_found=errors.NamespaceNotFoundError,
                conflict=errors.NamespaceAlreadyExistsError,
            )
        except errors.NamespaceAlreadyExistsError:
            if mode != "ExistOk":
                raise
            existing = await self._namespace_properties(warehouse, levels, what)
            return CreateNamespaceResponse.from_dict({"properties": existing})
        created = self._json(response, what).get("properties") or properties
        return CreateNamespaceResponse.from_dict({"properties": created})

    async def _require_namespace(self, warehouse: str, levels: Identifier, what: str) -> None:
        """NamespaceNotFound unless the namespace that is to hold a new one exists (seed 000).

        Not every server checks: the Iceberg project's reference server (JdbcCatalog)
        creates namespace ``a.missing.x`` under an ``a`` without ``a.missing``, and a table
        in a namespace that does not exist; pyiceberg's SqlCatalog does the former.
        """
        try:
            await self._request(
                "HEAD",
                await self._ns_url(warehouse, levels),
                what=what,
                idempotent=True,
                not_found=errors.NamespaceNotFoundError,
            )
        except errors.NamespaceNotFoundError:
            holder = ".".join((warehouse, *levels))
            raise errors.NamespaceNotFoundError(
                f"{what}: namespace {holder} does not exist"
            ) from None

    async def _namespace_properties(
        self, warehouse: str, levels: Identifier, what: str
    ) -> dict[str, str]:
        response = await self._request(
            "GET",
            await self._ns_url(warehouse, levels),
            what=what,
            idempotent=True,
            not_found=errors.NamespaceNotFoundError,
        )
        return {
            str(k): str(v) for k, v in (self._json(response, what).get("properties") or {}).items()
        }

    async def _list_namespace_page(
        self, warehouse: str, levels: Identifier, token: str | None, limit: int | None
    ) -> tuple[list[str], str | None]:
        what = f"ListNamespaces {'.'.join((warehouse, *levels))}"
        response = await self._request(
            "GET",
            f"{await self._base(warehouse)}/namespaces",
            params={
                "parent": await self._joined(warehouse, levels) if levels else None,
                "pageToken": token,
                "pageSize": limit,
            },
            what=what,
            idempotent=True,
            not_found=errors.NamespaceNotFoundError,
        )
        body = self._json(response, what)
        names = [str(ns[-1]) for ns in body.get("namespaces") or [] if ns]
        return names, token_of(body.get("next-page-token"))

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id")
        limit = check_limit(body.get("limit"))
        if not parts:
            raise errors.UnsupportedOperationError(
                "the Iceberg REST protocol cannot list warehouses; list from ['<warehouse>']"
            )
        names, token = await self._list_namespace_page(
            parts[0], parts[1:], token_of(body.get("page_token")), limit
        )
        return ListNamespacesResponse.from_dict({"namespaces": names, "page_token": token})

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        parts = self._ids(request.to_dict(), "namespace id")
        if len(parts) < 2:
            if parts:
                await self._warehouse(parts[0])
            return DescribeNamespaceResponse.from_dict({"properties": {}})
        properties = await self._namespace_properties(
            parts[0], parts[1:], f"DescribeNamespace {'.'.join(parts)}"
        )
        return DescribeNamespaceResponse.from_dict({"properties": properties})

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        parts = self._ids(request.to_dict(), "namespace id")
        if len(parts) == 1:
            await self._warehouse(parts[0])
        elif parts:
            await self._request(
                "HEAD",
                await self._ns_url(parts[0], parts[1:]),
                what=f"NamespaceExists {'.'.join(parts)}",
                idempotent=True,
                not_found=errors.NamespaceNotFoundError,
            )
        return NamespaceExistsResponse()

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id")
        mode = parse_mode(body.get("mode"), DROP_MODES, default="Fail")
        # seed 000 drops idempotently; an explicit mode=Fail still asks for the error
        explicit_fail = body.get("mode") not in (None, "") and mode == "Fail"
        behavior = parse_mode(body.get("behavior"), DROP_BEHAVIORS, default="Restrict")
        if len(parts) < 2:
            raise errors.InvalidInputError("the root and warehouses cannot be dropped")
        warehouse, levels = parts[0], parts[1:]
        what = f"DropNamespace {'.'.join(parts)}"
        try:
            properties = await self._namespace_properties(warehouse, levels, what)
        except errors.NamespaceNotFoundError:
            if explicit_fail:
                raise
            # seed 000: dropping a missing namespace succeeds
            return DropNamespaceResponse.from_dict({"properties": {}})
        if behavior == "Cascade":
            await self._drop_tree(warehouse, levels, missing_ok=not explicit_fail)
        else:
            await self._delete_namespace(warehouse, levels, what)
        return DropNamespaceResponse.from_dict({"properties": properties})

    async def _delete_namespace(self, warehouse: str, levels: Identifier, what: str) -> None:
        try:
            await self._request(
                "DELETE",
                await self._ns_url(warehouse, levels),
                what=what,
                idempotent=False,
                not_found=errors.NamespaceNotFoundError,
                conflict=errors.NamespaceNotEmptyError,
            )
        except errors.NamespaceNotFoundError:
            return  # idempotent on missing (seed 000)

    async def _all_table_names(self, warehouse: str, levels: Identifier) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            page, token = await self._list_table_page(warehouse, levels, token, None)
            names.extend(page)
            if token is None:
                return names

    async def _drop_tree(self, warehouse: str, levels: Identifier, *, missing_ok: bool) -> None:
        """Cascade: Lance tables and child namespaces first; a foreign table stops it."""
        what = f"DropNamespace {'.'.join((warehouse, *levels))}"
        try:
            children: list[str] = []
            token: str | None = None
            while True:
                page, token = await self._list_namespace_page(warehouse, levels, token, None)
                children.extend(page)
                if token is None:
                    break
            tables = await self._all_table_names(warehouse, levels)
        except errors.NamespaceNotFoundError:
            if missing_ok:
                return
            raise
        metadata = await self._load_many(warehouse, levels, tables)
        foreign = [
            name
            for name, meta in zip(tables, metadata, strict=True)
            if meta is not None and not _is_lance(meta.get("properties") or {})
        ]
        if foreign:
            raise errors.NamespaceNotEmptyError(
                f"{what}: holds Iceberg tables that are not Lance tables: {', '.join(foreign)}"
            )
        for child in children:
            await self._drop_tree(warehouse, (*levels, child), missing_ok=True)
        for name, meta in zip(tables, metadata, strict=True):
            if meta is not None:
                await self._purge(warehouse, levels, name, meta, what)
        await self._delete_namespace(warehouse, levels, what)

    # -- tables ------------------------------------------------------------------------------

    async def _list_table_page(
        self, warehouse: str, levels: Identifier, token: str | None, limit: int | None
    ) -> tuple[list[str], str | None]:
        what = f"ListTables {'.'.join((warehouse, *levels))}"
        response = await self._request(
            "GET",
            await self._ns_url(warehouse, levels) + "/tables",
            params={"pageToken": token, "pageSize": limit},
            what=what,
            idempotent=True,
            not_found=errors.NamespaceNotFoundError,
        )
        body = self._json(response, what)
        names = [str(i.get("name")) for i in body.get("identifiers") or [] if i.get("name")]
        return names, token_of(body.get("next-page-token"))

    async def _load_many(
        self, warehouse: str, levels: Identifier, names: list[str]
    ) -> list[dict[str, Any] | None]:
        """Table metadata of many tables at once, at most ``list_concurrency`` in flight."""
        results: list[dict[str, Any] | None] = [None] * len(names)
        # a few workers taking the next name, not one task (and limiter slot) per table
        todo = iter(enumerate(names))

        async def worker() -> None:
            for index, name in todo:
                try:
                    results[index] = await self._load_table(
                        warehouse, levels, name, f"LoadTable {name}"
                    )
                except errors.TableNotFoundError:
                    results[index] = None  # dropped while we listed

        async with anyio.create_task_group() as group:
            for _ in range(min(self.config.list_concurrency, len(names))):
                group.start_soon(worker)
        return results

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id")
        limit = check_limit(body.get("limit"))
        if len(parts) < 2:
            if parts:
                await self._warehouse(parts[0])
            return ListTablesResponse.from_dict({"tables": []})
        warehouse, levels = parts[0], parts[1:]
        names, token = await self._list_table_page(
            warehouse, levels, token_of(body.get("page_token")), limit
        )
        metadata = await self._load_many(warehouse, levels, names)
        lance_tables = [
            name
            for name, meta in zip(names, metadata, strict=True)
            if meta is not None and _is_lance(meta.get("properties") or {})
        ]
        return ListTablesResponse.from_dict({"tables": lance_tables, "page_token": token})

    #: pyiceberg-style catalogs write a table's metadata files into its location
    _catalog_files = frozenset({"metadata"})

    async def _creation_location(self, table: list[str]) -> str:
        warehouse, levels, name = self._table_parts({"id": table})
        return self._default_location(warehouse, levels, name)

    def _storage_access(self, described: Any) -> StorageAccess:
        """A ``managed_by=impl`` table (seed 003) commits through the catalog: readers
        see the catalog's version, and pylance commits through CreateTableVersion."""
        body = described.to_dict()
        if not self._is_managed(body.get("properties") or {}):
            return StorageAccess()
        version = body.get("version")
        return StorageAccess(
            read_version=version if isinstance(version, int) else None,
            namespace_client=self._managed_client(),
        )

    def _is_managed(self, properties: Mapping[str, Any]) -> bool:
        return _managed_by(properties) == "impl"

    @property
    def _tooling(self) -> bool:
        return self.config.iceberg_tooling

    def _default_location(self, warehouse: str, levels: Identifier, name: str) -> str:
        return "/".join((self.root, warehouse, *levels, name))

    def _claims(self, warehouse: str, levels: Identifier, name: str) -> Claims:
        """Other tables at a place below the root, by the default layout."""
        return catalog_claims(self, self.tables, (warehouse, *levels, name), shortest=3)

    def _table_properties(self, requested: Mapping[str, Any] | None) -> dict[str, str]:
        properties = lance_parameters(requested)
        properties.setdefault(MANAGED_BY, self.config.managed_by)
        properties[MANAGED_BY] = _managed_by(properties)
        return properties

    async def _create_iceberg_table(
        self,
        warehouse: str,
        levels: Identifier,
        name: str,
        location: str,
        properties: dict[str, str],
        what: str,
    ) -> dict[str, Any]:
        await self._require_namespace(warehouse, levels, what)
        response = await self._request(
            "POST",
            await self._ns_url(warehouse, levels) + "/tables",
            json={
                "name": name,
                "location": location,
                "schema": DUMMY_SCHEMA,
                "properties": properties,
            },
            what=what,
            idempotent=False,
            not_found=errors.NamespaceNotFoundError,
            conflict=errors.TableAlreadyExistsError,
        )
        metadata = self._json(response, what).get("metadata")
        return metadata if isinstance(metadata, dict) else {}

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        warehouse, levels, name = self._table_parts(body)
        location = body.get("location") or self._default_location(warehouse, levels, name)
        properties = self._table_properties(body.get("properties"))
        what = f"DeclareTable {'.'.join((warehouse, *levels, name))}"
        await refuse_existing_table(self, (warehouse, *levels, name))
        await refuse_namespace_named_like(self, (warehouse, *levels, name))
        await self.tables.check_placement(
            location,
            require_table=False,
            claims=self._claims(warehouse, levels, name),
            what=f"{what}: location",
        )
        await self._create_iceberg_table(warehouse, levels, name, location, properties, what)
        return DeclareTableResponse.from_dict(
            {
                "location": location,
                "storage_options": self.tables.options_for(_lance_properties(properties), _MARKERS),
                "properties": properties,
                **({"managed_versioning": True} if properties[MANAGED_BY] == "impl" else {}),
            }
        )

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        warehouse, levels, name = self._table_parts(body)
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        properties = self._table_properties(body.get("properties"))
        what = f"RegisterTable {'.'.join((warehouse, *levels, name))}"
        await refuse_namespace_named_like(self, (warehouse, *levels, name))
        if mode == "Create":  # a taken name is TableAlreadyExists, whatever the location
            await refuse_existing_table(self, (warehouse, *levels, name))
        dataset = await self.tables.check_placement(
            location,
            require_table=True,
            claims=self._claims(warehouse, levels, name),
            what=f"{what}: location",
        )
        if mode == "Overwrite":
            with contextlib.suppress(errors.TableNotFoundError):
                await self._deregister(warehouse, levels, name, what)
        metadata = await self._create_iceberg_table(
            warehouse, levels, name, location, properties, what
        )
        if properties[MANAGED_BY] == "impl" or self.config.iceberg_tooling:
            await self._set_version(
                warehouse, levels, name, metadata, dataset, expected=None, what=what
            )
        return RegisterTableResponse.from_dict({"location": location, "properties": properties})

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        body = request.to_dict()
        warehouse, levels, name = self._table_parts(body)
        what = f"DescribeTable {'.'.join((warehouse, *levels, name))}"
        vend = wants_vending(body, self.config.vend_credentials)
        metadata, loaded = await self._load_lance_result(warehouse, levels, name, what, vend=vend)
        properties = {str(k): str(v) for k, v in (metadata.get("properties") or {}).items()}
        location = str(metadata.get("location") or "")
        options = self.tables.options_for(_lance_properties(properties), _MARKERS)
        if vend:
            options = with_vended(options, from_iceberg(loaded, location, what))
        result: dict[str, Any] = {
            "table": name,
            "namespace": [warehouse, *levels],
            "location": location,
            "storage_options": options,
            "properties": properties,
        }
        version = body.get("version")
        if _managed_by(properties) == "impl":
            result["managed_versioning"] = True  # pylance commits through CreateTableVersion
            current = metadata.get("current-snapshot-id")
            current = current if isinstance(current, int) and current >= 0 else None
            if isinstance(version, int) and (current is None or version > current):
                raise errors.TableVersionNotFoundError(
                    f"{what}: the catalog has no version {version}"
                )
            await self._settle_storage([warehouse, *levels, name], location, metadata)
            if version is None and current is not None:
                # the catalog, not the directory, names the version; the table is opened
                # only for details (pylance asks this holding a worker thread)
                result["version"] = current
                if body.get("load_detailed_metadata") is True:
                    version = current
        await self.tables.complete(result, body, location, version, options)
        return DescribeTableResponse.from_dict(result)

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        if isinstance(request.to_dict().get("version"), int):  # that version must exist too
            body = request.to_dict()
            await self._describe_table(
                DescribeTableRequest.from_dict({"id": body.get("id"), "version": body["version"]})
            )
            return TableExistsResponse()
        warehouse, levels, name = self._table_parts(request.to_dict())
        await self._request(
            "HEAD",
            await self._table_path(warehouse, levels, name),
            what=f"TableExists {'.'.join((warehouse, *levels, name))}",
            idempotent=True,
            not_found=errors.TableNotFoundError,
        )
        return TableExistsResponse()

    async def _deregister(
        self,
        warehouse: str,
        levels: Identifier,
        name: str,
        what: str,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        if metadata is None:  # a caller that loaded it already saves the round trip
            metadata = await self._load_lance_table(warehouse, levels, name, what)
        await self._request(
            "DELETE",
            await self._table_path(warehouse, levels, name),
            params={"purgeRequested": "false"},
            what=what,
            idempotent=False,
            not_found=errors.TableNotFoundError,
        )
        return metadata

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        warehouse, levels, name = self._table_parts(request.to_dict())
        what = f"DeregisterTable {'.'.join((warehouse, *levels, name))}"
        metadata = await self._deregister(warehouse, levels, name, what)
        return DeregisterTableResponse.from_dict(
            {
                "id": [warehouse, *levels, name],
                "location": metadata.get("location"),
                "properties": metadata.get("properties") or {},
            }
        )

    async def _purge(
        self, warehouse: str, levels: Identifier, name: str, metadata: Mapping[str, Any], what: str
    ) -> None:
        """Deregister, then delete the data.

        Unlike Glue and Unity, an Iceberg catalog keeps its own metadata files under
        the table location, so the catalog entry must go before the directory does.
        """
        await self._deregister(warehouse, levels, name, what, dict(metadata))
        location = str(metadata.get("location") or "")
        if location:
            options = self.tables.options_for(
                _lance_properties(metadata.get("properties") or {}), _MARKERS
            )
            await self.tables.drop_data(
                location,
                options,
                default_location=self._default_location(warehouse, levels, name),
                claims=self._claims(warehouse, levels, name),
            )

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        warehouse, levels, name = self._table_parts(request.to_dict())
        what = f"DropTable {'.'.join((warehouse, *levels, name))}"
        metadata = await self._load_lance_table(warehouse, levels, name, what)
        await self._purge(warehouse, levels, name, metadata, what)
        return DropTableResponse.from_dict(
            {
                "id": [warehouse, *levels, name],
                "location": str(metadata.get("location") or ""),
                "properties": metadata.get("properties") or {},
            }
        )

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        body = request.to_dict()
        warehouse, levels, name = self._table_parts(body)
        new_name = body.get("new_table_name")
        target = validate_identifier(
            [new_name] if isinstance(new_name, str) else new_name,
            delimiter="",
            storage_backed=True,
            allow_root=False,
            what="new_table_name",
        )
        new_parent = body.get("new_namespace_id")
        if new_parent is None:
            target_warehouse, target_levels = warehouse, levels
        else:
            parent = self._ids({"id": new_parent}, "new_namespace_id")
            if len(parent) < 2:
                raise errors.InvalidInputError("new_namespace_id must be [warehouse, namespace...]")
            target_warehouse, target_levels = parent[0], parent[1:]
        if target_warehouse != warehouse:
            raise errors.InvalidInputError("a table cannot move between warehouses")
        what = f"RenameTable {'.'.join((warehouse, *levels, name))}"
        await self._load_lance_table(warehouse, levels, name, what)
        await refuse_namespace_named_like(self, (warehouse, *target_levels, target[0]))
        await self._request(
            "POST",
            f"{await self._base(warehouse)}/tables/rename",
            json={
                "source": {"namespace": list(levels), "name": name},
                "destination": {"namespace": list(target_levels), "name": target[0]},
            },
            what=what,
            idempotent=False,
            not_found=errors.TableNotFoundError,
            conflict=errors.TableAlreadyExistsError,
        )
        return RenameTableResponse()

    # -- seed 003: catalog-managed versions and Iceberg tooling ------------------------------

    async def commit_table_version(
        self, table_id: list[str], *, expected_version: int | None, version: int | None = None
    ) -> int:
        """Advance the catalog's version of an ``managed_by=impl`` table.

        The UpdateTable call carries ``assert-ref-snapshot-id`` = ``expected_version``
        (the version the writer started from; ``None`` for a table without one), so
        two writers racing from the same version cannot both win: the loser gets
        ConcurrentModificationError (14). ``version`` defaults to the latest version
        of the Lance table, including versions DescribeTable set aside as written
        around the catalog. Returns the version now current in the catalog.
        """
        warehouse, levels, name = self._table_parts({"id": table_id})
        what = f"CommitTableVersion {'.'.join((warehouse, *levels, name))}"
        metadata = await self._load_lance_table(warehouse, levels, name, what)
        location = str(metadata.get("location") or "")
        await self._adopt_set_aside(location)
        dataset = await self.tables.require(location)
        if version is not None:
            dataset = await self.tables.open(location, version)
        await self._set_version(
            warehouse, levels, name, metadata, dataset, expected=expected_version, what=what
        )
        return int(dataset.version)

    async def _set_version(
        self,
        warehouse: str,
        levels: Identifier,
        name: str,
        metadata: dict[str, Any],
        dataset: Any,
        *,
        expected: int | None,
        what: str,
    ) -> None:
        schema = arrow_to_iceberg_schema(dataset.schema, 1) if self.config.iceberg_tooling else None
        table_id = [warehouse, *levels, name]
        await self.commit_snapshot(
            table_id, metadata, int(dataset.version), expected=expected, what=what, schema=schema
        )


_ICEBERG_TYPES: dict[str, type[errors.LanceNamespaceError]] = {
    "NoSuchNamespaceException": errors.NamespaceNotFoundError,
    "NoSuchTableException": errors.TableNotFoundError,
    "NoSuchViewException": errors.TableNotFoundError,
    "NamespaceNotEmptyException": errors.NamespaceNotEmptyError,
    "CommitFailedException": errors.ConcurrentModificationError,
    "CommitStateUnknownException": errors.ServiceUnavailableError,
    "NotAuthorizedException": errors.UnauthenticatedError,
    "ForbiddenException": errors.PermissionDeniedError,
    "BadRequestException": errors.InvalidInputError,
    "IllegalArgumentException": errors.InvalidInputError,
    "ValidationException": errors.InvalidInputError,
    "ServiceUnavailableException": errors.ServiceUnavailableError,
    "UnsupportedOperationException": errors.UnsupportedOperationError,
}


def _iceberg_error(
    response: httpx.Response,
    what: str,
    not_found: type[errors.LanceNamespaceError],
    conflict: type[errors.LanceNamespaceError],
    retried_ambiguously: bool,
) -> errors.LanceNamespaceError:
    """Iceberg's ErrorModel (``error.type``) names the condition; else the status does."""
    error_type = ""
    message = ""
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error_type = str(body["error"].get("type") or "")
            message = str(body["error"].get("message") or "")
    except ValueError:
        pass
    cls = _ICEBERG_TYPES.get(error_type)
    if error_type == "AlreadyExistsException" or (cls is None and response.status_code == 409):
        cls = conflict
    if cls is not None:
        return flag_ambiguous(cls(f"{what}: {message}" if message else what), retried_ambiguously)
    return error_from_response(
        response.status_code,
        response.content,
        not_found=not_found,
        conflict=conflict,
        what=what,
        retried_ambiguously=retried_ambiguously,
    )
