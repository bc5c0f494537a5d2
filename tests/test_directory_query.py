"""QueryTable of the directory backend on the table itself (``directory/_query``): for every
field of the request, the same rows (schema, values, order) or the same typed error as
pylance's own operation, and nothing written.

No server: the directory backend over real pylance on real temporary directories. Each
request is asked twice on the same root: of a backend that answers on the table
(``ns``, with ``SETTLED_NS`` 0 so its manifest copy is used at once) and of one without
the manifest copy (``plain``), whose every QueryTable is pylance's Rust
``DirectoryNamespace.query_table``. Calls the first backend handed to pylance are counted
by wrapping the function that hands them over (it still runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import disk_state

from lance_namespace_async import errors
from lance_namespace_async.directory import DirectoryNamespace, _manifest_snapshot

DIM = 8
TABLE = ["a", "t"]


@pytest.fixture(autouse=True)
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_manifest_snapshot, "SETTLED_NS", 0)


def vectors_table(rows: int, start: int = 0, column: str = "vec") -> pa.Table:
    values = np.random.default_rng(start).random((rows, DIM), dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(np.arange(start, start + rows, dtype=np.int64)),
            column: pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), DIM),
            "name": [f"row-{i}" for i in range(start, start + rows)],
        }
    )


async def make_table(ns: DirectoryNamespace, column: str = "vec") -> None:
    """Three versions, three fragments: 40, then 40 and 40 more rows."""
    await ns.create_namespace({"id": ["a"], "mode": "exist_ok"})
    await ns.create_table({"id": TABLE}, vectors_table(40, column=column))
    for start in (40, 80):
        await ns.insert_into_table({"id": TABLE}, vectors_table(40, start, column=column))


async def answer(ns: DirectoryNamespace, request: dict[str, Any]) -> Any:
    """The rows (a pyarrow.Table: schema, values and order compared) or the typed error
    (of table ``TABLE`` unless the request names another)."""
    try:
        return await ns.query_table({"id": TABLE, **request})
    except errors.LanceNamespaceError as exc:
        return (type(exc).__name__, exc.code)


def same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, pa.Table) and isinstance(theirs, pa.Table):
        return ours.schema.equals(theirs.schema, check_metadata=True) and ours.equals(theirs)
    return bool(ours == theirs)


async def assert_answered_on_the_table(
    ns: DirectoryNamespace, plain: DirectoryNamespace, handed: list[str], request: dict[str, Any]
) -> None:
    """``ns`` answers ``request`` without pylance, with the rows pylance's operation gives."""
    ours = await answer(ns, request)
    assert handed == [], request
    theirs = await answer(plain, request)  # pylance's operation (counted: forgotten)
    handed.clear()
    assert isinstance(theirs, pa.Table), (request, theirs)
    assert same(ours, theirs), (request, ours, theirs)


QUERY = [0.25] * DIM

