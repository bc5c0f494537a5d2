"""``connect()``: from an ``impl`` name and a properties map to a backend.

Like pyiceberg's ``load_catalog``: built-in backends are named here and imported
only when asked for, so ``import lance_namespace_async`` stays cheap and an
optional dependency that is missing becomes an error naming the pip extra.
Third parties add backends with :func:`register_impl` or through the
``lance_namespace_async.impls`` entry-point group (``name = "pkg.mod:Class"``);
a dotted class path works too.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from ..errors import InvalidInputError, MissingDependencyError

if TYPE_CHECKING:
    from .base import AsyncLanceNamespace

__all__ = ["ENTRY_POINT_GROUP", "available_impls", "connect", "register_impl", "resolve_impl"]

ENTRY_POINT_GROUP = "lance_namespace_async.impls"

#: built-in backends: impl name -> (import target, pip extra it needs or None)
_BUILTIN: dict[str, tuple[str, str | None]] = {
    "dir": ("lance_namespace_async.directory:DirectoryNamespace", None),
    "rest": ("lance_namespace_async.rest:RestNamespace", None),
    "iceberg": ("lance_namespace_async.iceberg:IcebergNamespace", None),
    "unity": ("lance_namespace_async.unity:UnityNamespace", None),
    "glue": ("lance_namespace_async.glue:GlueNamespace", "glue"),
    "hive": ("lance_namespace_async.hive:HiveNamespace", "hive"),
    # several of the above under one root, each under its mount's name
    "mounts": ("lance_namespace_async.mounts:MountNamespace", None),
}

_registered: dict[str, str | type[AsyncLanceNamespace]] = {}
_entry_points_loaded = False
_lock = threading.Lock()


def register_impl(name: str, target: str | type[AsyncLanceNamespace]) -> None:
    """Make ``connect(name, ...)`` build ``target`` (a class or ``"pkg.mod:Class"``)."""
    if not name or not isinstance(name, str):
        raise InvalidInputError("impl name must be a non-empty string")
    with _lock:
        _registered[name] = target


def _load_entry_points() -> None:
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            _registered.setdefault(entry.name, entry.value)
        _entry_points_loaded = True


def available_impls() -> list[str]:
    """Names ``connect`` understands without a class path."""
    _load_entry_points()
    return sorted({*_BUILTIN, *_registered})


def _import_target(target: str, extra: str | None, impl: str) -> type[AsyncLanceNamespace]:
    if ":" in target:
        module_name, _, attribute = target.partition(":")
    else:
        module_name, _, attribute = target.rpartition(".")
    if not module_name or not attribute:
        raise InvalidInputError(
            f"unknown impl {impl!r}; use one of {', '.join(available_impls())} "
            "or a dotted class path such as 'my_pkg.module.MyNamespace'"
        )
    try:
        module = importlib.import_module(module_name)
    except MissingDependencyError:
        raise  # the backend named what is missing already
    except ImportError as exc:
        if extra is not None:
            raise MissingDependencyError.for_extra(f"impl {impl!r}", extra, exc) from exc
        raise InvalidInputError(f"cannot import impl {impl!r}: {exc}") from exc
    try:
        cls = getattr(module, attribute)
    except AttributeError:
        raise InvalidInputError(f"impl {impl!r}: {module_name} has no {attribute!r}") from None
    from .base import AsyncLanceNamespace

    if not (isinstance(cls, type) and issubclass(cls, AsyncLanceNamespace)):
        raise InvalidInputError(f"impl {impl!r} is not an AsyncLanceNamespace subclass")
    return cls


def resolve_impl(impl: str) -> type[AsyncLanceNamespace]:
    """The backend class for an impl name or class path."""
    if not isinstance(impl, str) or not impl:
        raise InvalidInputError("impl must be a non-empty string such as 'dir' or 'rest'")
    if impl in _BUILTIN:
        target, extra = _BUILTIN[impl]
        return _import_target(target, extra, impl)
    if impl not in _registered:
        _load_entry_points()
    registered = _registered.get(impl)
    if isinstance(registered, type):
        return registered
    return _import_target(registered or impl, None, impl)


def connect(impl: str, properties: Mapping[str, str] | None = None) -> AsyncLanceNamespace:
    """Build the async namespace of ``impl`` from its properties.

    Performs no network or disk I/O: use it as ``async with connect(...) as ns``
    (or call ``await ns.aclose()``), and connections open on first use.
    """
    return resolve_impl(impl).from_properties(properties or {})
