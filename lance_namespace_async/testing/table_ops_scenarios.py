"""Scenarios of the table operations beyond rows: tags, indices, columns, schema
metadata, query plans, statistics and transactions.

Registered with the catalog scenarios (imported at the end of the package ``scenarios``).
Each scenario creates its table through CreateTable with Arrow rows (as
``data_scenarios`` does) and checks what the operation changed where it lives: the
schema and metadata on storage with pylance, the tags and indices through their own
listings, so a backend that answers without doing the work fails here.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from .. import errors
from ._kit import Kit, properties_of
from ._scenario import scenario


def _rows(count: int, start: int = 0) -> Any:
    import pyarrow as pa

    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "vec": pa.array([[float(i), 0.0] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )


async def _created(kit: Kit, rows: int = 3) -> tuple[list[str], str]:
    table = kit.table("t")
    response = await kit.ns.create_table({"id": table}, _rows(rows))
    location = response.location
    if not isinstance(location, str) or not location:
        raise AssertionError(f"CreateTable answered no location: {location!r}")
    return table, location


async def _schema(kit: Kit, location: str) -> Any:
    """The table's latest Arrow schema, read from storage with pylance."""
    import lance

    options = kit.storage_options()

    def read() -> Any:
        return lance.dataset(location, storage_options=options or None).schema

    return await anyio.to_thread.run_sync(read)


async def _tags(kit: Kit, table: list[str]) -> dict[str, int]:
    listed = await kit.ns.list_table_tags({"id": table})
    return {name: tag.version for name, tag in listed.tags.additional_properties.items()}


# == tags ==================================================================================


@scenario()
async def table_tags_are_listed_moved_and_deleted(kit: Kit) -> None:
    """ListTableTags lists each tag with the version it names; UpdateTableTag moves a
    tag to another version (GetTableTagVersion and the listing follow); DeleteTableTag
    removes it from the listing, and deleting it again answers TableTagNotFound (8)."""
    table, _ = await _created(kit)
    await kit.ns.insert_into_table({"id": table}, _rows(2, 3))  # version 2
    assert await _tags(kit, table) == {}
    await kit.ns.create_table_tag({"id": table, "tag": "first", "version": 1})
    await kit.ns.create_table_tag({"id": table, "tag": "latest", "version": 1})
    assert await _tags(kit, table) == {"first": 1, "latest": 1}
    await kit.ns.update_table_tag({"id": table, "tag": "latest", "version": 2})
    assert (await kit.ns.get_table_tag_version({"id": table, "tag": "latest"})).version == 2
    assert await _tags(kit, table) == {"first": 1, "latest": 2}
    await kit.ns.delete_table_tag({"id": table, "tag": "first"})
    assert await _tags(kit, table) == {"latest": 2}
    await kit.refuses(
        errors.TableTagNotFoundError, kit.ns.delete_table_tag, {"id": table, "tag": "first"}
    )


# == indices ===============================================================================


@scenario()
async def a_vector_index_is_described_and_dropped(kit: Kit) -> None:
    """CreateTableIndex builds a vector index over every row that ListTableIndices lists
    and DescribeTableIndexStats describes with its type; DropTableIndex removes
    it (no longer listed, its stats TableIndexNotFound, 6) and leaves the rows."""
    table, location = await _created(kit, rows=16)
    await kit.ns.create_table_index(
        {
            "id": table,
            "column": "vec",
            "index_type": "IVF_FLAT",
            "name": "by_vec",
            "num_partitions": 1,
            "distance_type": "l2",
        }
    )
    listed = await kit.ns.list_table_indices({"id": table})
    assert [(i.index_name, i.columns) for i in listed.indexes] == [("by_vec", ["vec"])]
    stats = await kit.ns.describe_table_index_stats({"id": table, "index_name": "by_vec"})
    assert (stats.num_indexed_rows, stats.index_type) == (16, "IVF_FLAT")
    await kit.ns.drop_table_index({"id": table, "index_name": "by_vec"})
    assert (await kit.ns.list_table_indices({"id": table})).indexes == []
    await kit.refuses(
        errors.TableIndexNotFoundError,
        kit.ns.describe_table_index_stats,
        {"id": table, "index_name": "by_vec"},
    )
    assert await kit.count_rows(location) == 16


# == columns and schema metadata ===========================================================


