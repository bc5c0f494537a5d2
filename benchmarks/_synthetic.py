"""In-process backends for the report's sections 5 and 6 (no server, no disk).

``SyntheticCatalog`` answers ListNamespaces / ListTables / DescribeTable of a
catalog that exists only as arithmetic (N namespaces x M tables, every page
computed on the fly), so the crawler can walk 100,000 tables without building
them: the crawler only sees the ``AsyncLanceNamespace`` interface, which is all
it needs for a memory measurement. Each call yields to the event loop once, as
a call doing I/O would.

``NullNamespace`` answers NamespaceExists at once: the cheapest call there is,
so the sync facade's own cost per call is what a measurement of it shows.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import anyio
import anyio.lowlevel

from lance_namespace_async import AsyncLanceNamespace, errors
from lance_namespace_async._core.config import BackendConfig
from lance_namespace_async.models import (
    DescribeTableRequest,
    DescribeTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
)


def _namespace(index: int) -> str:
    return f"ns{index:04d}"


def _table(index: int) -> str:
    return f"t{index:05d}"


class SyntheticCatalog(AsyncLanceNamespace):
    """``namespaces`` x ``tables_per_ns`` tables, listed and described on the fly."""

    impl_name: ClassVar[str] = "synthetic"

    def __init__(self, namespaces: int, tables_per_ns: int) -> None:
        super().__init__(BackendConfig.from_properties({}))
        self.namespaces = namespaces
        self.tables_per_ns = tables_per_ns
        self.calls = 0

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        props = dict(properties or {})
        return cls(int(props.get("namespaces", "10")), int(props.get("tables_per_ns", "100")))

    def _page(self, names: int, request: Any, name: Any) -> tuple[list[str], str | None]:
        start = int(request.page_token) if isinstance(request.page_token, str) else 0
        limit = request.limit if isinstance(request.limit, int) else 1000
        end = min(names, start + limit)
        return [name(i) for i in range(start, end)], (str(end) if end < names else None)

    def _known(self, namespace: list[str]) -> bool:
        return len(namespace) == 1 and namespace[0].startswith("ns")

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        await anyio.lowlevel.checkpoint()
        self.calls += 1
        parent = list(request.id or [])
        if parent and not self._known(parent):
            raise errors.NamespaceNotFoundError(f"no namespace {parent}")
        names, token = self._page(0 if parent else self.namespaces, request, _namespace)
        return ListNamespacesResponse(namespaces=names, page_token=token)

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        await anyio.lowlevel.checkpoint()
        self.calls += 1
        namespace = list(request.id or [])
        if namespace and not self._known(namespace):
            raise errors.NamespaceNotFoundError(f"no namespace {namespace}")
        names, token = self._page(self.tables_per_ns if namespace else 0, request, _table)
        return ListTablesResponse(tables=names, page_token=token)

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        await anyio.lowlevel.checkpoint()
        self.calls += 1
        table = list(request.id or [])
        return DescribeTableResponse(
            table=table[-1],
            namespace=table[:-1],
            location="/synthetic/" + "$".join(table) + ".lance",
            version=1,
        )


class NullNamespace(AsyncLanceNamespace):
    """Every namespace exists, answered without any work."""

    impl_name: ClassVar[str] = "bench-null"

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(BackendConfig.from_properties({}))

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        return NamespaceExistsResponse()
