"""lance-spark, the Lance project's own Spark connector, as an outside client of our adapter.

Servers: our REST adapter (``create_app`` under uvicorn on a free loopback port) in front
of a ``dir`` catalog and in front of a real Hive Metastore 4.0.1 (conftest's session
``hive_metastores``); a real Spark 3.5 JVM running lance-spark's
``LanceNamespaceSparkCatalog`` with ``impl=rest`` against each adapter
(``jvm/lance-spark``: the connector and its Spark from Maven Central, driven over a
loopback socket by ``jvm/lance-spark/LanceSparkSql.java``); our PySpark data source
(``lance_namespace_async.spark``, pyspark 4 in this process) and pylance read back what
lance-spark wrote.

Every request lance-spark sends is logged by operation (:class:`RequestLog`), so the tests
state exactly which protocol operations the connector uses for each SQL statement. What
lance-spark 0.4.0 calls (it reads and writes the data itself, with lance-core, at the
location the namespace answers; versions are the storage's own):

=====================================  ==============================================
first use of the catalog               ListNamespaces
CREATE NAMESPACE                       NamespaceExists, CreateNamespace
SHOW NAMESPACES                        ListNamespaces
DESCRIBE NAMESPACE                     DescribeNamespace
DROP NAMESPACE [CASCADE]               NamespaceExists, DropNamespace
CREATE TABLE [AS SELECT]               TableExists, DeclareTable (+ DescribeTable)
CREATE OR REPLACE TABLE AS SELECT      TableExists, TableExists, DeclareTable
INSERT INTO / OVERWRITE, SELECT,       DescribeTable (several times)
VERSION AS OF, DESCRIBE TABLE
SHOW TABLES                            ListTables
DROP TABLE                             TableExists, DeregisterTable (data kept)
DROP TABLE ... PURGE                   TableExists, DropTable (data deleted)
ALTER TABLE ... RENAME TO              DescribeTable; then refused by lance-spark itself
=====================================  ==============================================

All of these are among the operations our adapter serves: lance-spark needed nothing
we lacked.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import lance
import pytest
from conftest import stop_spark
from hive_metastore import Metastore
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from jvm import (
    JVM_PROJECTS,
    SPARK_JAVA17_OPTIONS,
    classpath,
    free_port,
    java_executable,
    java_server,
    need,
    port_open,
)
from lance_namespace_async.server import ROUTES, create_app

CATALOG_CLASS = "org.lance.spark.LanceNamespaceSparkCatalog"


# -- what lance-spark asks our adapter -----------------------------------------------------------


def _operation(method: str, raw_path: str) -> str:
    """The protocol operation a request names (``GET /v1/...`` when no route matches)."""
    segments = tuple(raw_path.strip("/").split("/"))
    for route in ROUTES:
        pattern = route.segments
        if (
            route.http_method == method
            and len(pattern) == len(segments)
            and all(p == "{id}" or p == s for p, s in zip(pattern, segments, strict=True))
        ):
            return route.operation_id
    return f"{method} {raw_path}"


@dataclass
class RequestLog:
    """An ASGI wrapper that records every request's operation and answer status."""

    app: Any
    calls: list[tuple[str, int]] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("raw_path") or scope["path"].encode()
        operation = _operation(scope["method"], raw.decode("latin-1").partition("?")[0])
        recorded = [False]

        async def recording_send(message: Any) -> None:
            if message["type"] == "http.response.start" and not recorded[0]:
                # recorded before the answer leaves: the client may act on it (and the test
                # read the log) before this coroutine runs again
                recorded[0] = True
                self.calls.append((operation, message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            if not recorded[0]:
                self.calls.append((operation, 0))

    def operations(self) -> list[str]:
        return [operation for operation, _ in self.calls]

    def take(self) -> list[tuple[str, int]]:
        """The calls since the last take (one SQL statement's traffic)."""
        taken, self.calls[:] = list(self.calls), []
        return taken


@dataclass
class Adapter:
    """Our adapter server in front of one backend, with its request log."""

    uri: str
    log: RequestLog
    properties: dict[str, str]
    impl: str


@contextlib.contextmanager
def adapter_over(impl: str, properties: dict[str, str], name: str) -> Iterator[Adapter]:
    backend = lna.connect(impl, properties)  # ours to close: create_app leaves it open
    log = RequestLog(create_app(backend))
    server = UvicornThread(log, name=name, description=f"our REST adapter over {impl}")
    try:
        yield Adapter(server.start(), log, properties, impl)
    finally:
        server.stop()
        anyio.run(backend.aclose)  # the hive backend's metastore connections


# -- a Spark SQL session with lance-spark, in its own JVM -------------------------------------


class SparkSqlError(AssertionError):
    """A statement failed in Spark: the JVM's exception and its causes."""


class SparkSql:
    """Statements sent to the LanceSparkSql JVM over a loopback socket (one JSON line each)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.reader = self.sock.makefile("r", encoding="utf-8")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def answer(self, statement: str) -> dict[str, Any]:
        self.sock.sendall((json.dumps(statement) + "\n").encode())
        found: dict[str, Any] = json.loads(self.reader.readline())
        return found

    def sql(self, statement: str) -> list[dict[str, Any]]:
        found = self.answer(statement)
        if not found["ok"]:
            raise SparkSqlError("\n".join([statement, found["error"], *found["causes"]]))
        rows: list[dict[str, Any]] = found["rows"]
        return rows


@pytest.fixture(scope="module")
def spark_sql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSql]:
    """One Spark 3.5 driver JVM (local[1]) with lance-spark on its classpath."""
    java = need(java_executable)
    jars = need(lambda: classpath("lance-spark")).split(os.pathsep)
    workdir = tmp_path_factory.mktemp("lance-spark")
    port = free_port()
    conf = {
        "spark.master": "local[1]",
        "spark.app.name": "lance-spark-client",
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "1",
        "spark.sql.warehouse.dir": str(workdir / "spark-warehouse"),
        "spark.local.dir": str(workdir / "tmp"),
    }
    with java_server(
        "Spark 3.5 with lance-spark",
        main_class=str(JVM_PROJECTS / "lance-spark" / "LanceSparkSql.java"),
        classpath_entries=jars,
        workdir=workdir,
        port=port,
        ready=lambda: port_open(port),
        args=[str(port), *(f"{k}={v}" for k, v in conf.items())],
        jvm_options=SPARK_JAVA17_OPTIONS,
        env={"SPARK_LOCAL_IP": "127.0.0.1"},
        drop_env=("SPARK_", "PYSPARK_", "HADOOP_"),
        java=java,
        startup_timeout=300,
    ) as server:
        print(f"\nSpark 3.5 + lance-spark ready in {server.startup_seconds:.1f} s")
        client = SparkSql(port)
        try:
            yield client
        finally:
            client.close()


def use_catalog(spark_sql: SparkSql, catalog: str, adapter: Adapter) -> None:
    """Point the Spark catalog ``catalog`` at ``adapter`` (catalogs load on first use)."""
    spark_sql.sql(f"SET spark.sql.catalog.{catalog}={CATALOG_CLASS}")
    spark_sql.sql(f"SET spark.sql.catalog.{catalog}.impl=rest")
    spark_sql.sql(f"SET spark.sql.catalog.{catalog}.uri={adapter.uri}")


# -- the catalogs lance-spark is pointed at ----------------------------------------------------


@pytest.fixture(scope="module")
def dir_adapter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Adapter]:
    root = tmp_path_factory.mktemp("lance-spark-dir")
    with adapter_over("dir", {"root": str(root)}, "lance-spark-dir") as served:
        yield served


@pytest.fixture(scope="module")
def hive_adapter(
    tmp_path_factory: pytest.TempPathFactory, hive_metastores: Callable[[str], Metastore]
) -> Iterator[Adapter]:
    metastore = hive_metastores("4")
    root = tmp_path_factory.mktemp("lance-spark-hive")
    properties = {"uri": metastore.uri, "root": str(root)}
    with adapter_over("hive", properties, "lance-spark-hive") as served:
        yield served


@dataclass
class Catalog:
    """A Spark catalog name bound to one of our adapters (and the backend behind it)."""

    name: str
    adapter: Adapter

    def run(self, spark_sql: SparkSql, statement: str) -> tuple[list[dict[str, Any]], list[str]]:
        """The statement's rows, and the protocol operations lance-spark sent for it."""
        self.adapter.log.take()
        rows = spark_sql.sql(statement)
        calls = self.adapter.log.take()
        assert all(status < 500 for _, status in calls), calls
        return rows, [operation for operation, _ in calls]

    def backend(self) -> lna.SyncLanceNamespace:
        """Our backend itself, not through the adapter: the independent reader."""
        return lna.connect_sync(self.adapter.impl, self.adapter.properties)


@pytest.fixture(scope="module", params=["dir", "hive"])
def catalog(request: pytest.FixtureRequest, spark_sql: SparkSql) -> Catalog:
    """lance-spark's catalog ``lance_<backend>``, loaded (its first use lists namespaces)."""
    adapter: Adapter = request.getfixturevalue(f"{request.param}_adapter")
    found = Catalog(f"lance_{request.param}", adapter)
    use_catalog(spark_sql, found.name, adapter)
    _, calls = found.run(spark_sql, f"SHOW NAMESPACES IN {found.name}")
    assert set(calls) == {"ListNamespaces"}
    return found


@pytest.fixture(scope="module")
def pyspark_session() -> Iterator[Any]:
    """Our PySpark data source's Spark (pyspark 4, in this process), local[1]."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    from pyspark.sql import SparkSession

    from lance_namespace_async import spark as lna_spark

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings():
        # pyspark starts its JVM by fork + exec (with a preexec_fn), which runs lance's
        # at-fork hook: the child only execs java and never touches lance
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        session = (
            SparkSession.builder.master("local[1]")
            .appName("lance-spark-readback")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("FATAL")
    lna_spark.register(session)
    try:
        yield session
    finally:
        stop_spark(session)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def rows_of(table: Any) -> list[tuple[int, str]]:
    return sorted(
        zip(table.column("id").to_pylist(), table.column("name").to_pylist(), strict=True)
    )


# -- lance-spark writes, we read -----------------------------------------------------------------


def test_spark_sql_through_our_adapter_and_what_lance_spark_calls(
    spark_sql: SparkSql, catalog: Catalog, pyspark_session: Any
) -> None:
    """Namespace and table DDL, CTAS, INSERT and SELECT from lance-spark; read back by our
    backend, pylance and our PySpark data source. lance-spark writes the data itself (with
    lance-core, at the location DeclareTable answers) and only asks the namespace where
    tables are: none of the table-data operations of the protocol is used."""
    ns, cat = unique("sp"), catalog.name

    _, calls = catalog.run(spark_sql, f"CREATE NAMESPACE {cat}.{ns}")
    assert calls == ["NamespaceExists", "CreateNamespace"]
    rows, calls = catalog.run(spark_sql, f"SHOW NAMESPACES IN {cat}")
    assert ns in [row["namespace"] for row in rows]
    assert calls == ["ListNamespaces"]

    _, calls = catalog.run(
        spark_sql,
        f"CREATE TABLE {cat}.{ns}.t AS SELECT id, CAST(id AS STRING) AS name FROM range(3)",
    )
    assert calls == ["TableExists", "DeclareTable"]
    _, calls = catalog.run(spark_sql, f"INSERT INTO {cat}.{ns}.t VALUES (10, 'ten')")
    assert set(calls) == {"DescribeTable"}
    rows, calls = catalog.run(spark_sql, f"SELECT id, name FROM {cat}.{ns}.t ORDER BY id")
    expected = [(0, "0"), (1, "1"), (2, "2"), (10, "ten")]
    assert [(row["id"], row["name"]) for row in rows] == expected
    assert set(calls) == {"DescribeTable"}
    rows, calls = catalog.run(spark_sql, f"SHOW TABLES IN {cat}.{ns}")
    assert [row["tableName"] for row in rows] == ["t"]
    assert calls == ["ListTables"]

    with catalog.backend() as backend:
        assert backend.list_tables({"id": [ns]}).tables == ["t"]
        location = backend.describe_table({"id": [ns, "t"]}).location
    assert location is not None
    dataset = lance.dataset(location)
    assert rows_of(dataset.to_table()) == expected, "pylance reads what lance-spark wrote"
    assert dataset.version == 2, "CTAS and INSERT: one version each"
    ours = (
        pyspark_session.read.format("lance-namespace")
        .options(impl=catalog.adapter.impl, **catalog.adapter.properties)
        .load(f"{ns}.t")
    )
    assert sorted((row["id"], row["name"]) for row in ours.collect()) == expected

    _, calls = catalog.run(spark_sql, f"DROP TABLE {cat}.{ns}.t")
    assert calls == ["TableExists", "DeregisterTable"], "DROP TABLE keeps the data"
    with catalog.backend() as backend:
        assert backend.list_tables({"id": [ns]}).tables == []
    assert lance.dataset(location).count_rows() == 4

    catalog.run(spark_sql, f"CREATE TABLE {cat}.{ns}.u (id BIGINT, name STRING)")
    catalog.run(spark_sql, f"INSERT INTO {cat}.{ns}.u VALUES (7, 'seven')")
    with catalog.backend() as backend:
        purged = backend.describe_table({"id": [ns, "u"]}).location
    assert purged is not None
    assert lance.dataset(purged).count_rows() == 1
    _, calls = catalog.run(spark_sql, f"DROP TABLE {cat}.{ns}.u PURGE")
    assert calls == ["TableExists", "DropTable"], "DROP TABLE ... PURGE deletes the data"
    assert not Path(purged.removeprefix("file://")).exists()

    _, calls = catalog.run(spark_sql, f"DROP NAMESPACE {cat}.{ns}")
    assert calls == ["NamespaceExists", "DropNamespace"]
    with catalog.backend() as backend, pytest.raises(lna.errors.NamespaceNotFoundError):
        backend.namespace_exists({"id": [ns]})


def test_time_travel_overwrite_and_replace_through_our_adapter(
    spark_sql: SparkSql, catalog: Catalog
) -> None:
    """``VERSION AS OF``, ``INSERT OVERWRITE`` and ``CREATE OR REPLACE ... AS SELECT`` also
    need nothing but DescribeTable, TableExists and DeclareTable from the namespace."""
    ns, cat = unique("tt"), catalog.name
    catalog.run(spark_sql, f"CREATE NAMESPACE {cat}.{ns}")
    catalog.run(spark_sql, f"CREATE TABLE {cat}.{ns}.t AS SELECT 1L AS id, 'one' AS name")
    catalog.run(spark_sql, f"INSERT INTO {cat}.{ns}.t VALUES (2, 'two')")
    rows, calls = catalog.run(spark_sql, f"SELECT count(*) AS n FROM {cat}.{ns}.t VERSION AS OF 1")
    assert rows == [{"n": 1}]
    assert set(calls) == {"DescribeTable"}
    _, calls = catalog.run(spark_sql, f"INSERT OVERWRITE {cat}.{ns}.t VALUES (3, 'three')")
    assert set(calls) == {"DescribeTable"}
    with catalog.backend() as backend:
        location = backend.describe_table({"id": [ns, "t"]}).location
    assert location is not None
    assert rows_of(lance.dataset(location).to_table()) == [(3, "three")]
    assert lance.dataset(location).version == 3
    _, calls = catalog.run(
        spark_sql, f"CREATE OR REPLACE TABLE {cat}.{ns}.r AS SELECT 5L AS id, 'five' AS name"
    )
    assert calls == ["TableExists", "TableExists", "DeclareTable"]
    rows, _ = catalog.run(spark_sql, f"SELECT id, name FROM {cat}.{ns}.r")
    assert rows == [{"id": 5, "name": "five"}]
    # lance-spark 0.4.0 has no rename (its catalog throws): the day it has, this fails
    # and RenameTable (which our adapter serves) gets its test here
    with pytest.raises(SparkSqlError, match="Table renaming is not supported"):
        catalog.run(spark_sql, f"ALTER TABLE {cat}.{ns}.r RENAME TO {cat}.{ns}.renamed")
    catalog.run(spark_sql, f"DROP NAMESPACE {cat}.{ns} CASCADE")


# -- we write, lance-spark reads -----------------------------------------------------------------


def test_lance_spark_reads_what_our_backend_wrote(spark_sql: SparkSql, catalog: Catalog) -> None:
    """A table written by pylance through our backend (no adapter) is read by lance-spark
    through the adapter, with its properties, at every version."""
    import pyarrow as pa

    ns, cat = unique("ours"), catalog.name
    with catalog.backend() as backend:
        backend.create_namespace({"id": [ns], "properties": {"team": "ml"}})
        first = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
        lance.write_dataset(first, namespace_client=backend, table_id=[ns, "w"])
        location = backend.describe_table({"id": [ns, "w"]}).location
        assert location is not None
        lance.write_dataset(
            pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}), location, mode="append"
        )
    rows, _ = catalog.run(spark_sql, f"DESCRIBE NAMESPACE EXTENDED {cat}.{ns}")
    assert any("team" in str(row["info_value"]) for row in rows)
    rows, _ = catalog.run(spark_sql, f"SELECT id, name FROM {cat}.{ns}.w ORDER BY id")
    assert [(row["id"], row["name"]) for row in rows] == [(1, "a"), (2, "b"), (3, "c")]
    rows, _ = catalog.run(spark_sql, f"SELECT count(*) AS n FROM {cat}.{ns}.w VERSION AS OF 1")
    assert rows == [{"n": 2}]
    catalog.run(spark_sql, f"DROP TABLE {cat}.{ns}.w PURGE")
    catalog.run(spark_sql, f"DROP NAMESPACE {cat}.{ns}")