#: requests the direct path answers itself, one field (or a combination) at a time
ANSWERED_ON_THE_TABLE: list[dict[str, Any]] = [
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec"},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "offset": 0},
    {"k": 0, "vector": {"single_vector": QUERY}, "vector_column": "vec"},
    {"k": 3, "vector": {"single_vector": [1, 0, 0, 0, 0, 0, 0, 0]}, "vector_column": "vec"},
    {"k": 4, "vector": {"single_vector": QUERY}, "vector_column": "vec", "distance_type": "cosine"},
    {"k": 4, "vector": {"single_vector": QUERY}, "vector_column": "vec", "distance_type": "DOT"},
    {"k": 4, "vector": {"single_vector": QUERY}, "vector_column": "vec", "distance_type": "l2"},
    {"k": 4, "vector": {"single_vector": QUERY}, "vector_column": "vec",
     "distance_type": "euclidean"},
    {"k": 6, "vector": {"single_vector": QUERY}, "vector_column": "vec", "filter": "id % 2 = 0"},
    {"k": 6, "vector": {"single_vector": QUERY}, "vector_column": "vec", "filter": "id > 100",
     "prefilter": True},
    {"k": 6, "vector": {"single_vector": QUERY}, "vector_column": "vec", "filter": "id > 100",
     "prefilter": False},
    {"k": 6, "vector": {"single_vector": QUERY}, "vector_column": "vec", "filter": ""},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec",
     "columns": {"column_names": ["id"]}},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec",
     "columns": {"column_names": ["name", "id"]}},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec",
     "columns": {"column_names": []}},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "with_row_id": True},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "with_row_id": False},
    {"k": 8, "vector": {"single_vector": QUERY}, "vector_column": "vec", "offset": 3},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "version": 1},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "version": 2},
    {"k": 20, "vector": {"single_vector": QUERY}, "vector_column": "vec",
     "lower_bound": 0.3, "upper_bound": 0.6},
    {"k": 20, "vector": {"single_vector": QUERY}, "vector_column": "vec", "upper_bound": 0.5},
    {"k": 20, "vector": {"single_vector": QUERY}, "vector_column": "vec", "lower_bound": 0.9},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "refine_factor": 2},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "nprobes": 3},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "ef": 40},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec",
     "bypass_vector_index": True},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec",
     "bypass_vector_index": False},
    {"k": 5, "vector": {"single_vector": QUERY}, "vector_column": "vec", "fast_search": False},
    # plain scans: k is the limit (k <= 0: none, and the offset is then ignored, as pylance)
    {"k": 7, "vector": None},
    {"k": 7, "vector": None, "offset": 50},
    {"k": 0, "vector": None, "filter": "id >= 110"},
    {"k": 0, "vector": None, "offset": 5, "filter": "id < 10"},
    {"k": 4, "vector": {"single_vector": []}, "columns": {"column_names": ["name"]}},
    {"k": 3, "vector": None, "with_row_id": True, "prefilter": True, "version": 1},
    {"k": 10, "vector": None, "filter": "name LIKE 'row-1%'", "columns": {"column_names": ["id"]}},
]  # fmt: skip


async def test_every_mapped_field_answers_as_pylances_operation(
    ns: DirectoryNamespace,
    plain: DirectoryNamespace,
    handed_to_pylance: list[str],
    root: Path,
) -> None:
    await make_table(ns)
    before = disk_state(root)
    for request in ANSWERED_ON_THE_TABLE:
        await assert_answered_on_the_table(ns, plain, handed_to_pylance, request)
    assert disk_state(root) == before  # a query writes nothing


async def test_the_default_vector_column_is_pylances(
    ns: DirectoryNamespace, plain: DirectoryNamespace, handed_to_pylance: list[str]
) -> None:
    await make_table(ns, column="vector")
    request = {"k": 3, "vector": {"single_vector": QUERY}}
    ours = await answer(ns, request)
    assert handed_to_pylance == []
    assert isinstance(ours, pa.Table)
    assert ours.num_rows == 3
    assert same(ours, await answer(plain, request))


