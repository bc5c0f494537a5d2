"""One LanceDB session, written once, for every namespace LanceDB can be pointed at.

:func:`observe` drives a real ``lancedb`` connection through the table life a LanceDB
user goes through (create, add, vector and filtered search, update, delete,
merge_insert, vector and scalar indices, versions, tags, add/drop columns, drop) and
returns what LanceDB reported at each step, as plain, ordered values. Two connections
that behave the same give equal observations, so a backend is checked by comparing its
observations with those of LanceDB over its own ``dir`` namespace on the same data.

Values that legitimately differ between two runs (timestamps, index UUIDs, file paths)
are left out; vector searches are exact (IVF_FLAT probed over every partition, distances
rounded) so that the answers do not depend on k-means' random start.
"""

from __future__ import annotations

from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import BTree, IvfFlat

ROWS = 300
DIMENSIONS = 8
#: what the scenario's searches ask for
QUERY = [0.5] * DIMENSIONS
LIMIT = 5
#: how many queries :func:`observe` runs (each a QueryTable call when it is pushed down)
QUERIES = 10


def rows(start: int, count: int, seed: int) -> pa.Table:
    """``count`` rows with ids from ``start``: deterministic vectors and categories."""
    vectors = np.random.default_rng(seed).random((count, DIMENSIONS), dtype=np.float32)
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "category": pa.array(["abc"[i % 3] for i in ids]),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.ravel(), pa.float32()), DIMENSIONS
            ),
        }
    )


def _hits(table: Any, *, where: str | None = None, prefilter: bool = True) -> list[Any]:
    query = table.search(QUERY, vector_column_name="vector").limit(LIMIT)
    if where is not None:
        query = query.where(where, prefilter=prefilter)
    answer = query.select(["id", "category", "_distance"]).to_arrow()
    return sorted(
        zip(
            answer.column("id").to_pylist(),
            answer.column("category").to_pylist(),
            [round(d, 4) for d in answer.column("_distance").to_pylist()],
            strict=True,
        ),
        key=lambda hit: (hit[2], hit[0]),
    )


def _filtered(table: Any, where: str) -> list[Any]:
    answer = table.search().where(where).select(["id", "category"]).limit(1000).to_arrow()
    return sorted(
        zip(answer.column("id").to_pylist(), answer.column("category").to_pylist(), strict=True)
    )


def _column(table: Any, name: str) -> list[Any]:
    # a query with a limit, not to_arrow(): under QueryTable pushdown LanceDB 0.40 sends
    # a plain scan with k=10, and every server (pylance's RestAdapter too) answers 10 rows
    return sorted(table.search().select([name]).limit(1000).to_arrow().column(name).to_pylist())


def _indices(table: Any) -> list[tuple[str, str, list[str]]]:
    return sorted((i.name, str(i.index_type), list(i.columns)) for i in table.list_indices())


def observe(db: lancedb.DBConnection, namespace: list[str]) -> dict[str, Any]:
    """Run the scenario in ``namespace`` (which must exist) and return what LanceDB saw."""
    seen: dict[str, Any] = {}
    table = db.create_table("items", rows(0, ROWS, seed=1), namespace_path=namespace)
    seen["created"] = (table.count_rows(), table.version, str(table.schema))
    seen["listed"] = list(db.list_tables(namespace_path=namespace).tables)

    table.add(rows(ROWS, 50, seed=2))
    seen["added"] = (table.count_rows(), table.version)

    # reopened by name: what a second process sees
    table = db.open_table("items", namespace_path=namespace)
    seen["search"] = _hits(table)
    seen["search_where"] = _hits(table, where="category = 'b'")
    seen["search_postfilter"] = _hits(table, where="id >= 100", prefilter=False)
    seen["filter"] = _filtered(table, "id < 20 AND category != 'a'")
    seen["count_where"] = table.count_rows("category = 'c'")

    table.update(where="id < 10", values={"category": "z"})
    seen["updated"] = (_filtered(table, "category = 'z'"), table.version)
    table.delete("id >= 330")
    seen["deleted"] = (table.count_rows(), table.version)

    merged = (
        table.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(rows(320, 20, seed=3))
    )
    seen["merged"] = (
        (merged.num_inserted_rows, merged.num_updated_rows, merged.num_deleted_rows),
        table.count_rows(),
        _hits(table, where="id >= 320"),
    )

    table.create_index("vector", config=IvfFlat(distance_type="l2", num_partitions=2))
    table.create_index("id", config=BTree())
    seen["indices"] = _indices(table)
    # every partition probed: the indexed search is exact, so it equals the flat one
    probed = table.search(QUERY).nprobes(2).limit(LIMIT).select(["id", "_distance"]).to_arrow()
    seen["indexed_search"] = sorted(probed.column("id").to_pylist())
    seen["indexed_filter"] = _filtered(table, "id IN (5, 6, 7, 333)")

    versions = [v["version"] for v in table.list_versions()]
    seen["versions"] = versions
    table.tags.create("before-columns", table.version)
    table.tags.create("first", 1)
    table.tags.update("first", 2)
    seen["tags"] = sorted((name, tag["version"]) for name, tag in table.tags.list().items())
    seen["tag_version"] = table.tags.get_version("first")
    table.tags.delete("before-columns")
    seen["tags_left"] = sorted(table.tags.list())

    table.add_columns({"double_id": "id * 2"})
    seen["added_column"] = (
        table.schema.names,
        _column(table, "double_id")[:5],
    )
    table.drop_columns(["category"])
    seen["dropped_column"] = (table.schema.names, table.version)

    table.checkout(2)
    seen["checkout"] = (table.version, table.count_rows(), table.schema.names)
    table.checkout("first")
    seen["checkout_tag"] = (table.version, table.count_rows())
    table.checkout_latest()
    seen["latest"] = table.version
    table.restore(3)
    seen["restored"] = (
        table.version,
        table.count_rows(),
        _column(table, "id")[:3],
        table.schema.names,
    )

    db.drop_table("items", namespace_path=namespace)
    seen["after_drop"] = list(db.list_tables(namespace_path=namespace).tables)
    return seen
