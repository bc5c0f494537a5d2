"""The pipeline's answer to each operation it takes (see ``_core.pipeline_hook``).

One coroutine per operation, ``handler(ns, request) -> answer``; each lives with its
subject (views in ``_views``, computed columns and backfill in ``_backfill``, jobs in
``_jobs``) and is imported when first called, so a call never loads what it does not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

_WHERE = {
    "create_materialized_view": "_views",
    "refresh_materialized_view": "_views",
    "alter_table_add_columns": "_backfill",
    "alter_table_backfill_columns": "_backfill",
    "describe_transaction": "_jobs",
    "alter_transaction": "_jobs",
}


async def _call(method: str, ns: AsyncLanceNamespace, request: Any) -> Any:
    module = importlib.import_module(f"{__package__}.{_WHERE[method]}")
    return await getattr(module, method)(ns, request)


async def create_materialized_view(ns: AsyncLanceNamespace, request: Any) -> Any:
    return await _call("create_materialized_view", ns, request)


async def refresh_materialized_view(ns: AsyncLanceNamespace, request: Any) -> Any:
    return await _call("refresh_materialized_view", ns, request)


async def alter_table_add_columns(ns: AsyncLanceNamespace, request: Any) -> Any:
    return await _call("alter_table_add_columns", ns, request)


async def alter_table_backfill_columns(ns: AsyncLanceNamespace, request: Any) -> Any:
    return await _call("alter_table_backfill_columns", ns, request)


async def describe_transaction(ns: AsyncLanceNamespace, request: Any) -> Any:
    return await _call("describe_transaction", ns, request)


async def alter_transaction(ns: AsyncLanceNamespace, request: Any) -> Any:
    return await _call("alter_transaction", ns, request)
