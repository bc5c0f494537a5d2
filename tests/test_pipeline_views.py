"""Materialized views (issue 32): CreateMaterializedView and the refresh job on Spark.

Servers: a local SparkSession (``local[2]``, this module's, as tests/test_spark.py starts
it); the dir backend on a temporary directory; the Iceberg project's REST reference
server (conftest ``iceberg_reference``) with ``managed_by=impl``, so the view's commits go
through the catalog (pyiceberg reads the catalog independently); Glue on moto
(tests/glue_fixtures.py). Sources are real Lance tables written by pylance; views are
read back by pylance through the namespace and by our Spark reader.

The refresh job's body (``run_refresh``) runs here under a ``JobControl`` the test
builds, the way the job runner calls it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from conftest import local_spark
from pyspark.sql import SparkSession

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async import spark as lna_spark
from lance_namespace_async.pipeline import JobControl
from lance_namespace_async.pipeline._views import (
    KIND_KEY,
    QUERY_KEY,
    SOURCES_KEY,
    run_refresh,
)

OUTPUT = json.dumps(
    {
        "fields": [
            {"name": "k", "type": {"type": "utf8"}, "nullable": True},
            {"name": "total", "type": {"type": "int64"}, "nullable": True},
        ]
    }
)
QUERY = "SELECT k, SUM(v) AS total FROM orders GROUP BY k"


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with local_spark("lance-namespace-async-views") as session:
        yield session


class Backend:
    """A backend under test: its impl, properties, and the namespace the test works in."""

    def __init__(self, impl: str, properties: dict[str, str], namespace: list[str]) -> None:
        self.impl, self.properties, self.namespace = impl, properties, namespace

    def facade(self) -> lna.SyncLanceNamespace:
        return lna.connect_sync(self.impl, self.properties)

    def refresh(self, spark: SparkSession, view: list[str], **request: Any) -> int:
        control = JobControl(
            job_id=f"lna-job-{uuid.uuid4().hex}",
            spark=spark,
            impl=self.impl,
            properties=self.properties,
        )
        try:
            return run_refresh(control, {"id": view, **request})
        finally:
            control.close()


@pytest.fixture
def dir_backend(tmp_path: Path) -> Backend:
    backend = Backend("dir", {"root": str(tmp_path / "root")}, ["shop"])
    with backend.facade() as facade:
        facade.create_namespace({"id": backend.namespace})
    return backend


@pytest.fixture
def iceberg_backend(iceberg_reference: Any, tmp_path: Path) -> Backend:
    from iceberg_real_server import unique_name

    place = unique_name("views")
    iceberg_reference.rest_client().create_namespace(place)
    properties = iceberg_reference.properties(root=str(tmp_path / "root"), managed_by="impl")
    # this module's SparkSession analyses the views' queries here (the other backends'
    # go to the default cluster's driver process)
    properties["spark_cluster.default"] = "active"
    return Backend("iceberg", properties, ["wh", place])


@pytest.fixture
def glue_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    from glue_fixtures import REGION, moto_glue, use_fake_aws_env

    use_fake_aws_env(monkeypatch)
    with moto_glue() as endpoint:
        properties = {
            "endpoint": endpoint,
            "region": REGION,
            "root": str(tmp_path / "root"),
            "child_catalogs": "false",
            # Spark's Python workers do not see this test's environment: the keys go along
            "access_key_id": "testing",
            "secret_access_key": "testing",
        }
        backend = Backend("glue", properties, ["shop"])
        with backend.facade() as facade:
            facade.create_namespace({"id": backend.namespace})
        yield backend


def orders(*rows: tuple[str, int]) -> pa.Table:
    return pa.table(
        {"k": pa.array([r[0] for r in rows], pa.utf8()), "v": pa.array([r[1] for r in rows])}
    )


def totals(table: pa.Table) -> dict[str, int]:
    return dict(zip(table.column("k").to_pylist(), table.column("total").to_pylist(), strict=True))


def definition(facade: lna.SyncLanceNamespace, view: list[str]) -> dict[str, str]:
    described = facade.describe_table({"id": view, "load_detailed_metadata": True})
    metadata = described.schema.metadata
    return dict(metadata.additional_properties if metadata is not None else {})


def create_view(facade: lna.SyncLanceNamespace, view: list[str], **extra: Any) -> Any:
    request = {
        "id": view,
        "kind": "query",
        "source_query": QUERY,
        "output_schema": OUTPUT,
        "with_no_data": True,
        **extra,
    }
    return facade.create_materialized_view(request)


@pytest.mark.parametrize("which", ["dir_backend", "iceberg_backend", "glue_backend"])
def test_a_view_refreshed_twice_after_inserts_reads_the_sources_latest_rows(
    which: str, request: pytest.FixtureRequest, spark: SparkSession
) -> None:
    backend: Backend = request.getfixturevalue(which)
    source, view = [*backend.namespace, "orders"], [*backend.namespace, "by_k"]
    with backend.facade() as facade:
        facade.create_table({"id": source}, orders(("a", 1), ("b", 2), ("a", 3)))
        created = create_view(facade, view)
        assert created.job_id is None  # with_no_data: nothing to compute yet
        empty = lance.dataset(namespace_client=facade, table_id=view)
        assert (empty.count_rows(), empty.schema.names) == (0, ["k", "total"])
        recorded = definition(facade, view)
        assert recorded[KIND_KEY] == "query"
        assert recorded[QUERY_KEY] == QUERY
        assert json.loads(recorded[SOURCES_KEY]) == [{"id": source, "version": None}]

        expected = {"a": 4, "b": 2}
        for round_, extra in enumerate([[("c", 5)], [("a", 10), ("b", -2)]]):
            before = lance.dataset(namespace_client=facade, table_id=view).version
            version = backend.refresh(spark, view)
            assert version == before + 1  # one commit per refresh
            read = lance.dataset(namespace_client=facade, table_id=view)
            assert (read.version, totals(read.to_table())) == (version, expected)
            by_spark = lna_spark.read(
                spark,
                "$".join(view),
                impl=backend.impl,
                properties=backend.properties,
                delimiter="$",
            )
            assert {r["k"]: r["total"] for r in by_spark.collect()} == expected
            source_version = facade.describe_table(
                {"id": source, "load_detailed_metadata": True}
            ).version
            assert json.loads(definition(facade, view)[SOURCES_KEY]) == [
                {"id": source, "version": source_version}
            ]
            if round_ == 0:
                facade.insert_into_table({"id": source}, orders(*extra))
                expected = {"a": 4, "b": 2, "c": 5}
            else:
                break
        facade.insert_into_table({"id": source}, orders(("a", 10), ("b", -2)))
        version = backend.refresh(spark, view)
        assert totals(lance.dataset(namespace_client=facade, table_id=view).to_table()) == {
            "a": 14,
            "b": 0,
            "c": 5,
        }
    if backend.impl == "iceberg":  # the catalog took the view's commit
        pyiceberg_table = (
            request.getfixturevalue("iceberg_reference")
            .rest_client()
            .load_table((backend.namespace[-1], "by_k"))
        )
        assert pyiceberg_table.metadata.current_snapshot_id == version


def test_src_version_reads_the_source_as_it_was(dir_backend: Backend, spark: SparkSession) -> None:
    source, view = ["shop", "orders"], ["shop", "by_k"]
    with dir_backend.facade() as facade:
        first = facade.create_table({"id": source}, orders(("a", 1))).version
        facade.insert_into_table({"id": source}, orders(("a", 100)))
        create_view(facade, view)
        dir_backend.refresh(spark, view, src_version=first)
        read = lance.dataset(namespace_client=facade, table_id=view).to_table()
        assert totals(read) == {"a": 1}
        assert json.loads(definition(facade, view)[SOURCES_KEY])[0]["version"] == first


def test_tables_of_other_namespaces_are_named_with_the_delimiter(
    dir_backend: Backend, spark: SparkSession
) -> None:
    with dir_backend.facade() as facade:
        facade.create_namespace({"id": ["other"]})
        facade.create_table({"id": ["other", "prices"]}, pa.table({"k": ["a"], "p": [7]}))
        facade.create_table({"id": ["shop", "orders"]}, orders(("a", 2)))
        facade.create_materialized_view(
            {
                "id": ["shop", "priced"],
                "kind": "query",
                "source_query": "SELECT o.k, SUM(o.v * p.p) AS total "
                "FROM orders o JOIN `other$prices` p ON o.k = p.k GROUP BY o.k",
                "output_schema": OUTPUT,
                "with_no_data": True,
            }
        )
        dir_backend.refresh(spark, ["shop", "priced"])
        read = lance.dataset(namespace_client=facade, table_id=["shop", "priced"]).to_table()
        assert totals(read) == {"a": 14}
        sources = json.loads(definition(facade, ["shop", "priced"])[SOURCES_KEY])
        assert sorted(s["id"] for s in sources) == [["other", "prices"], ["shop", "orders"]]


@pytest.mark.parametrize(
    ("query", "schema", "error"),
    [
        ("SELEC k FROM orders", OUTPUT, errors.InvalidInputError),
        ("SELECT k, SUM(v) AS total FROM missing GROUP BY k", OUTPUT, errors.TableNotFoundError),
        ("SELECT k, nope AS total FROM orders", OUTPUT, errors.InvalidInputError),
        ("SELECT k FROM orders", OUTPUT, errors.InvalidInputError),  # a column missing
        (
            "SELECT k, CAST(SUM(v) AS STRING) AS total FROM orders GROUP BY k",
            OUTPUT,
            errors.InvalidInputError,
        ),  # string does not fit int64
        (
            "SELECT k, SUM(v) AS total FROM shop.orders GROUP BY k",
            OUTPUT,
            errors.InvalidInputError,
        ),  # dotted names are Spark's catalog's
        (
            QUERY,
            '{"fields": [{"name": "k", "type": {"type": "nosuch"}}]}',
            errors.InvalidInputError,
        ),
        (QUERY, "", errors.InvalidInputError),
    ],
)
def test_a_bad_definition_is_refused_before_anything_is_written(
    dir_backend: Backend, spark: SparkSession, query: str, schema: str, error: type[Exception]
) -> None:
    with dir_backend.facade() as facade:
        facade.create_table({"id": ["shop", "orders"]}, orders(("a", 1)))
        with pytest.raises(error):
            facade.create_materialized_view(
                {
                    "id": ["shop", "v"],
                    "kind": "query",
                    "source_query": query,
                    "output_schema": schema,
                    "with_no_data": True,
                }
            )
        assert facade.list_tables({"id": ["shop"]}).tables == ["orders"]


def test_a_spark_ddl_output_schema_is_accepted(dir_backend: Backend, spark: SparkSession) -> None:
    with dir_backend.facade() as facade:
        facade.create_table({"id": ["shop", "orders"]}, orders(("a", 1)))
        create_view(facade, ["shop", "v"], output_schema="k STRING, total BIGINT")
        schema = lance.dataset(namespace_client=facade, table_id=["shop", "v"]).schema
        assert schema.field("total").type == pa.int64()


def test_client_code_kinds_are_refused_with_code_0(dir_backend: Backend) -> None:
    with dir_backend.facade() as facade, pytest.raises(errors.UnsupportedOperationError) as raised:
        facade.create_materialized_view(
            {"id": ["shop", "v"], "kind": "udtf", "source_query": "", "output_schema": OUTPUT}
        )
    assert raised.value.code == 0
    assert "client-supplied code" in str(raised.value)


def test_refreshing_a_plain_table_is_refused(dir_backend: Backend) -> None:
    with dir_backend.facade() as facade:
        facade.create_table({"id": ["shop", "orders"]}, orders(("a", 1)))
        with pytest.raises(errors.InvalidInputError, match="not a materialized view"):
            facade.refresh_materialized_view({"id": ["shop", "orders"]})


def _data_files(facade: lna.SyncLanceNamespace, table: list[str]) -> set[str]:
    location = facade.describe_table({"id": table}).location
    data = Path(str(location).removeprefix("file://")) / "data"
    return {p.name for p in data.iterdir()} if data.exists() else set()


def test_a_refresh_that_fails_mid_way_leaves_the_previous_version(
    dir_backend: Backend, spark: SparkSession
) -> None:
    view = ["shop", "checked"]
    with dir_backend.facade() as facade:
        facade.create_table({"id": ["shop", "orders"]}, orders(("a", 1), ("b", 2)))
        create_view(
            facade,
            view,
            source_query="SELECT k, CASE WHEN v < 0 THEN raise_error('poisoned row') "
            "ELSE v END AS total FROM orders",
        )
        good = dir_backend.refresh(spark, view)
        files = _data_files(facade, view)
        facade.insert_into_table({"id": ["shop", "orders"]}, orders(("c", -1)))
        with pytest.raises(errors.InternalError, match="poisoned row"):
            dir_backend.refresh(spark, view)
        read = lance.dataset(namespace_client=facade, table_id=view)
        assert (read.version, totals(read.to_table())) == (good, {"a": 1, "b": 2})
        assert _data_files(facade, view) == files  # nothing the failed job wrote is left


@pytest.mark.filterwarnings("ignore:lance is not fork-safe")
def test_create_starts_the_first_refresh_as_a_job_that_succeeds(dir_backend: Backend) -> None:
    """End to end through the job runner (its own Spark driver process)."""
    from lance_namespace_async.pipeline._jobs import wait_for_job_sync

    with dir_backend.facade() as facade:
        facade.create_table({"id": ["shop", "orders"]}, orders(("a", 1), ("a", 2)))
        created = create_view(facade, ["shop", "by_k"], with_no_data=False)
        assert isinstance(created.job_id, str)
        outcome = wait_for_job_sync(facade, created.job_id, timeout=300)
        assert str(outcome.status) == "SUCCEEDED", outcome
        read = lance.dataset(namespace_client=facade, table_id=["shop", "by_k"])
        assert (read.version, totals(read.to_table())) == (created.version + 1, {"a": 3})


def _processes() -> dict[int, tuple[int, str]]:
    """Every process of this host: pid → (parent pid, command line)."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry.name)] = (int(stat.rpartition(")")[2].split()[1]), command)
    return found


