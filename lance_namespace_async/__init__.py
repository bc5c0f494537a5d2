"""lance-namespace-async: the async-first client for the Lance Namespace specification.

    async with lance_namespace_async.connect("dir", {"root": "/data/lance"}) as ns:
        tables = await ns.list_tables(ListTablesRequest(id=["team"]))

``connect_sync`` gives the same backends to blocking code (and to pylance as a
``namespace_client``); ``crawl`` walks a whole catalog concurrently. Names are
imported on first use, so ``import lance_namespace_async`` stays cheap.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from typing import Any

    from . import errors, impls, models
    from ._core.base import OPERATIONS, AsyncLanceNamespace
    from ._core.identifiers import join_identifier, parse_identifier
    from ._core.registry import available_impls, connect, register_impl
    from ._facade.crawl import CrawledTable, crawl, iter_namespaces, iter_tables
    from ._facade.sync import SyncLanceNamespace, connect_sync
    from .errors import LanceNamespaceError
    from .pipeline import wait_for_job, wait_for_job_sync

__version__ = "0.1.0"

_LAZY: dict[str, tuple[str, str | None]] = {
    "connect": ("._core.registry", "connect"),
    "register_impl": ("._core.registry", "register_impl"),
    "available_impls": ("._core.registry", "available_impls"),
    "connect_sync": ("._facade.sync", "connect_sync"),
    "SyncLanceNamespace": ("._facade.sync", "SyncLanceNamespace"),
    "AsyncLanceNamespace": ("._core.base", "AsyncLanceNamespace"),
    "OPERATIONS": ("._core.base", "OPERATIONS"),
    "crawl": ("._facade.crawl", "crawl"),
    "iter_namespaces": ("._facade.crawl", "iter_namespaces"),
    "iter_tables": ("._facade.crawl", "iter_tables"),
    "CrawledTable": ("._facade.crawl", "CrawledTable"),
    "parse_identifier": ("._core.identifiers", "parse_identifier"),
    "join_identifier": ("._core.identifiers", "join_identifier"),
    "LanceNamespaceError": (".errors", "LanceNamespaceError"),
    "errors": (".errors", None),
    "impls": (".impls", None),
    "models": (".models", None),
    "wait_for_job": (".pipeline", "wait_for_job"),
    "wait_for_job_sync": (".pipeline", "wait_for_job_sync"),
}

__all__ = [
    "OPERATIONS",
    "AsyncLanceNamespace",
    "CrawledTable",
    "LanceNamespaceError",
    "SyncLanceNamespace",
    "available_impls",
    "connect",
    "connect_sync",
    "crawl",
    "errors",
    "impls",
    "iter_namespaces",
    "iter_tables",
    "join_identifier",
    "models",
    "parse_identifier",
    "register_impl",
    "wait_for_job",
    "wait_for_job_sync",
]


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module = _importlib.import_module(module_name, __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names once each (loaded or not), ``__version__`` and the dunders;
    not the helpers this module imports for itself."""
    dunders = {name for name in globals() if name.startswith("__") and name.endswith("__")}
    return sorted({*__all__, *dunders})
