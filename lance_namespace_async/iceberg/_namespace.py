"""``IcebergNamespace``: seed 000's basic operations, in the seed's order, then the rest.

CreateNamespace, ListNamespaces, DescribeNamespace, DropNamespace, DeclareTable,
ListTables, DescribeTable and DeregisterTable follow the seed's steps. Where the seed is
silent this backend goes further: NamespaceExists and TableExists use HEAD; every
listing follows ``pageToken``/``pageSize``; ListTables loads table metadata
concurrently (bounded) to keep Lance tables only; DescribeTable can open the Lance
table (``load_detailed_metadata``); RegisterTable, DropTable (deregister, then delete
data), RenameTable, and DropNamespace with Cascade (refused when a non-Lance table is
inside) are implemented. Seed 003's catalog-managed versions come last, with
:class:`~._managed.ManagedIcebergVersions`; every other data operation comes from
:class:`~.._storage.operations.StorageTableOperations`. The calls go through
:class:`~._client.IcebergRestClient`, and table metadata is read and written by
:mod:`._mapping`.

Deletion (decided once in ``_storage.tables``): the storage root is ``root`` when
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
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, ClassVar, Self, TypeVar

import anyio

from .. import errors
from .._core.config import mask_url_userinfo
from .._core.identifiers import Identifier, validate_identifier
from .._core.modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, REGISTER_MODES, parse_mode
from .._core.paging import PageTrail, check_limit, token_of
from .._core.unique_names import (
    refuse_existing_table,
    refuse_namespace_named_like,
    refuse_table_named_like,
)
from .._storage.places import Claims
from .._storage.table_base import StorageAccess
from .._storage.tables import LanceTables, catalog_claims
from .._storage.vended_credentials import from_iceberg, wants_vending, with_vended
from .._transport.transport import HttpTransport
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
from ._client import IcebergRestClient
from ._mapping import (
    MANAGED_BY,
    MARKERS,
    arrow_to_iceberg_schema,
    create_table_body,
    is_lance,
    managed_by,
    storage_properties,
    table_properties,
)
from ._properties import IcebergConfig
from ._transaction import ManagedIcebergBatches

__all__ = ["IcebergNamespace"]

_Kept = TypeVar("_Kept")


def _is_lance_metadata(metadata: dict[str, Any]) -> bool:
    return is_lance(metadata.get("properties") or {})


def _whole(metadata: dict[str, Any]) -> dict[str, Any]:
    return metadata


class IcebergNamespace(ManagedIcebergBatches):
    """``impl="iceberg"``: Lance tables in an Iceberg REST Catalog."""

    impl_name: ClassVar[str] = "iceberg"
    delimiter = "."
    config: IcebergConfig

    def __init__(self, config: IcebergConfig) -> None:
        super().__init__(config)
        self.root = (config.root or os.getcwd()).rstrip("/")
        self._rest = IcebergRestClient(config)
        # the LoadTables of all listings in flight, at most as many as connections: a load
        # waits here before its request exists (no request, deadline timer or pool waiter
        # held while it waits), which saves a fifth of a listing's client CPU with 64
        # listings in flight (benchmarks/catalog_client_cpu.py)
        self._listing_loads = anyio.Semaphore(config.max_connections, fast_acquire=True)
        self.tables = LanceTables(
            threads=config.worker_threads,
            backend="iceberg",
            storage_options=config.storage,
            storage_root=config.root,
            drop_allowed=config.drop_allowed_locations,
            table_option_keys=config.table_storage_options,
            confined=config.confine_storage,
            confine_root=self.root,
            allowed_locations=config.allowed_locations,
        )

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(IcebergConfig.from_properties(properties))

    def namespace_id(self) -> str:
        return f"IcebergNamespace(endpoint={mask_url_userinfo(self.config.endpoint)!r})"

    async def aclose(self) -> None:
        await self._rest.aclose()

    @property
    def transport(self) -> HttpTransport:
        """The HTTP client side (deadlines, retries, OAuth2), shared with the REST client."""
        return self._rest.transport

    @property
    def config_requests(self) -> int:
        """How many ``GET /v1/config`` this namespace sent (one per warehouse)."""
        return self._rest.config_requests

    # -- identifiers and table metadata ------------------------------------------------------

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

    async def _load_lance_table(
        self, warehouse: str, namespace: Identifier, name: str, what: str
    ) -> dict[str, Any]:
        return (await self._load_lance_result(warehouse, namespace, name, what, vend=False))[0]

    async def _load_lance_result(
        self, warehouse: str, namespace: Identifier, name: str, what: str, *, vend: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        metadata, result = await self._rest.load_table(warehouse, namespace, name, what, vend=vend)
        if not is_lance(metadata.get("properties") or {}):
            raise errors.InvalidInputError(f"{what}: {name!r} is not a Lance table")
        return metadata, result

    # -- seed 000's basic operations, in its order: namespaces -------------------------------

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
        await self._rest.joined(warehouse, levels)  # a level holding the separator: unreachable
        if len(levels) > 1:
            await self._require_namespace(warehouse, levels[:-1], what)
        await refuse_table_named_like(self, parts)
        if mode == "Overwrite":
            await self._drop_tree(warehouse, levels, missing_ok=True)
        try:
            answer = await self._rest.call(
                "POST",
                f"{await self._rest.base(warehouse)}/namespaces",
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
        created = answer.get("properties") or properties
        return CreateNamespaceResponse.from_dict({"properties": created})

    async def _require_namespace(self, warehouse: str, levels: Identifier, what: str) -> None:
        """NamespaceNotFound unless the namespace that is to hold a new one exists (seed 000).

        Not every server checks: the Iceberg project's reference server (JdbcCatalog)
        creates namespace ``a.missing.x`` under an ``a`` without ``a.missing``, and a table
        in a namespace that does not exist; pyiceberg's SqlCatalog does the former.
        """
        try:
            await self._rest.send(
                "HEAD",
                await self._rest.namespace_path(warehouse, levels),
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
        body = await self._rest.call(
            "GET",
            await self._rest.namespace_path(warehouse, levels),
            what=what,
            idempotent=True,
            not_found=errors.NamespaceNotFoundError,
        )
        return {str(k): str(v) for k, v in (body.get("properties") or {}).items()}

    async def _list_namespace_page(
        self, warehouse: str, levels: Identifier, token: str | None, limit: int | None
    ) -> tuple[list[str], str | None]:
        what = f"ListNamespaces {'.'.join((warehouse, *levels))}"
        body = await self._rest.call(
            "GET",
            f"{await self._rest.base(warehouse)}/namespaces",
            params={
                "parent": await self._rest.joined(warehouse, levels) if levels else None,
                "pageToken": token,
                "pageSize": limit,
            },
            what=what,
            idempotent=True,
            not_found=errors.NamespaceNotFoundError,
        )
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

    def _all_tables_roots(self) -> tuple[Identifier, ...]:
        """ListAllTables walks the ``warehouses`` property's warehouses: the protocol
        has no call listing them."""
        if not self.config.warehouses:
            raise errors.UnsupportedOperationError(
                "ListAllTables is not supported by the iceberg backend without the "
                "'warehouses' property: the Iceberg REST protocol cannot list warehouses"
            )
        return tuple((warehouse,) for warehouse in self.config.warehouses)

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        parts = self._ids(request.to_dict(), "namespace id")
        if len(parts) < 2:
            if parts:
                await self._rest.warehouse(parts[0])
            return DescribeNamespaceResponse.from_dict({"properties": {}})
        properties = await self._namespace_properties(
            parts[0], parts[1:], f"DescribeNamespace {'.'.join(parts)}"
        )
        return DescribeNamespaceResponse.from_dict({"properties": properties})

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
            await self._rest.send(
                "DELETE",
                await self._rest.namespace_path(warehouse, levels),
                what=what,
                idempotent=False,
                not_found=errors.NamespaceNotFoundError,
                conflict=errors.NamespaceNotEmptyError,
            )
        except errors.NamespaceNotFoundError:
            return  # idempotent on missing (seed 000)

    async def _all_table_names(self, warehouse: str, levels: Identifier) -> list[str]:
        names: list[str] = []
        trail = PageTrail(f"ListTables {'.'.join((warehouse, *levels))}")
        token: str | None = None
        while True:
            page, token = await self._list_table_page(warehouse, levels, token, None)
            names.extend(page)
            if trail.follow(token) is None:
                return names

    async def _drop_tree(self, warehouse: str, levels: Identifier, *, missing_ok: bool) -> None:
        """Cascade: Lance tables and child namespaces first; a foreign table stops it."""
        what = f"DropNamespace {'.'.join((warehouse, *levels))}"
        try:
            children: list[str] = []
            trail = PageTrail(f"ListNamespaces {'.'.join((warehouse, *levels))}")
            token: str | None = None
            while True:
                page, token = await self._list_namespace_page(warehouse, levels, token, None)
                children.extend(page)
                if trail.follow(token) is None:
                    break
            tables = await self._all_table_names(warehouse, levels)
        except errors.NamespaceNotFoundError:
            if missing_ok:
                return
            raise
        metadata = await self._load_many(warehouse, levels, tables, _whole)
        foreign = [
            name
            for name, meta in zip(tables, metadata, strict=True)
            if meta is not None and not is_lance(meta.get("properties") or {})
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

    # -- seed 000's basic operations, in its order: tables -----------------------------------

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
        body = await self._rest.call(
            "POST",
            await self._rest.namespace_path(warehouse, levels) + "/tables",
            json=create_table_body(name, location, properties),
            what=what,
            idempotent=False,
            not_found=errors.NamespaceNotFoundError,
            conflict=errors.TableAlreadyExistsError,
        )
        metadata = body.get("metadata")
        return metadata if isinstance(metadata, dict) else {}

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        warehouse, levels, name = self._table_parts(body)
        location = body.get("location") or self._default_location(warehouse, levels, name)
        properties = table_properties(body.get("properties"), self.config.managed_by)
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
                "storage_options": self.tables.options_for(storage_properties(properties), MARKERS),
                "properties": properties,
                **({"managed_versioning": True} if properties[MANAGED_BY] == "impl" else {}),
            }
        )

    async def _list_table_page(
        self, warehouse: str, levels: Identifier, token: str | None, limit: int | None
    ) -> tuple[list[str], str | None]:
        what = f"ListTables {'.'.join((warehouse, *levels))}"
        body = await self._rest.call(
            "GET",
            await self._rest.namespace_path(warehouse, levels) + "/tables",
            params={"pageToken": token, "pageSize": limit},
            what=what,
            idempotent=True,
            not_found=errors.NamespaceNotFoundError,
        )
        names = [str(i.get("name")) for i in body.get("identifiers") or [] if i.get("name")]
        return names, token_of(body.get("next-page-token"))

    async def _load_many(
        self,
        warehouse: str,
        levels: Identifier,
        names: list[str],
        keep: Callable[[dict[str, Any]], _Kept],
    ) -> list[_Kept | None]:
        """What ``keep`` takes from each table's metadata (None: dropped while we listed),
        loading at most ``list_concurrency`` at a time (and, with every other listing's
        loads, at most ``max_connections``).

        Only what ``keep`` returns outlives its load: a listing of many tables holding
        every table's whole metadata until the last load answers gives the garbage
        collector that much more to walk (a quarter of the client CPU with 64 listings in
        flight, benchmarks/catalog_client_cpu.py). For the same reason workers start one
        at a time, each when the one before got a connection slot and another is free:
        with 64 listings in flight sharing 64 slots that is about one worker per listing,
        not 16 each (1,024 tasks, most of them waiting on the semaphore, whose frames and
        futures the collector kept walking: half of this method's own CPU per load)."""
        results: list[_Kept | None] = [None] * len(names)
        if not names:
            return results
        loads = self._listing_loads
        tables = await self._rest.namespace_path(warehouse, levels) + "/tables/"
        most = min(self.config.list_concurrency, len(names))
        taken = 0  # names handed to a worker so far
        workers = 1
        start: list[Callable[[], Coroutine[Any, Any, None]]] = []  # the worker, until done

        async def worker() -> None:
            nonlocal taken, workers
            while taken < len(names):
                index, taken = taken, taken + 1
                async with loads:
                    if workers < most and taken < len(names) and loads.value > 0:
                        workers += 1
                        group.start_soon(start[0])
                    try:
                        metadata = await self._rest.load_metadata(
                            tables, names[index], f"LoadTable {names[index]}"
                        )
                    except errors.TableNotFoundError:
                        continue  # dropped while we listed: stays None
                results[index] = keep(metadata)

        # a worker starts workers: naming itself in its own closure would make a cycle
        # (function, cells, task group, lists) left to the collector at every listing
        start.append(worker)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(worker)
        finally:
            start.clear()
        return results

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        parts = self._ids(body, "namespace id")
        limit = check_limit(body.get("limit"))
        if len(parts) < 2:
            if parts:
                await self._rest.warehouse(parts[0])
            return ListTablesResponse.from_dict({"tables": []})
        warehouse, levels = parts[0], parts[1:]
        names, token = await self._list_table_page(
            warehouse, levels, token_of(body.get("page_token")), limit
        )
        lance = await self._load_many(warehouse, levels, names, _is_lance_metadata)
        lance_tables = [name for name, kept in zip(names, lance, strict=True) if kept]
        return ListTablesResponse.from_dict({"tables": lance_tables, "page_token": token})

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        body = request.to_dict()
        warehouse, levels, name = self._table_parts(body)
        what = f"DescribeTable {'.'.join((warehouse, *levels, name))}"
        vend = wants_vending(body, self.config.vend_credentials)
        metadata, loaded = await self._load_lance_result(warehouse, levels, name, what, vend=vend)
        properties = {str(k): str(v) for k, v in (metadata.get("properties") or {}).items()}
        location = str(metadata.get("location") or "")
        options = self.tables.options_for(storage_properties(properties), MARKERS)
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
        if managed_by(properties) == "impl":
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
        await self._rest.send(
            "DELETE",
            await self._rest.table_path(warehouse, levels, name),
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

    # -- beyond seed 000 ---------------------------------------------------------------------

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        parts = self._ids(request.to_dict(), "namespace id")
        if len(parts) == 1:
            await self._rest.warehouse(parts[0])
        elif parts:
            await self._rest.send(
                "HEAD",
                await self._rest.namespace_path(parts[0], parts[1:]),
                what=f"NamespaceExists {'.'.join(parts)}",
                idempotent=True,
                not_found=errors.NamespaceNotFoundError,
            )
        return NamespaceExistsResponse()

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        if isinstance(request.to_dict().get("version"), int):  # that version must exist too
            body = request.to_dict()
            await self._describe_table(
                DescribeTableRequest.from_dict({"id": body.get("id"), "version": body["version"]})
            )
            return TableExistsResponse()
        warehouse, levels, name = self._table_parts(request.to_dict())
        await self._rest.send(
            "HEAD",
            await self._rest.table_path(warehouse, levels, name),
            what=f"TableExists {'.'.join((warehouse, *levels, name))}",
            idempotent=True,
            not_found=errors.TableNotFoundError,
        )
        return TableExistsResponse()

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        warehouse, levels, name = self._table_parts(body)
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        properties = table_properties(body.get("properties"), self.config.managed_by)
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
                storage_properties(metadata.get("properties") or {}), MARKERS
            )
            await self.tables.drop_data(
                location,
                options,
                default_location=self._default_location(warehouse, levels, name),
                claims=self._claims(warehouse, levels, name),
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
        await self._rest.send(
            "POST",
            f"{await self._rest.base(warehouse)}/tables/rename",
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

    # -- storage: where tables go, and who commits their versions ----------------------------

    #: pyiceberg-style catalogs write a table's metadata files into its location
    _catalog_files = frozenset({"metadata"})

    async def _creation_location(self, table: list[str]) -> str:
        warehouse, levels, name = self._table_parts({"id": table})
        return self._default_location(warehouse, levels, name)

    def _default_location(self, warehouse: str, levels: Identifier, name: str) -> str:
        return "/".join((self.root, warehouse, *levels, name))

    def _claims(self, warehouse: str, levels: Identifier, name: str) -> Claims:
        """Other tables at a place below the root, by the default layout."""
        return catalog_claims(self, self.tables, (warehouse, *levels, name), shortest=3)

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
        return managed_by(properties) == "impl"

    @property
    def _tooling(self) -> bool:
        return self.config.iceberg_tooling

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
