"""Scenarios of the table data operations: rows, queries, tags, versions and indices.

Registered with the catalog scenarios (imported at the end of the package ``scenarios``).
Every scenario creates its table through CreateTable with Arrow rows, so a
backend without CreateTable skips them all ("CreateTable unsupported by ..."); the
rows are then checked from storage with pylance where the scenario says so.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import errors
from ._kit import Kit
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


async def _created(kit: Kit, name: str = "t", rows: int = 3) -> tuple[list[str], str]:
    table = kit.table(name)
    response = await kit.ns.create_table({"id": table}, _rows(rows))
    location = response.location
    if not isinstance(location, str) or not location:
        raise AssertionError(f"CreateTable answered no location: {location!r}")
    return table, location


# == CreateTable, InsertIntoTable, CountTableRows, QueryTable ==============================


@scenario()
async def create_table_writes_the_rows_it_is_given(kit: Kit) -> None:
    """CreateTable with Arrow rows creates the table at the location it answers, at
    version 1, holding exactly those rows (read back from storage); the table is then
    listed and exists."""
    table, location = await _created(kit, rows=3)
    assert await kit.count_rows(location) == 3
    assert await kit.tables() == ["t"]
    await kit.ns.table_exists({"id": table})


@scenario()
async def create_table_refuses_an_existing_table(kit: Kit) -> None:
    """CreateTable of an existing table answers TableAlreadyExists (5) and leaves the
    existing table (its rows and version) untouched."""
    table, location = await _created(kit)
    await kit.refuses(
        errors.TableAlreadyExistsError,
        functools.partial(kit.ns.create_table, data=_rows(9)),
        {"id": table},
    )
    assert await kit.count_rows(location) == 3


@scenario()
async def insert_into_table_appends_rows(kit: Kit) -> None:
    """InsertIntoTable appends the rows (a new version), and CountTableRows counts them,
    all of them or those a predicate selects."""
    table, location = await _created(kit, rows=3)
    inserted = await kit.ns.insert_into_table({"id": table}, _rows(2, 3))
    assert inserted.num_inserted_rows in (2, None)
    assert await kit.count_rows(location) == 5
    assert (await kit.ns.count_table_rows({"id": table})).count == 5
    assert (await kit.ns.count_table_rows({"id": table, "predicate": "id >= 3"})).count == 2


@scenario()
async def insert_into_table_refuses_rows_of_another_schema(kit: Kit) -> None:
    """InsertIntoTable of rows whose schema is not the table's answers
    TableSchemaValidationError (20) and writes nothing."""
    import pyarrow as pa

    table, location = await _created(kit)
    await kit.refuses(
        errors.TableSchemaValidationError,
        functools.partial(kit.ns.insert_into_table, data=pa.table({"other": [1]})),
        {"id": table},
    )
    assert await kit.count_rows(location) == 3


@scenario()
async def insert_into_a_missing_table_is_not_found(kit: Kit) -> None:
    """InsertIntoTable of a table that does not exist answers TableNotFound (4)."""
    await kit.refuses(
        errors.TableNotFoundError,
        functools.partial(kit.ns.insert_into_table, data=_rows(1)),
        {"id": kit.table("missing")},
    )


@scenario()
async def count_table_rows_with_a_bad_filter_is_invalid_input(kit: Kit) -> None:
    """CountTableRows with a predicate that is not an expression answers InvalidInput (13)."""
    table, _ = await _created(kit)
    await kit.refuses(
        errors.InvalidInputError, kit.ns.count_table_rows, {"id": table, "predicate": "id >>> 1"}
    )


@scenario()
async def query_table_returns_the_rows_a_filter_selects(kit: Kit) -> None:
    """QueryTable with a filter and no vector answers exactly the matching rows, with
    the columns asked for."""
    table, _ = await _created(kit, rows=5)
    result = await kit.ns.query_table(
        {
            "id": table,
            "k": 10,
            "vector": None,
            "filter": "id >= 3",
            "columns": {"column_names": ["id"]},
        }
    )
    assert result.column_names == ["id"]
    assert sorted(result.column("id").to_pylist()) == [3, 4]


@scenario()
async def query_table_finds_the_k_nearest_neighbours(kit: Kit) -> None:
    """QueryTable with a vector answers the k rows nearest to it, nearest first."""
    table, _ = await _created(kit, rows=8)
    result = await kit.ns.query_table(
        {"id": table, "k": 3, "vector": {"single_vector": [4.2, 0.0]}, "vector_column": "vec"}
    )
    assert result.column("id").to_pylist() == [4, 5, 3]


@scenario()
async def merge_insert_update_and_delete_change_the_right_rows(kit: Kit) -> None:
    """MergeInsertIntoTable upserts on its key, UpdateTable and DeleteFromTable change
    exactly the rows their predicate selects."""
    table, location = await _created(kit, rows=3)
    await kit.ns.merge_insert_into_table(
        {
            "id": table,
            "on": ["id"],
            "when_matched_update_all": True,
            "when_not_matched_insert_all": True,
        },
        _rows(2, 2),
    )
    assert await kit.count_rows(location) == 4
    await kit.ns.update_table({"id": table, "predicate": "id = 0", "updates": [["id", "10"]]})
    await kit.ns.delete_from_table({"id": table, "predicate": "id = 1"})
    ids = await kit.ns.query_table({"id": table, "k": 10, "vector": None})
    assert sorted(ids.column("id").to_pylist()) == [2, 3, 10]


@scenario()
async def merge_insert_matches_every_key_column_and_inserts_only_when_asked(kit: Kit) -> None:
    """MergeInsertIntoTable with a two-column key (``on`` is a list since 0.12.0)
    matches a row only where both columns match; rows without a match are inserted
    only with ``when_not_matched_insert_all``, whose default is false."""
    import pyarrow as pa

    def rows(regions: list[str], ids: list[int], values: list[int]) -> Any:
        return pa.table(
            {
                "region": pa.array(regions, pa.string()),
                "id": pa.array(ids, pa.int64()),
                "value": pa.array(values, pa.int64()),
            }
        )

    table = kit.table("keyed")
    created = await kit.ns.create_table(
        {"id": table}, rows(["eu", "eu", "us"], [1, 2, 1], [10, 20, 30])
    )
    source = rows(["us", "us"], [1, 2], [31, 99])
    key = ["region", "id"]
    await kit.ns.merge_insert_into_table(
        {"id": table, "on": key, "when_matched_update_all": True}, source
    )
    assert isinstance(created.location, str)
    assert await kit.count_rows(created.location) == 3
    await kit.ns.merge_insert_into_table(
        {"id": table, "on": key, "when_not_matched_insert_all": True}, source
    )
    found = await kit.ns.query_table({"id": table, "k": 10, "vector": None})
    columns = (found.column(c).to_pylist() for c in ("region", "id", "value"))
    assert sorted(zip(*columns, strict=True)) == [
        ("eu", 1, 10),
        ("eu", 2, 20),
        ("us", 1, 31),
        ("us", 2, 99),
    ]


# == tags and versions =====================================================================


@scenario()
async def create_table_tag_names_a_version_once(kit: Kit) -> None:
    """CreateTableTag names a version; GetTableTagVersion answers it; creating the same
    tag again answers TableTagAlreadyExists (9); a tag never created answers
    TableTagNotFound (8)."""
    table, _ = await _created(kit)
    await kit.ns.create_table_tag({"id": table, "tag": "first", "version": 1})
    assert (await kit.ns.get_table_tag_version({"id": table, "tag": "first"})).version == 1
    await kit.refuses(
        errors.TableTagAlreadyExistsError,
        kit.ns.create_table_tag,
        {"id": table, "tag": "first", "version": 1},
    )
    await kit.refuses(
        errors.TableTagNotFoundError, kit.ns.get_table_tag_version, {"id": table, "tag": "nope"}
    )


@scenario()
async def describe_table_version_of_a_missing_version_is_not_found(kit: Kit) -> None:
    """DescribeTableVersion answers an existing version and TableVersionNotFound (11)
    for one the table never had."""
    table, _ = await _created(kit)
    described = await kit.ns.describe_table_version({"id": table, "version": 1})
    assert described.version.version == 1
    await kit.refuses(
        errors.TableVersionNotFoundError,
        kit.ns.describe_table_version,
        {"id": table, "version": 99},
    )


# == indices ===============================================================================


@scenario()
async def a_scalar_index_is_listed_and_a_missing_one_is_not_found(kit: Kit) -> None:
    """CreateTableScalarIndex builds an index that ListTableIndices lists and
    DescribeTableIndexStats describes; the stats of an index never built answer
    TableIndexNotFound (6)."""
    table, _ = await _created(kit, rows=4)
    await kit.ns.create_table_scalar_index(
        {"id": table, "column": "id", "index_type": "BTREE", "name": "by_id"}
    )
    listed = await kit.ns.list_table_indices({"id": table})
    assert [index.index_name for index in listed.indexes] == ["by_id"]
    stats = await kit.ns.describe_table_index_stats({"id": table, "index_name": "by_id"})
    assert stats.num_indexed_rows == 4
    await kit.refuses(
        errors.TableIndexNotFoundError,
        kit.ns.describe_table_index_stats,
        {"id": table, "index_name": "nope"},
    )