async def test_what_is_not_mapped_or_fails_is_pylances_to_answer(
    ns: DirectoryNamespace,
    plain: DirectoryNamespace,
    handed_to_pylance: list[str],
    root: Path,
) -> None:
    await make_table(ns)
    vector = {"single_vector": QUERY}
    requests: list[dict[str, Any]] = [
        # not mapped: pylance answers (rows or its error)
        {"k": 3, "vector": {"multi_vector": [QUERY, QUERY]}, "vector_column": "vec"},
        {"k": 3, "vector": None, "columns": {"column_aliases": {"double": "id * 2"}}},
        {"k": 3, "vector": vector, "vector_column": "vec", "distance_type": "manhattan"},
        {"k": 3, "vector": vector, "vector_column": "vec", "nprobes": 0},
        {"k": 3, "vector": vector, "vector_column": "vec", "refine_factor": 0},
        # failing here: bad input, reported in pylance's words
        {"k": 3, "vector": vector},  # no column "vector"
        {"k": 3, "vector": vector, "vector_column": "VEC"},
        {"k": 3, "vector": vector, "vector_column": "name"},
        {"k": 3, "vector": {"single_vector": [0.5, 0.5]}, "vector_column": "vec"},
        {"k": 3, "vector": {"single_vector": [1e300, *QUERY[1:]]}, "vector_column": "vec"},
        {"k": 3, "vector": {"single_vector": [10**40, *QUERY[1:]]}, "vector_column": "vec"},
        {"k": 3, "vector": None, "filter": "no_such_column > 1"},
        {"k": 3, "vector": None, "filter": "id >"},
        {"k": 3, "vector": None, "columns": {"column_names": ["ghost"]}},
        {"k": 3, "vector": vector, "vector_column": "vec", "version": 99},
        {"k": 3, "vector": vector, "vector_column": "vec", "version": 0},
    ]
    before = disk_state(root)
    for request in requests:
        handed_to_pylance.clear()
        ours = await answer(ns, request)
        assert handed_to_pylance == ["QueryTable"], request
        assert same(ours, await answer(plain, request)), (request, ours)
    assert disk_state(root) == before
    # refused before any table is read, on both (InvalidInput, 13)
    for request in (
        {"k": -3, "vector": vector, "vector_column": "vec"},
        {"k": 3, "vector": None, "offset": -1},
        {"k": 3, "vector": vector, "vector_column": "vec", "version": -1},
    ):
        handed_to_pylance.clear()
        assert await answer(ns, request) == ("InvalidInputError", 13), request
        assert handed_to_pylance == []
        assert await answer(plain, request) == ("InvalidInputError", 13)
    # bad input stays a typed error: InvalidInput (13) where pylance says so
    bad_filter = await answer(ns, {"k": 3, "vector": None, "filter": "id >"})
    assert bad_filter == ("InvalidInputError", 13)
    for table in (["a", "missing"], ["ghost", "t"]):
        with pytest.raises((errors.TableNotFoundError, errors.NamespaceNotFoundError)):
            await ns.query_table({"id": table, "k": 1, "vector": None})
    # a declared table (no data yet) and a table at the root are pylance's to answer
    await ns.declare_table({"id": ["a", "declared"]})
    await ns.create_table({"id": ["rooted"]}, vectors_table(3))
    for table in (["a", "declared"], ["rooted"]):
        request = {"id": table, "k": 2, "vector": None}
        handed_to_pylance.clear()
        ours = await answer(ns, request)
        assert handed_to_pylance == ["QueryTable"], table
        theirs = await answer(plain, request)
        assert same(ours, theirs), table


async def test_searches_through_a_vector_index_are_pylances(
    ns: DirectoryNamespace, plain: DirectoryNamespace, handed_to_pylance: list[str]
) -> None:
    # nprobes, refine_factor, fast_search and bypass_vector_index change the answer only
    # with an index: an IVF_FLAT of 4 partitions over the first 120 rows, 40 rows unindexed
    await make_table(ns)
    await ns.create_table_index(
        {"id": TABLE, "column": "vec", "index_type": "IVF_FLAT", "num_partitions": 4}
    )
    await ns.insert_into_table({"id": TABLE}, vectors_table(40, 120))
    handed_to_pylance.clear()
    base = {"k": 10, "vector": {"single_vector": QUERY}, "vector_column": "vec"}
    requests: list[dict[str, Any]] = [
        base,
        {**base, "nprobes": 1},
        {**base, "nprobes": 1, "refine_factor": 3},
        {**base, "fast_search": True},
        {**base, "fast_search": True, "nprobes": 1},
        {**base, "bypass_vector_index": True},
        {**base, "nprobes": 2, "filter": "id > 60", "prefilter": True},
        {**base, "nprobes": 2, "filter": "id > 60", "prefilter": False},
        {**base, "distance_type": "cosine", "nprobes": 1},
    ]
    for request in requests:
        await assert_answered_on_the_table(ns, plain, handed_to_pylance, request)
