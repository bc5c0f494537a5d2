"""Our backends as ``lance_namespace`` plugin classes: the ecosystem's front door.

``lance_namespace.connect(impl, properties)`` (Ray, Daft and others build on it)
and LanceDB's ``namespace_client_impl=`` build a namespace as ``Cls(**properties)``
from a class path or a registered alias. :class:`SyncLanceNamespace` takes
``(impl, properties)`` instead, so each backend gets a class here whose
constructor takes the properties as keyword arguments::

    import lance_namespace
    ns = lance_namespace.connect("lance_namespace_async.impls.GlueNamespace",
                                 {"region": "eu-west-1", "warehouse": "s3://bucket/lance"})

    import lancedb
    db = lancedb.connect(namespace_client_impl="lance_namespace_async.impls.DirNamespace",
                         namespace_client_properties={"root": "/data/lance"})

Each instance is the sync facade itself (the same portal running the same async
backend), so everything said of ``connect_sync`` holds: pylance's and LanceDB's
request models get answers in their own types, errors are also
``lance_namespace``'s error classes, and pickling reconnects on the other side.
Constructing one does no network I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._facade.sync import SyncLanceNamespace

__all__ = [
    "DirNamespace",
    "GlueNamespace",
    "HiveNamespace",
    "IcebergNamespace",
    "RestNamespace",
    "UnityNamespace",
]


class _PluginNamespace(SyncLanceNamespace):
    """A sync facade over one fixed backend, built from keyword properties."""

    impl: ClassVar[str]

    def __init__(self, **properties: Any) -> None:
        # lance_namespace passes its properties map as-is; values that are not
        # strings (LanceDB users write numbers and booleans) become the strings
        # every backend's configuration parses
        super().__init__(self.impl, {key: _as_property(value) for key, value in properties.items()})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state["properties"])  # type: ignore[misc]  # re-connect

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.async_namespace.namespace_id()})"


def _as_property(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


class DirNamespace(_PluginNamespace):
    """Lance tables in a directory (local, S3, GCS, Azure), with ``dir``'s properties."""

    impl = "dir"


class RestNamespace(_PluginNamespace):
    """A Lance REST server (``uri`` and the ``rest`` backend's properties)."""

    impl = "rest"


class IcebergNamespace(_PluginNamespace):
    """An Apache Iceberg REST Catalog, with the ``iceberg`` backend's properties."""

    impl = "iceberg"


class UnityNamespace(_PluginNamespace):
    """Unity Catalog, with the ``unity`` backend's properties."""

    impl = "unity"


class GlueNamespace(_PluginNamespace):
    """AWS Glue Data Catalog (the ``glue`` extra), with the ``glue`` backend's properties."""

    impl = "glue"


class HiveNamespace(_PluginNamespace):
    """A Hive Metastore (the ``hive`` extra), with the ``hive`` backend's properties."""

    impl = "hive"
