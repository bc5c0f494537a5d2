"""A view's ``source_query`` reads the namespace's tables and nothing else (issue 32).

The query is a client's and runs on the operator's Spark cluster, whose driver holds the
backend's credentials and sees the server's files (``pipeline/_sql_guard.py``). Each
attack here is refused with InvalidInput before anything runs or is written.

Servers: a local SparkSession (``local[1]``, this module's); the dir backend on a
temporary directory with a real Lance table written through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from conftest import local_spark
from pyspark.sql import SparkSession

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.pipeline._sql_guard import MAX_QUERY_CHARS
from lance_namespace_async.pipeline._views import bind_query

CANARY = "lna-canary-9d1f"


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with local_spark("lance-namespace-async-view-attacks", "local[1]") as session:
        yield session


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("views")
    with lna.connect_sync("dir", {"root": str(place)}) as ns:
        ns.create_namespace({"id": ["shop"]})
        ns.create_table({"id": ["shop", "orders"]}, pa.table({"k": ["a", "b"], "v": [1, 2]}))
    (place / "secret.txt").write_text(CANARY)
    return place


def bound(spark: SparkSession, root: Path, query: str) -> list[str]:
    """The query analysed as a view's would be: the names of its columns."""
    frame, _ = bind_query(
        spark,
        query,
        impl="dir",
        properties={"root": str(root)},
        namespace=["shop"],
        latest_version=lambda table: 1,
    )
    return list(frame.columns)


def test_a_plain_query_with_a_cte_a_subquery_and_a_join_is_analysed(
    spark: SparkSession, root: Path
) -> None:
    query = (
        "WITH c AS (SELECT * FROM orders) "
        "SELECT c.k, SUM(o.v) AS total FROM c JOIN orders o ON c.k = o.k "
        "WHERE o.v >= (SELECT MIN(v) FROM orders) GROUP BY c.k"
    )
    assert bound(spark, root, query) == ["k", "total"]


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        # Java methods: the driver's environment (credentials) into the view
        ("SELECT java_method('java.lang.System', 'getenv', 'HOME') AS e", "reflect"),
        ("SELECT reflect('java.lang.System', 'getenv', 'HOME') AS e FROM orders", "reflect"),
        (
            "WITH c AS (SELECT try_reflect('java.lang.System', 'getenv', 'HOME') AS e) "
            "SELECT * FROM c",
            "reflect",
        ),
        (
            "SELECT k FROM orders WHERE v IN "
            "(SELECT length(reflect('java.lang.System', 'getenv', 'HOME')) FROM orders)",
            "reflect",
        ),
        # a program run on the cluster
        ("SELECT TRANSFORM(k) USING 'cat' AS (x) FROM orders", "runs a program"),
        # commands run the moment Spark parses them
        ("SET spark.sql.runSQLOnFiles=true", "not a command"),
        ("ADD JAR /tmp/x.jar", "not a command"),
        ("CREATE TEMPORARY FUNCTION f AS 'java.lang.String'", "not a command"),
        ("CACHE TABLE orders", "not a command"),
        ("CREATE TABLE t2 AS SELECT * FROM orders", "not a command"),
        # the driver's files by path
        ("SELECT * FROM text.`{root}/secret.txt`", "table"),
        ("SELECT * FROM csv.`{root}/secret.txt`", "table"),
        # two statements
        ("SELECT 1 AS x; SELECT 2 AS y", "not Spark SQL"),
    ],
)
def test_what_reaches_outside_the_tables_is_refused(
    spark: SparkSession, root: Path, query: str, refused: str
) -> None:
    with pytest.raises(errors.InvalidInputError) as caught:
        bound(spark, root, query.format(root=root))
    assert refused in str(caught.value)
    assert CANARY not in str(caught.value)


def test_a_query_past_its_bound_is_refused_before_spark_parses_it(
    spark: SparkSession, root: Path
) -> None:
    query = "SELECT k FROM orders WHERE " + " OR ".join(["v = 1"] * (MAX_QUERY_CHARS // 8))
    with pytest.raises(errors.InvalidInputError, match="longer than"):
        bound(spark, root, query)


def test_create_materialized_view_refuses_the_attack_and_writes_nothing(
    spark: SparkSession, root: Path
) -> None:
    # the 'active' cluster: this module's session analyses, as a Spark driver's would
    properties = {"root": str(root), "spark_cluster.default": "active"}
    with lna.connect_sync("dir", properties) as ns:
        before = ns.list_tables({"id": ["shop"]}).tables
        with pytest.raises(errors.InvalidInputError, match="reflect"):
            ns.create_materialized_view(
                {
                    "id": ["shop", "leak"],
                    "kind": "query",
                    "source_query": "SELECT java_method('java.lang.System', 'getenv', 'PATH') AS e",
                    "output_schema": "e STRING",
                    "with_no_data": True,
                }
            )
        assert ns.list_tables({"id": ["shop"]}).tables == before