@scenario()
async def columns_added_altered_and_dropped_are_seen_in_the_schema(kit: Kit) -> None:
    """AlterTableAddColumns adds a column computed from an SQL expression (its values
    read back by QueryTable); AlterTableAlterColumns renames it and AlterTableDropColumns
    drops it, each seen in the schema on storage and each a new version."""
    table, location = await _created(kit)
    added = await kit.ns.alter_table_add_columns(
        {"id": table, "new_columns": [{"name": "twice", "expression": "id * 2"}]}
    )
    assert (await _schema(kit, location)).names == ["id", "vec", "twice"]
    found = await kit.ns.query_table({"id": table, "k": 10, "vector": None})
    assert sorted(found.column("twice").to_pylist()) == [0, 2, 4]
    await kit.ns.alter_table_alter_columns(
        {"id": table, "alterations": [{"path": "twice", "rename": "double"}]}
    )
    assert (await _schema(kit, location)).names == ["id", "vec", "double"]
    dropped = await kit.ns.alter_table_drop_columns({"id": table, "columns": ["double"]})
    assert (await _schema(kit, location)).names == ["id", "vec"]
    assert added.version == 2
    assert dropped.version == 4
    assert await kit.count_rows(location) == 3


@scenario()
async def update_table_schema_metadata_stores_it_in_the_schema(kit: Kit) -> None:
    """UpdateTableSchemaMetadata answers the table's metadata and stores it in the
    schema on storage."""
    table, location = await _created(kit)
    answered = await kit.ns.update_table_schema_metadata(
        {"id": table, "metadata": {"owner": "kit"}}
    )
    metadata = getattr(answered.metadata, "additional_properties", None) or {}
    assert metadata.get("owner") == "kit", answered.metadata
    assert ((await _schema(kit, location)).metadata or {}).get(b"owner") == b"kit"


@scenario()
async def update_field_metadata_stores_it_on_that_field(kit: Kit) -> None:
    """UpdateFieldMetadata stores metadata on the field it names, read back from
    storage; the other fields are untouched."""
    table, location = await _created(kit)
    await kit.ns.update_field_metadata(
        {"id": table, "updates": [{"path": "id", "metadata": {"unit": "n"}}]}
    )
    schema = await _schema(kit, location)
    assert schema.field("id").metadata == {b"unit": b"n"}
    assert not schema.field("vec").metadata


# == query plans and statistics ============================================================


@scenario()
async def query_plans_show_the_scan_and_its_filter(kit: Kit) -> None:
    """ExplainTableQueryPlan answers the plan of a query, which scans the table with the
    query's filter; AnalyzeTableQueryPlan runs it and answers the plan with its
    metrics, the rows it produced among them."""
    table, _ = await _created(kit, rows=5)
    query = {"id": table, "k": 10, "vector": None, "filter": "id > 2"}
    plan = (await kit.ns.explain_table_query_plan({"id": table, "query": query})).plan
    assert "LanceRead" in plan or "LanceScan" in plan, plan
    assert "id > Int64(2)" in plan, plan
    analysis = (await kit.ns.analyze_table_query_plan(query)).analysis
    assert "AnalyzeExec" in analysis, analysis
    assert "output_rows=2" in analysis, analysis


@scenario()
async def get_table_stats_counts_rows_fragments_and_indices(kit: Kit) -> None:
    """GetTableStats answers the rows, the fragments with their lengths and the number
    of indices of the latest version."""
    table, _ = await _created(kit, rows=4)
    await kit.ns.insert_into_table({"id": table}, _rows(2, 4))
    stats = await kit.ns.get_table_stats({"id": table})
    assert (stats.num_rows, stats.num_indices) == (6, 0)
    fragments = stats.fragment_stats
    assert fragments.num_fragments == 2
    assert (fragments.lengths.min_, fragments.lengths.max_) == (2, 4)
    assert stats.total_bytes > 0


# == transactions ==========================================================================


@scenario()
async def a_committed_transaction_is_described_and_altered(kit: Kit) -> None:
    """A write commits a transaction that DescribeTransaction (id: the table's id, then
    the transaction's: the ``transaction_id`` the write answered, or else the number of
    the version it wrote) answers as SUCCEEDED with that version; AlterTransaction sets
    a property that is then described. A transaction the table never had is
    TransactionNotFound (10)."""
    table, _ = await _created(kit)
    await kit.refuses(
        errors.TransactionNotFoundError,
        kit.ns.describe_transaction,
        {"id": [*table, "no-such-transaction"]},
    )
    answered = await kit.ns.update_table_schema_metadata({"id": table, "metadata": {"a": "b"}})
    given = answered.transaction_id
    transaction = [*table, given if isinstance(given, str) and given else "2"]
    described = await kit.ns.describe_transaction({"id": transaction})
    assert str(described.status).upper() == "SUCCEEDED", described.status
    properties = properties_of(described)
    assert properties.get("version") == "2", properties
    await kit.ns.alter_transaction(
        {
            "id": transaction,
            "actions": [{"setPropertyAction": {"key": "reviewed", "value": "yes"}}],
        }
    )
    again = await kit.ns.describe_transaction({"id": transaction})
    assert properties_of(again).get("reviewed") == "yes", properties_of(again)
