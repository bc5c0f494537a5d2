"""Partial aggregation in the tasks for a materialized view's common shape
(``pipeline._pushdown``): which queries take it, and that their results are the plain
Spark plan's.

Servers: none. One local[2] SparkSession for the module; sources are real Lance tables
written by pylance into a ``dir`` namespace under a temp directory; the equality checks
compare the pushed-down DataFrame with the same bound query run by Spark itself, and the
refresh test reads the view back with pylance.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
from conftest import local_spark
from pyspark.sql import SparkSession

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.pipeline import JobControl, _pushdown
from lance_namespace_async.pipeline._pushdown import maybe_pushed_down, recognise
from lance_namespace_async.pipeline._views import bind_query, run_refresh

NS = ["shop"]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with local_spark("lance-namespace-async-pushdown") as session:
        yield session


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("pushdown") / "root")
    with lna.connect_sync("dir", {"root": path}) as facade:
        facade.create_namespace({"id": NS})
    return path


def _random_table(seed: int, rows: int) -> pa.Table:
    """Nulls, negatives, a column all null, ints of two widths, floats, strings."""
    rng = np.random.default_rng(seed)

    def nullable(values: np.ndarray, kind: pa.DataType, share: float = 0.2) -> pa.Array:
        return pa.array(values, kind, mask=rng.random(len(values)) < share)

    return pa.table(
        {
            "k": nullable(rng.integers(-3, 4, rows), pa.int64(), 0.1),
            "s": nullable(
                np.array(["a", "b", "é", "ab", ""])[rng.integers(0, 5, rows)], pa.string()
            ),
            "i": nullable(rng.integers(-1000, 1000, rows), pa.int32()),
            "l": nullable(rng.integers(-(2**40), 2**40, rows), pa.int64()),
            "d": nullable(rng.normal(0, 100, rows), pa.float64()),
            "f": nullable(rng.normal(0, 1, rows).astype(np.float32), pa.float32()),
            "b": nullable(rng.random(rows) < 0.5, pa.bool_()),
            "z": pa.nulls(rows, pa.int64()),
        }
    )


def _source(root: str, name: str, parts: list[pa.Table]) -> None:
    with lna.connect_sync("dir", {"root": root}) as facade:
        facade.create_table({"id": [*NS, name]}, parts[0])
        for part in parts[1:]:
            facade.insert_into_table({"id": [*NS, name]}, part)


def _bound(spark: SparkSession, root: str, query: str) -> tuple[Any, list[dict[str, Any]]]:
    facade = lna.connect_sync("dir", {"root": root})

    def latest(table_id: list[str]) -> int | None:
        return int(facade.describe_table({"id": table_id, "load_detailed_metadata": True}).version)

    return bind_query(
        spark,
        query,
        impl="dir",
        properties={"root": root},
        namespace=NS,
        latest_version=latest,
    )


def _rows(result: Any) -> list[tuple[Any, ...]]:
    """A DataFrame's rows, or a pyarrow table's (the driver merged the partials)."""
    if isinstance(result, pa.Table):
        rows = [tuple(row.values()) for row in result.to_pylist()]
    else:
        rows = [tuple(row) for row in result.collect()]
    return sorted(rows, key=lambda row: [(v is None, str(type(v)), v) for v in row])


def _schema(result: Any) -> list[tuple[str, Any]]:
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = result.schema if isinstance(result, pa.Table) else to_arrow_schema(result.schema)
    return [(f.name, f.type) for f in schema]


def _same(pushed: list[tuple[Any, ...]], plain: list[tuple[Any, ...]]) -> None:
    """Equal; floats within summation-order rounding (Spark's own order varies too)."""
    assert len(pushed) == len(plain)
    for mine, theirs in zip(pushed, plain, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            if isinstance(b, float) and b is not None and a is not None:
                assert type(a) is type(b)
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
            else:
                assert (type(a), a) == (type(b), b)


PUSHABLE = [
    "SELECT k, COUNT(*) AS n, SUM(i) AS si, SUM(l) AS sl, SUM(d) AS sd, AVG(i) AS ai,"
    " AVG(d) AS ad, MIN(i) AS mi, MAX(l) AS ml, MIN(s) AS ms, MAX(s) AS xs, COUNT(d) AS cd"
    " FROM src GROUP BY k",
    "SELECT s, b, COUNT(z) AS cz, SUM(z) AS sz, AVG(z) AS az, MIN(z) AS mz, SUM(f) AS sf"
    " FROM src GROUP BY s, b",
    "SELECT k AS key, SUM(i) AS total FROM src WHERE i > -500 AND s <> 'a' AND s = 'b' GROUP BY k",
    "SELECT k, COUNT(*) AS n, MAX(i) AS top FROM src WHERE 10 >= i AND k IS NOT NULL"
    " AND b = true AND s >= 'ab' GROUP BY k",
    "SELECT COUNT(*) AS n, SUM(i) AS si, AVG(d) AS ad, MIN(s) AS ms FROM src",
    "SELECT COUNT(*) AS n, SUM(i) AS si FROM src WHERE i > 5000",
    "SELECT k, SUM(i) AS si FROM src WHERE i > 5000 GROUP BY k",
    "SELECT k, COUNT(*) AS n, MIN(s) AS ms FROM src WHERE NOT b AND i <> 3 GROUP BY k",
    # Spark itself rewrites the comparison to ``i > 1`` (UnwrapCastInBinaryComparison)
    "SELECT k, COUNT(*) AS n FROM src WHERE i > 1.5 GROUP BY k",
]

#: pushable, with an ORDER BY of unique output columns: the order is compared too
ORDERED = [
    "SELECT k, SUM(i) AS si FROM src GROUP BY k ORDER BY k",
    "SELECT s, b, COUNT(*) AS n, MAX(l) AS ml FROM src GROUP BY s, b"
    " ORDER BY s DESC NULLS LAST, b ASC NULLS LAST",
    "SELECT k AS key, MIN(s) AS ms FROM src WHERE i > 0 GROUP BY k ORDER BY key DESC",
]

NOT_PUSHABLE = [
    "SELECT k, SUM(d) AS sd FROM src GROUP BY k ORDER BY sd",
    "SELECT k, COUNT(*) AS n FROM src GROUP BY k ORDER BY SUM(i)",
    "SELECT k, COUNT(*) AS n FROM src GROUP BY k SORT BY k",
    "SELECT k, SUM(i) + 1 AS si FROM src GROUP BY k",
    "SELECT k, COUNT(DISTINCT i) AS n FROM src GROUP BY k",
    "SELECT k, SUM(i) AS si FROM src GROUP BY k HAVING SUM(i) > 0",
    "SELECT k, MAX(d) AS md FROM src GROUP BY k",
    "SELECT k, COUNT(*) AS n FROM src WHERE i > 1 OR i < -1 GROUP BY k",
    "SELECT k, COUNT(*) AS n FROM src WHERE d > 0.5 GROUP BY k",
    "SELECT k, COUNT(*) AS n FROM src WHERE CAST(i AS STRING) = '3' GROUP BY k",
    "SELECT k % 2 AS g, COUNT(*) AS n FROM src GROUP BY k % 2",
    "SELECT k, SUM(i) FILTER (WHERE i > 0) AS si FROM src GROUP BY k",
    "SELECT i, s FROM src WHERE i > 3",
]


@pytest.fixture(scope="module")
def src(root: str) -> str:
    """Three fragments of random rows, plus one whose rows all fail ``i > 5000``."""
    _source(root, "src", [_random_table(seed, 400) for seed in range(3)])
    return "src"


@pytest.mark.parametrize("query", PUSHABLE)
def test_pushed_down_equals_spark(
    spark: SparkSession, root: str, src: str, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame, sources = _bound(spark, root, query)
    assert recognise(frame, ansi=True) is not None
    pushed = maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
    assert isinstance(pushed, pa.Table)  # few partials: merged in the driver
    assert _schema(pushed) == _schema(frame)
    _same(_rows(pushed), _rows(frame))
    # many partials: Spark merges them (the tasks stop early, the result is the same)
    monkeypatch.setattr(_pushdown, "DRIVER_ROWS", 0)
    merged_by_spark = maybe_pushed_down(
        spark, frame, sources, impl="dir", properties={"root": root}
    )
    assert not isinstance(merged_by_spark, pa.Table)
    assert merged_by_spark is not frame
    assert _schema(merged_by_spark) == _schema(frame)
    _same(_rows(merged_by_spark), _rows(frame))


@pytest.mark.parametrize("query", ORDERED)
def test_an_order_by_is_kept(
    spark: SparkSession, root: str, src: str, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Merged in the driver or by Spark, the rows come in the query's order."""
    frame, sources = _bound(spark, root, query)
    assert recognise(frame, ansi=True) is not None
    expected = [tuple(row) for row in frame.collect()]
    pushed = maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
    assert isinstance(pushed, pa.Table)
    assert [tuple(row.values()) for row in pushed.to_pylist()] == expected
    monkeypatch.setattr(_pushdown, "DRIVER_ROWS", 0)
    merged = maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
    assert [tuple(row) for row in merged.collect()] == expected


@pytest.mark.parametrize("query", NOT_PUSHABLE)
def test_other_shapes_take_the_plain_plan(
    spark: SparkSession, root: str, src: str, query: str
) -> None:
    frame, sources = _bound(spark, root, query)
    assert recognise(frame, ansi=True) is None
    assert maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root}) is frame


def test_random_data_property(spark: SparkSession, root: str) -> None:
    """Many seeds, uneven fragments (one empty of matches), the widest query."""
    query = PUSHABLE[0].replace("FROM src", "FROM prop") + ""
    for seed in range(10, 14):
        name = f"prop{seed}"
        rng = np.random.default_rng(seed)
        _source(
            root, name, [_random_table(seed * 7 + j, int(rng.integers(1, 300))) for j in range(3)]
        )
        frame, sources = _bound(spark, root, query.replace("FROM prop", f"FROM {name}"))
        pushed = maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
        assert pushed is not frame
        _same(_rows(pushed), _rows(frame))


def test_two_sources_take_the_plain_plan(spark: SparkSession, root: str, src: str) -> None:
    frame, sources = _bound(
        spark, root, "SELECT a.k, COUNT(*) AS n FROM src a JOIN src b ON a.k = b.k GROUP BY a.k"
    )
    assert maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root}) is frame


