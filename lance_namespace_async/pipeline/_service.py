"""The pipeline's answer to each operation it takes (see ``_core.pipeline_hook``).

Each operation's coroutine, ``<method>(ns, request) -> answer``, lives with its subject
(views in ``_views``, computed columns and backfill in ``_backfill``, jobs in ``_jobs``)
and is imported when first called, so a call never loads what it does not use.
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


async def answer(method: str, ns: AsyncLanceNamespace, request: Any) -> Any:
    """The pipeline's answer to ``method`` (one of ``_core.pipeline_hook.METHODS``)."""
    module = importlib.import_module(f"{__package__}.{_WHERE[method]}")
    return await getattr(module, method)(ns, request)
