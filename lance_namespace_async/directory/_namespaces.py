"""The namespace operations of the directory backend, and the listing of tables.

Nested namespaces are rows of the manifest, created and listed by pylance; above
it: CreateNamespace modes ExistOk and Overwrite, DropNamespace mode Skip and
behavior Cascade (children and their tables), NamespaceNotFound for a missing
parent or root, pagination, and ListAllTables' recursion.
"""

from __future__ import annotations

import bisect
import contextlib
import os
from typing import Any

from .. import errors
from .._core.identifiers import Identifier, join_identifier
from .._core.modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, parse_mode
from .._core.paging import check_limit, page_of, token_of
from .._core.unique_names import refuse_table_named_like
from .._storage.places import local_path
from .._storage.tables import has_versions
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
from ._placement import root_tables

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
        snapshot = await self._snapshot()
        if snapshot is not None and (
            not namespace or manifest_id(namespace) in snapshot.namespaces
        ):
            # the copy has every namespace's row: no pylance (nor its caches) needed
            prefix = manifest_id(namespace) + self.delimiter if namespace else ""
            return sorted(
                child[len(prefix) :]
                for child in snapshot.namespaces
                if child.startswith(prefix) and self.delimiter not in child[len(prefix) :]
            )
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
        if namespace:
            snapshot = await self._snapshot()
            if snapshot is not None:  # the copy is current: it has every namespace's row
                if manifest_id(namespace) in snapshot.namespaces:
                    return NamespaceExistsResponse.from_dict({})
                raise errors.NamespaceNotFoundError(  # pylance's words
                    f"Namespace not found: {manifest_id(namespace)}"
                )
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
                skip = len(manifest_id(namespace)) + len(self.delimiter)
                return [oid[skip:] for oid in snapshot.children.get(manifest_id(namespace), ())]
        if not namespace:
            found = await self._run(self._root_table_names, include_declared)
            if found is not None:
                return found
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

    def _root_table_names(self, include_declared: bool) -> list[str] | None:
        """The root namespace's tables as pylance lists them, without its listing
        (worker thread): None when the manifest copy cannot answer.

        pylance's listing checks every directory in the root for a deregistration
        marker, and a root holds a directory per table of every namespace: a second at
        10,000 tables, a minute at 100,000 (past any deadline). Its answer is the root
        tables of the manifest and every ``<name>.lance`` directory without a
        ``.lance-deregistered`` marker; without ``include_declared``, only those whose
        ``_versions`` holds a version. Here: the copy's root rows and one listing of
        the root, reading only the ``.lance`` directories.
        """
        snapshots = self._snapshots
        root_path = local_path(self.root)
        if snapshots is None or root_path is None:
            return None
        snapshot = snapshots.current(force=True)  # pylance's listing costs far more
        if snapshot is None:
            return None
        names = set(snapshot.children.get("", ()))
        stored = {name: snapshot.tables.get(name) for name in names}
        if self.config.dir_listing_enabled:
            try:
                found = root_tables(self.root)
            except OSError:
                return None
            for name, path in found:
                if not os.path.lexists(os.path.join(path, ".lance-deregistered")):
                    names.add(name)
                    stored.setdefault(name, f"{name}.lance")
        if not include_declared:
            kept = set()
            for name in names:
                location = stored.get(name)
                if location is None:
                    return None  # a row the copy leaves to pylance
                if has_versions(os.path.join(root_path, location)):
                    kept.add(name)
            names = kept
        return sorted(names)

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"))
        check_limit(body.get("limit"))
        include_declared = body.get("include_declared", True) is not False
        if namespace and include_declared:
            snapshot = await self._snapshot()
            if snapshot is not None and manifest_id(namespace) in snapshot.namespaces:
                ids = snapshot.children.get(manifest_id(namespace), [])
                prefix = manifest_id(namespace) + self.delimiter
                page, token = _page_of_sorted(
                    ids, prefix, body.get("page_token"), body.get("limit")
                )
                return ListTablesResponse.from_dict({"tables": page, "page_token": token})
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


def _page_of_sorted(
    ids: list[str], prefix: str, page_token: Any, limit: Any
) -> tuple[list[str], str | None]:
    """:func:`page_of` over the names of object ids ``<prefix><name>`` already sorted and
    unique (the manifest copy's): one page costs its own length, not the namespace's (a
    bisect finds where it starts)."""
    start = token_of(page_token)
    size = check_limit(limit)
    first = 0 if start is None else bisect.bisect_right(ids, prefix + start)
    end = len(ids) if size is None else min(len(ids), first + size)
    page = [oid[len(prefix) :] for oid in ids[first:end]]
    if end >= len(ids) or not page:
        return page, None
    return page, page[-1]
