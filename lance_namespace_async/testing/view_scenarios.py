"""Scenarios of materialized views: CreateMaterializedView, RefreshMaterializedView.

Registered with the catalog scenarios (imported at the end of the package ``scenarios``).
Kept to one refresh job per backend (a job starts Spark work; the kit's time matters):
the view is created empty, refreshed, and its rows read back through CountTableRows
and QueryTable-free DescribeTable; the refresh's job is followed with
DescribeTransaction until it finishes. A definition that cannot run is refused before
anything is written.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from .. import errors
from ._kit import Kit
from ._scenario import scenario, table_gone
from .data_scenarios import _created

_OUTPUT = json.dumps(
    {
        "fields": [
            {"name": "id", "type": {"type": "int64"}, "nullable": True},
            {"name": "doubled", "type": {"type": "int64"}, "nullable": True},
        ]
    }
)
#: how long the kit waits for one small refresh job (a cold Spark start included)
_JOB_SECONDS = 300.0
_FINISHED = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


async def _finished(kit: Kit, job_id: str) -> Any:
    """DescribeTransaction of the job, polled until it has finished."""
    with anyio.fail_after(_JOB_SECONDS):
        while True:
            described = await kit.ns.describe_transaction({"id": [job_id]})
            if str(described.status) in _FINISHED:
                return described
            await anyio.sleep(0.5)


@scenario()
async def a_materialized_view_is_created_empty_then_refreshed_by_a_job(kit: Kit) -> None:
    """CreateMaterializedView (``kind=query``, ``with_no_data``) creates the view's table
    empty, with the output schema's columns, and DescribeTable's schema metadata says it
    is a view of that query; RefreshMaterializedView answers a job id at once, the job
    (followed with DescribeTransaction) succeeds, and the view then holds the query's
    rows over the source, in one new version."""
    source, _ = await _created(kit, "src", rows=3)
    view = kit.table("mv")
    query = f"SELECT id, id * 2 AS doubled FROM {source[-1]}"
    created = await kit.ns.create_materialized_view(
        {
            "id": view,
            "kind": "query",
            "source_query": query,
            "output_schema": _OUTPUT,
            "with_no_data": True,
        }
    )
    assert created.version >= 1, created
    assert (await kit.ns.count_table_rows({"id": view})).count == 0
    described = await kit.ns.describe_table({"id": view, "load_detailed_metadata": True})
    schema: Any = described.schema
    metadata = dict(schema.metadata.additional_properties)
    assert metadata.get("materialized_view.kind") == "query", metadata
    assert metadata.get("materialized_view.source_query") == query, metadata
    assert [f.name for f in schema.fields] == ["id", "doubled"]
    refreshed = await kit.ns.refresh_materialized_view({"id": view})
    assert isinstance(refreshed.job_id, str), refreshed
    assert refreshed.job_id, refreshed
    outcome = await _finished(kit, refreshed.job_id)
    assert str(outcome.status) == "SUCCEEDED", outcome
    assert (await kit.ns.count_table_rows({"id": view})).count == 3
    after = await kit.ns.describe_table({"id": view, "load_detailed_metadata": True})
    assert after.version == created.version + 1, (created.version, after.version)


@scenario()
async def a_materialized_view_over_a_missing_table_is_refused(kit: Kit) -> None:
    """CreateMaterializedView whose query reads a table that does not exist answers
    TableNotFound (4) and creates nothing; one whose query Spark cannot parse answers
    InvalidInput (13)."""
    view = kit.table("mv")
    request = {
        "id": view,
        "kind": "query",
        "source_query": "SELECT id, id AS doubled FROM no_such_table",
        "output_schema": _OUTPUT,
        "with_no_data": True,
    }
    await kit.refuses(errors.TableNotFoundError, kit.ns.create_materialized_view, request)
    await table_gone(kit, view)
    request["source_query"] = "SELEC id"
    await kit.refuses(errors.InvalidInputError, kit.ns.create_materialized_view, request)
    await table_gone(kit, view)
