"""The namespace operations of the directory backend, and the listing of tables.

Nested namespaces are rows of the manifest, created and listed by pylance; above
it: CreateNamespace modes ExistOk and Overwrite, DropNamespace mode Skip and
behavior Cascade (children and their tables), NamespaceNotFound for a missing
parent or root, pagination, and ListAllTables' recursion.
"""

from __future__ import annotations

import contextlib
from typing import Any

from .. import errors
from .._core.identifiers import Identifier, join_identifier
from .._core.modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, parse_mode
from .._core.paging import check_limit, page_of, token_of
from .._core.unique_names import refuse_table_named_like
from ..models import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    ListAllTablesRequest,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
)
from ._core import DirectoryCore, str_map
from ._manifest import manifest_id

__all__ = ["NamespaceOperations"]


class NamespaceOperations(DirectoryCore):
    """CreateNamespace, ListNamespaces, DescribeNamespace, NamespaceExists,
    DropNamespace, ListTables and ListAllTables."""

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"), allow_root=False)
        if "'" in namespace[-1]:
            # pylance 14 quotes namespace ids into SQL unescaped: such a namespace
            # breaks ListNamespaces/ListTables of itself and ListAllTables of the catalog
            raise errors.InvalidInputError(
                f"namespace name {namespace[-1]!r} must not contain a single quote"
            )
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        properties = str_map(body.get("properties"))
        create: dict[str, Any] = {"id": list(namespace)}
        if properties:
            create["properties"] = properties
        async with self._guard.filling(namespace[:-1]):
            await self._require_namespace(namespace[:-1])
            await refuse_table_named_like(self, namespace)
            if mode == "Overwrite":
                async with self._guard.dropping(namespace):
                    await self._drop_namespace_tree(namespace, missing_ok=True)
            try:
                result = await self._create_once("create_namespace", create, namespace)
            except errors.NamespaceAlreadyExistsError:
                if mode != "ExistOk":
                    raise
                described = await self._call("describe_namespace", {"id": list(namespace)})
                return CreateNamespaceResponse.from_dict(
                    {"properties": str_map(described.get("properties")) or {}}
                )
        return CreateNamespaceResponse.from_dict(
            {"properties": str_map(result.get("properties")) or properties or {}}
        )

    async def _child_namespaces(self, namespace: Identifier) -> list[str]:
        await self._require_namespace(namespace)
        result = await self._call("list_namespaces", {"id": list(namespace)})
        names = [str(n) for n in result.get("namespaces") or []]
        await self._require_root_for_read(namespace, empty=not names)
        return names

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"))
        check_limit(body.get("limit"))
        names = await self._child_namespaces(namespace)
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListNamespacesResponse.from_dict({"namespaces": page, "page_token": token})

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        namespace = self._namespace_id(request.to_dict().get("id"))
        result = await self._call("describe_namespace", {"id": list(namespace)})
        await self._require_root_for_read(namespace, empty=True)
        return DescribeNamespaceResponse.from_dict(
            {"properties": str_map(result.get("properties")) or {}}
        )

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        namespace = self._namespace_id(request.to_dict().get("id"))
        await self._call("namespace_exists", {"id": list(namespace)})
        await self._require_root_for_read(namespace, empty=True)
        return NamespaceExistsResponse.from_dict({})

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"), allow_root=False)
        mode = parse_mode(body.get("mode"), DROP_MODES, default="Fail")
        behavior = parse_mode(body.get("behavior"), DROP_BEHAVIORS, default="Restrict")
        try:
            described = await self._call("describe_namespace", {"id": list(namespace)})
        except errors.NamespaceNotFoundError:
            if mode == "Skip":
                return DropNamespaceResponse.from_dict({})
            raise
        async with self._guard.dropping(namespace):
            if behavior == "Cascade":
                await self._drop_namespace_tree(namespace, missing_ok=mode == "Skip")
            else:
                await self._call("drop_namespace", {"id": list(namespace)})
        return DropNamespaceResponse.from_dict(
            {"properties": str_map(described.get("properties")) or {}}
        )

    async def _drop_namespace_tree(self, namespace: Identifier, *, missing_ok: bool) -> None:
        """Drop a namespace with every child namespace and table below it."""
        try:
            children = await self._child_namespaces(namespace)
        except errors.NamespaceNotFoundError:
            if missing_ok:
                return
            raise
        for child in children:
            await self._drop_namespace_tree((*namespace, child), missing_ok=True)
        for table in await self._table_names(namespace, include_declared=True):
            with contextlib.suppress(errors.TableNotFoundError):
                await self._drop_table_at((*namespace, table))
        try:
            await self._call("drop_namespace", {"id": list(namespace)})
        except errors.NamespaceNotFoundError:
            if not missing_ok:
                raise

    # -- listing tables ----------------------------------------------------------------

    async def _table_names(self, namespace: Identifier, *, include_declared: bool) -> list[str]:
        if namespace and include_declared:
            snapshot = await self._snapshot()
            if snapshot is not None and manifest_id(namespace) in snapshot.namespaces:
                return list(snapshot.children.get(manifest_id(namespace), ()))
        await self._require_namespace(namespace)
        names: list[str] = []
        token: str | None = None
        while True:
            body: dict[str, Any] = {"id": list(namespace), "include_declared": include_declared}
            if token:
                body["page_token"] = token
            result = await self._call("list_tables", body)
            names.extend(str(n) for n in result.get("tables") or [])
            token = token_of(result.get("page_token"))
            if token is None:
                await self._require_root_for_read(namespace, empty=not names)
                return names

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"))
        check_limit(body.get("limit"))
        include_declared = body.get("include_declared", True) is not False
        names = await self._table_names(namespace, include_declared=include_declared)
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})

    async def _list_all_tables(self, request: ListAllTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        check_limit(body.get("limit"))
        delimiter = body.get("delimiter") or self.delimiter
        if not isinstance(delimiter, str):
            raise errors.InvalidInputError("delimiter must be a string")
        include_declared = body.get("include_declared", True) is not False
        found: list[str] = []
        pending: list[Identifier] = [()]
        while pending:
            namespace = pending.pop()
            for table in await self._table_names(namespace, include_declared=include_declared):
                found.append(join_identifier((*namespace, table), delimiter))
            pending.extend((*namespace, c) for c in await self._child_namespaces(namespace))
        page, token = page_of(found, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})
