"""A table as the driver resolved it, carried to executors in a pickle.

The handle holds the backend's impl and properties, not a connection:
each Python worker re-creates the namespace from them once (the facade cache
below) and asks the catalog again for the table's storage options, so
credentials a catalog vends stay fresh on long jobs. Its repr shows the
identifier and location only: properties and storage options carry secrets.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import attrs
from anyio.from_thread import BlockingPortal

from .. import errors
from .._core.base import AsyncLanceNamespace
from .._core.registry import connect
from .._facade.portal import start_portal
from .._storage.places import as_uri

__all__ = ["BlockingBackend", "TableHandle", "cached_namespace", "storage_options_of"]

T = TypeVar("T")


class BlockingBackend:
    """An async backend driven from Spark's Python workers.

    Not :class:`~lance_namespace_async.SyncLanceNamespace`: that one is also a
    pylance ``LanceNamespace``, and importing pylance's pydantic client costs a
    Python worker seconds — paid again by every planning worker Spark starts.
    """

    def __init__(self, impl: str, properties: Mapping[str, str]) -> None:
        self.async_namespace: AsyncLanceNamespace = connect(impl, properties)
        self._portal: BlockingPortal | None = None
        self._lock = threading.Lock()

    def run(self, function: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        with self._lock:
            if self._portal is None:
                self._portal, _ = start_portal()
        return self._portal.call(functools.partial(function, *args, **kwargs))

    def describe_table(self, request: dict[str, Any]) -> Any:
        return self.run(self.async_namespace.describe_table, request)

    def declare_table(self, request: dict[str, Any]) -> Any:
        return self.run(self.async_namespace.declare_table, request)

    def drop_table(self, request: dict[str, Any]) -> Any:
        return self.run(self.async_namespace.drop_table, request)


def storage_options_of(response: Any) -> dict[str, str]:
    """A Describe/DeclareTable response's storage options as a plain string map."""
    options = response.storage_options
    return {str(k): str(v) for k, v in (options.to_dict() if options else {}).items()}


_namespaces: dict[tuple[str, tuple[tuple[str, str], ...]], BlockingBackend] = {}
_namespaces_lock = threading.Lock()


def cached_namespace(impl: str, properties: Mapping[str, str]) -> BlockingBackend:
    """One connection per worker process and configuration.

    Spark reuses Python workers across tasks; connecting once per process keeps
    a task's catalog traffic to one DescribeTable. The loop runs on a daemon
    thread, so a worker that exits needs no cleanup.
    """
    key = (impl, tuple(sorted(properties.items())))
    with _namespaces_lock:
        namespace = _namespaces.get(key)
        if namespace is None:
            namespace = BlockingBackend(impl, properties)
            _namespaces[key] = namespace
        return namespace


@attrs.frozen(repr=False)
class TableHandle:
    """Where a table lives and which version a job reads or started from."""

    impl: str
    properties: Mapping[str, str]
    table_id: tuple[str, ...]
    location: str
    #: the version reads return and writes start from; None: no data yet
    version: int | None
    #: ``managed_by=impl`` tables (seed 003): the catalog names the version
    catalog_managed: bool = False

    def __repr__(self) -> str:
        return (
            f"TableHandle(id={list(self.table_id)!r}, location={self.location!r}, "
            f"version={self.version!r})"
        )

    def namespace(self) -> BlockingBackend:
        return cached_namespace(self.impl, self.properties)

    def storage_options(self) -> dict[str, str]:
        """The table's storage options, asked of the catalog by this worker.

        The location must still be the one the driver planned with: a table
        replaced under a running job is an error, never a silent switch.
        """
        response = self.namespace().describe_table({"id": list(self.table_id)})
        location = str(response.location or "")
        if location and as_uri(location).rstrip("/") != as_uri(self.location).rstrip("/"):
            raise errors.ConcurrentModificationError(
                f"table {list(self.table_id)!r} moved from {self.location!r} to {location!r} "
                "while the job ran"
            )
        return storage_options_of(response)

    def open(self, version: int | None = None) -> Any:
        """The Lance dataset at ``version`` (default: the handle's)."""
        import lance

        wanted = self.version if version is None else version
        return lance.dataset(self.location, version=wanted, storage_options=self.storage_options())
