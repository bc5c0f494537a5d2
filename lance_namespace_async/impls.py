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

Importing this module also registers a short alias per backend with
``lance_namespace.register_namespace_impl`` (see :data:`ALIASES`):
``lance_namespace.connect("lna-glue", props)``. The names carry the ``lna-``
prefix because the plain ones are taken: ``dir`` and ``rest`` are pylance's own,
and ``lance-namespace-impls`` registers ``glue``, ``hive2``, ``hive3``,
``iceberg``, ``polaris``, ``unity`` and ``goosefs``. lance_namespace has no
entry points, so an alias exists only once this module is imported (naming any
class path here does that); ``import lance_namespace_async`` itself stays cheap
and registers nothing.

Each instance is the sync facade itself (the same portal running the same async
backend), so everything said of ``connect_sync`` holds: pylance's and LanceDB's
request models get answers in their own types, errors are also
``lance_namespace``'s error classes, and pickling reconnects on the other side.
Constructing one does no network I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar

import lance_namespace

from ._facade.sync import SyncLanceNamespace

__all__ = [
    "ALIASES",
    "DirNamespace",
    "GlueNamespace",
    "HiveNamespace",
    "IcebergNamespace",
    "MountsNamespace",
    "RestNamespace",
    "UnityNamespace",
    "register_aliases",
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


class MountsNamespace(_PluginNamespace):
    """Several backends under one root (``mount.<name>.impl`` and ``mount.<name>.<key>``),
    each under its mount's name: see :mod:`lance_namespace_async.mounts`."""

    impl = "mounts"


ALIASES: dict[str, str] = {
    f"lna-{cls.impl}": f"{__name__}.{cls.__name__}"
    for cls in (
        DirNamespace,
        RestNamespace,
        IcebergNamespace,
        UnityNamespace,
        GlueNamespace,
        HiveNamespace,
        MountsNamespace,
    )
}
"""The short names this module registers with ``lance_namespace``."""


def register_aliases() -> list[str]:
    """Register :data:`ALIASES` with ``lance_namespace``; idempotent.

    A name another package registered first, or one of pylance's native names,
    is left alone. Returns the names that now point at our classes.
    """
    native = getattr(lance_namespace, "NATIVE_IMPLS", {})
    taken = getattr(lance_namespace, "_REGISTERED_IMPLS", {})
    registered = []
    for name, class_path in ALIASES.items():
        if name in native or taken.get(name, class_path) != class_path:
            continue
        lance_namespace.register_namespace_impl(name, class_path)
        registered.append(name)
    return registered


register_aliases()