def _descendants(pid: int, table: dict[int, tuple[int, str]]) -> set[int]:
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, (ppid, _) in table.items() if ppid == parent]
        found.update(children)
        frontier.extend(children)
    return found


def test_lance_ns_serve_starts_no_jvm_of_its_own_its_driver_analyses_and_runs_udfs(
    tmp_path: Path,
) -> None:
    """Through a real ``lance-ns serve --allow-udfs`` process (storage workers on): the
    view's query is analysed by the default cluster's driver process (a child of the
    server, whose own child is the only JVM); the server process has no java child.
    The same driver then fills a virtual column with the client's UDF (opt-in flag)."""
    import base64

    import pyarrow.compute as pc
    from pyspark import cloudpickle
    from serve_process import lance_ns_serve

    from lance_namespace_async.pipeline._jobs import wait_for_job_sync

    lance.write_dataset(orders(("a", 1), ("a", 2), ("b", 5)), str(tmp_path / "orders.lance"))

    def doubled(batch: pa.RecordBatch) -> pa.Array:
        return pc.multiply(batch.column("v"), 2)

    udf = base64.b64encode(cloudpickle.dumps(doubled)).decode()
    with (
        lance_ns_serve({"root": str(tmp_path)}, "--allow-udfs") as server,
        lna.connect_sync(
            "rest", {"uri": server.uri, "read_timeout": "240000", "call_timeout": "240000"}
        ) as remote,
    ):
        with pytest.raises(errors.TableNotFoundError):  # the driver's answer, typed
            remote.create_materialized_view(
                {
                    "id": ["v0"],
                    "kind": "query",
                    "source_query": "SELECT k FROM nowhere",
                    "output_schema": OUTPUT,
                    "with_no_data": True,
                }
            )
        create_view(remote, ["by_k"])
        table = _processes()
        below = _descendants(server.process.pid, table)
        javas = [pid for pid in below if "java" in table[pid][1].split(" ")[0]]
        assert javas, "the driver's JVM"
        for java in javas:
            parent = table[java][0]
            assert parent != server.process.pid
            assert "lance_namespace_async.pipeline._driver" in table[parent][1]
            assert table[parent][0] == server.process.pid  # the driver: the server's child
        assert definition(remote, ["by_k"])[SOURCES_KEY] == json.dumps(
            [{"id": ["orders"], "version": None}]
        )

        remote.alter_table_add_columns(
            {
                "id": ["orders"],
                "new_columns": [
                    {
                        "name": "v2",
                        "virtual_column": {
                            "input_columns": ["v"],
                            "outputs": [
                                {
                                    "column": "v2",
                                    "struct_field": "",
                                    "data_type": {"type": "int64"},
                                    "nullable": True,
                                }
                            ],
                            "image": "",
                            "udf": udf,
                            "udf_name": "doubled",
                            "udf_version": "1",
                        },
                    }
                ],
            }
        )
        job = remote.alter_table_backfill_columns({"id": ["orders"], "column": "v2"}).job_id
        assert str(wait_for_job_sync(remote, job, timeout=300).status) == "SUCCEEDED"
        filled = lance.dataset(namespace_client=remote, table_id=["orders"]).to_table()
    assert sorted(zip(filled["v"].to_pylist(), filled["v2"].to_pylist(), strict=True)) == [
        (1, 2),
        (2, 4),
        (5, 10),
    ]