def test_integer_sum_overflow_fails_like_spark(
    spark: SparkSession, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ANSI mode (Spark 4's default): a bigint SUM past 2**63 fails the plain plan and
    the pushed-down one; without ANSI mode integer SUM is not pushed down at all."""
    big = pa.table({"k": pa.array([1, 1, 1], pa.int64()), "l": pa.array([2**62] * 3, pa.int64())})
    _source(root, "big", [big])
    query = "SELECT k, SUM(l) AS sl FROM big GROUP BY k"
    frame, sources = _bound(spark, root, query)
    with pytest.raises(Exception, match=r"(?i)overflow"):
        frame.collect()
    with pytest.raises(OverflowError, match=r"(?i)overflow"):  # merged in the driver
        maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
    monkeypatch.setattr(_pushdown, "DRIVER_ROWS", 0)  # merged by Spark
    pushed = maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
    with pytest.raises(Exception, match=r"(?i)overflow"):
        pushed.collect()
    assert recognise(frame, ansi=False) is None


def test_empty_source(spark: SparkSession, root: str) -> None:
    """No rows: no groups, and a global aggregate's one row (count 0, sums null)."""
    empty = _random_table(1, 3).slice(0, 0)
    _source(root, "empty", [empty])
    for query in (
        "SELECT k, COUNT(*) AS n, SUM(i) AS si FROM empty GROUP BY k",
        "SELECT COUNT(*) AS n, COUNT(i) AS ci, SUM(i) AS si, AVG(d) AS ad, MAX(s) AS ms FROM empty",
    ):
        frame, sources = _bound(spark, root, query)
        pushed = maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
        assert pushed is not frame
        _same(_rows(pushed), _rows(frame))


def test_refresh_commits_the_pushed_down_result(spark: SparkSession, root: str) -> None:
    """A view of the shape, refreshed by the job body, holds the plain query's rows."""
    rows = pa.table(
        {
            "k": pa.array([1, 2, 1, 3, None], pa.int64()),
            "v": pa.array([1.5, 2.0, None, 4.0, 5.0]),
            "tag": pa.array(["x", "y", "z", None, "w"]),
        }
    )
    _source(root, "events", [rows, rows])
    query = "SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(tag) AS top FROM events GROUP BY k"
    with lna.connect_sync("dir", {"root": root}) as facade:
        facade.create_materialized_view(
            {
                "id": [*NS, "agg"],
                "kind": "query",
                "source_query": query,
                "output_schema": "k BIGINT, n BIGINT, total DOUBLE, top STRING",
                "with_no_data": True,
            }
        )
        control = JobControl(
            job_id=f"lna-job-{uuid.uuid4().hex}", spark=spark, impl="dir", properties={"root": root}
        )
        try:
            version = run_refresh(control, {"id": [*NS, "agg"]})
        finally:
            control.close()
        location = str(facade.describe_table({"id": [*NS, "agg"]}).location)
    view = lance.dataset(location, version=version).to_table().sort_by("k").to_pylist()
    assert view == [
        {"k": 1, "n": 4, "total": 3.0, "top": "z"},
        {"k": 2, "n": 2, "total": 4.0, "top": "y"},
        {"k": 3, "n": 2, "total": 8.0, "top": None},
        {"k": None, "n": 2, "total": 10.0, "top": "w"},
    ]


def test_a_second_refresh_reuses_the_analysed_plan(
    spark: SparkSession, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan analysed by the first refresh serves the next ones (nothing bound again)
    while the source keeps its schema; a new schema is analysed again."""
    from lance_namespace_async.pipeline import _views

    first = pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([1.0, 2.0])})
    _source(root, "again", [first])
    query = "SELECT k, COUNT(*) AS n, SUM(v) AS total FROM again WHERE k > 0 GROUP BY k"
    view = [*NS, "again_view"]
    with lna.connect_sync("dir", {"root": root}) as facade:
        facade.create_materialized_view(
            {
                "id": view,
                "kind": "query",
                "source_query": query,
                "with_no_data": True,
                "output_schema": "k BIGINT, n BIGINT, total DOUBLE",
            }
        )

        def refresh() -> list[dict[str, Any]]:
            control = JobControl(
                job_id=f"lna-job-{uuid.uuid4().hex}",
                spark=spark,
                impl="dir",
                properties={"root": root},
            )
            try:
                version = run_refresh(control, {"id": view})
            finally:
                control.close()
            location = str(facade.describe_table({"id": view}).location)
            rows: list[dict[str, Any]] = (
                lance.dataset(location, version=version).to_table().sort_by("k").to_pylist()
            )
            return rows

        assert refresh() == [{"k": 1, "n": 1, "total": 1.0}, {"k": 2, "n": 1, "total": 2.0}]
        bound: list[str] = []
        real_bind = _views.bind_query

        def counting_bind(*args: Any, **kwargs: Any) -> Any:
            bound.append(str(args[1]))
            return real_bind(*args, **kwargs)

        monkeypatch.setattr(_views, "bind_query", counting_bind)
        facade.insert_into_table({"id": [*NS, "again"]}, first)
        assert refresh() == [{"k": 1, "n": 2, "total": 2.0}, {"k": 2, "n": 2, "total": 4.0}]
        assert bound == []  # remembered: same query, same source schema
        # the view records the source version it read, as a bound refresh does
        definition = _views.view_definition(
            lance.dataset(str(facade.describe_table({"id": view}).location)).schema.metadata
        )
        assert definition is not None
        latest = facade.describe_table(
            {"id": [*NS, "again"], "load_detailed_metadata": True}
        ).version
        assert json.loads(definition[_views.SOURCES_KEY]) == [
            {"id": [*NS, "again"], "version": latest}
        ]
        # a column added to the source: another schema, so the query is analysed again
        facade.alter_table_add_columns(
            {"id": [*NS, "again"], "new_columns": [{"name": "w", "expression": "k * 2"}]}
        )
        assert refresh() == [{"k": 1, "n": 2, "total": 2.0}, {"k": 2, "n": 2, "total": 4.0}]
        assert bound == [query]


def test_partials_too_large_for_the_driver_are_merged_by_spark(
    spark: SparkSession, root: str, src: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few rows but many bytes (long strings in MIN/MAX): the tasks stop, Spark merges."""
    monkeypatch.setattr(_pushdown, "DRIVER_BYTES", 1)
    frame, sources = _bound(spark, root, PUSHABLE[0])
    pushed = maybe_pushed_down(spark, frame, sources, impl="dir", properties={"root": root})
    assert not isinstance(pushed, pa.Table)
    assert pushed is not frame
    _same(_rows(pushed), _rows(frame))


def test_a_refresh_failing_in_the_pushed_down_partials_is_a_typed_error(
    spark: SparkSession, root: str
) -> None:
    """The driver's merge fails (bigint overflow) before anything is written: the job
    reports InternalError naming the view, as a failure of the general path does, and
    the view keeps its version."""
    big = pa.table({"k": pa.array([1, 1], pa.int64()), "l": pa.array([2**62] * 2, pa.int64())})
    _source(root, "big2", [big])
    view = [*NS, "big2_view"]
    with lna.connect_sync("dir", {"root": root}) as facade:
        facade.create_materialized_view(
            {
                "id": view,
                "kind": "query",
                "source_query": "SELECT k, SUM(l) AS sl FROM big2 GROUP BY k",
                "output_schema": "k BIGINT, sl BIGINT",
                "with_no_data": True,
            }
        )
        before = facade.describe_table({"id": view, "load_detailed_metadata": True}).version
        control = JobControl(
            job_id=f"lna-job-{uuid.uuid4().hex}", spark=spark, impl="dir", properties={"root": root}
        )
        try:
            with pytest.raises(errors.InternalError, match=r"big2_view.*(?i:overflow)"):
                run_refresh(control, {"id": view})
        finally:
            control.close()
        after = facade.describe_table({"id": view, "load_detailed_metadata": True}).version
    assert after == before
