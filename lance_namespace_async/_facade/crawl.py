"""``crawl()``: every table below a namespace, concurrently, in bounded memory.

The walk itself lives in :mod:`lance_namespace_async._core.walk`, below the
backends, so the catalog backends' ListAllTables runs the same walk; this module
is where users (and the CLI, the Spark inventory, the kit) import it from.
"""

from __future__ import annotations

from .._core.walk import CrawledTable, crawl, iter_namespaces, iter_tables

__all__ = ["CrawledTable", "crawl", "iter_namespaces", "iter_tables"]
