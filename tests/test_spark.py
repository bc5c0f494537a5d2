"""The ``lance-namespace`` Spark data source and the inventory, on PySpark local[2].

One real Spark session (JVM, Python workers in their own processes) serves the
module. Tables live in real catalogs: a directory, our REST adapter (the rest
backend over HTTP), and the Iceberg, Unity, Glue (moto) and Hive (a real
metastore) test servers. Data is checked against what Spark itself computes
from the same rows, and against the tables opened directly with pylance. The Iceberg
server is our look-alike (tests/iceberg_rest_server.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from conftest import disk_state, stop_spark
from glue_fixtures import REGION, moto_glue
from hive_metastore import hive_metastore
from iceberg_rest_server import iceberg_catalog
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col, udf
from pyspark.sql.types import LongType
from unity_server import unity_catalog
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async import spark as lna_spark
from lance_namespace_async.spark._source import WrittenFragments

FORMAT = "lance-namespace"
CANARY = "spark-canary-secret-9f3e1c"


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SparkSession, int]]:
    """The session, and how many rows a read found before anything was registered."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings():
        # pyspark starts its JVM by fork + exec (with a preexec_fn), which runs lance's
        # at-fork hook: the child only execs java and never touches lance
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        session = (
            SparkSession.builder.master("local[2]")
            .appName("lance-namespace-async-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("FATAL")
    root = tmp_path_factory.mktemp("auto")
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), str(root / "t.lance"))
    # Nothing registered yet: Spark must find the source through pyspark_lance_namespace.
    found = session.read.format(FORMAT).options(impl="dir", root=str(root)).load("t").count()
    try:
        yield session, found
    finally:
        stop_spark(session)


@pytest.fixture
def session(spark: tuple[SparkSession, int]) -> SparkSession:
    lna_spark.register(spark[0])
    return spark[0]


@contextlib.contextmanager
def adapter(root: Path) -> Iterator[str]:
    """Our REST adapter over a dir catalog, under uvicorn on a free loopback port."""
    from lance_namespace_async.server import create_app

    app = create_app(lna.connect("dir", {"root": str(root)}))
    server = UvicornThread(app, name="spark-adapter", description="the REST adapter")
    try:
        yield server.start()
    finally:
        server.stop()


class Catalog:
    """A backend's connection properties and where a test's tables go."""

    def __init__(self, impl: str, properties: dict[str, str], parent: list[str]) -> None:
        self.impl = impl
        self.properties = properties
        self.parent = parent

    def table(self, name: str) -> list[str]:
        return [*self.parent, name]

    def name(self, table: list[str]) -> str:
        return ".".join(table)

    def options(self) -> dict[str, str]:
        return {"impl": self.impl, **self.properties}

    def describe(self, table: list[str]) -> Any:
        with lna.connect_sync(self.impl, self.properties) as ns:
            return ns.describe_table({"id": table})


def _with_parents(impl: str, properties: dict[str, str], parent: list[str]) -> Catalog:
    with lna.connect_sync(impl, properties) as ns:
        for depth in range(1, len(parent) + 1):
            try:
                ns.namespace_exists({"id": parent[:depth]})
            except errors.NamespaceNotFoundError:
                ns.create_namespace({"id": parent[:depth]})
    return Catalog(impl, properties, parent)


@contextlib.contextmanager
def catalog_of(kind: str, tmp: Path) -> Iterator[Catalog]:
    root = tmp / "lance-root"
    root.mkdir()
    if kind == "dir":
        yield _with_parents("dir", {"root": str(root)}, ["ns1"])
    elif kind == "rest":
        with adapter(root) as uri:
            yield _with_parents("rest", {"uri": uri, "max_retries": "1"}, ["ns1", "inner"])
    elif kind == "iceberg":
        with iceberg_catalog(tmp / "iceberg") as server:
            properties = {"endpoint": server.uri, "root": str(root), "retry_backoff_ms": "1"}
            yield _with_parents("iceberg", properties, ["wh", "ns1"])
    elif kind == "unity":
        with unity_catalog() as server:
            server.add_catalog("cat")
            properties = {"endpoint": server.uri, "root": str(root), "retry_backoff_ms": "1"}
            yield _with_parents("unity", properties, ["cat", "sch"])
    elif kind == "glue":
        with moto_glue() as endpoint:
            properties = {
                "endpoint": endpoint,
                "region": REGION,
                "root": str(root),
                "child_catalogs": "false",
                "access_key_id": "testing",
                "secret_access_key": CANARY,
            }
            yield _with_parents("glue", properties, ["db1"])
    elif kind == "hive":
        with hive_metastore(tmp / "hms") as metastore:
            yield _with_parents("hive", {"uri": metastore.uri, "root": str(root)}, ["db1"])
    else:  # pragma: no cover
        raise AssertionError(kind)


@pytest.fixture
def dir_catalog(tmp_path: Path) -> Iterator[Catalog]:
    with catalog_of("dir", tmp_path) as found:
        yield found


@pytest.fixture(params=["dir", "rest", "iceberg", "unity", "glue", "hive"])
def any_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    with catalog_of(request.param, tmp_path) as found:
        yield found


def read(session: SparkSession, catalog: Catalog, table: list[str], **options: str) -> DataFrame:
    return (
        session.read.format(FORMAT)
        .options(**catalog.options(), **options)
        .load(catalog.name(table))
    )


def read_fast(
    session: SparkSession, catalog: Catalog, table: list[str], **kwargs: Any
) -> DataFrame:
    """``lna_spark.read``: the data source's partitions through ``mapInArrow``."""
    return lna_spark.read(
        session, catalog.name(table), impl=catalog.impl, properties=catalog.properties, **kwargs
    )


def write(frame: DataFrame, catalog: Catalog, table: list[str], mode: str, **options: str) -> None:
    frame.write.format(FORMAT).mode(mode).options(**catalog.options(), **options).save(
        catalog.name(table)
    )


def rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in frame.collect())


def local_dir(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def every_type(session: SparkSession, count: int = 40) -> DataFrame:
    return session.range(count, numPartitions=2).selectExpr(
        "id",
        "cast(id as tinyint) as b8",
        "cast(id as smallint) as i16",
        "cast(id as int) as i32",
        "cast(id as float) / 4 as f32",
        "cast(id as double) / 3 as f64",
        "id % 2 = 0 as flag",
        "concat('row ''', id, '''') as text",
        "timestamp_seconds(1700000000 + id * 3600) as ts",
        "date_add(date'2024-02-28', cast(id as int)) as day",
        "array(id, id + 1, null) as numbers",
        "named_struct('a', id, 'b', concat('x', id), 'c', array(cast(id as double))) as nested",
        "if(id % 3 = 0, null, id) as maybe",
        "if(id % 4 = 0, null, concat('s', id)) as maybe_text",
    )


# -- registration ------------------------------------------------------------------------------


def test_spark_finds_the_source_without_registration(spark: tuple[SparkSession, int]) -> None:
    assert spark[1] == 3


def test_register_lifts_the_arrow_byte_limit_unless_the_session_set_one(
    spark: tuple[SparkSession, int], dir_catalog: Catalog
) -> None:
    session = spark[0]
    conf = lna_spark.ARROW_BATCH_BYTES_CONF
    session.conf.unset(conf)
    try:
        lna_spark.register(session, arrow_byte_limit=True)
        assert session.conf.get(conf, None) is None  # Spark's default limit stays
        session.conf.set(conf, "1m")
        lna_spark.register(session)
        assert session.conf.get(conf) == "1m"  # the session's own choice is kept
        session.conf.unset(conf)
        lna_spark.register(session)
        assert session.conf.get(conf) == str(2**31 - 1)  # Spark's "no limit"

        # Spark now cuts the rows it sends the writer by count only (10,000 a batch):
        # each task's several batches all land, in one commit
        table = dir_catalog.table("batched")
        data = session.range(0, 45_000, numPartitions=2).selectExpr(
            "id", "repeat('x', cast(id % 100 as int)) as text"
        )
        write(data, dir_catalog, table, "append")
        stored = lance.dataset(str(dir_catalog.describe(table).location))
        assert stored.version == 1
        written = stored.to_table().sort_by("id")
        assert written.column("id").to_pylist() == list(range(45_000))
        assert [len(text) for text in written.column("text").to_pylist()] == [
            i % 100 for i in range(45_000)
        ]
    finally:
        session.conf.unset(conf)
        lna_spark.register(session)


# -- reads and writes on every backend ----------------------------------------------------------


def test_append_then_overwrite_on_every_backend(
    session: SparkSession, any_catalog: Catalog
) -> None:
    table = any_catalog.table("events")
    first = session.range(0, 6, numPartitions=2).selectExpr("id", "concat('e', id) as name")
    write(first, any_catalog, table, "append")  # a missing table is created
    write(first.selectExpr("id + 6 as id", "name"), any_catalog, table, "append")
    assert [r[0] for r in rows(read(session, any_catalog, table))] == list(range(12))

    described = any_catalog.describe(table)
    dataset = lance.dataset(str(described.location))
    assert dataset.count_rows() == 12
    assert dataset.version == 2  # one commit per job, not one per task

    # read(): the same table through mapInArrow, from every catalog
    assert rows(read_fast(session, any_catalog, table)) == rows(read(session, any_catalog, table))

    write(first.limit(2), any_catalog, table, "overwrite")
    assert rows(read(session, any_catalog, table)) == [(0, "e0"), (1, "e1")]
    assert rows(read_fast(session, any_catalog, table)) == [(0, "e0"), (1, "e1")]
    assert lance.dataset(str(described.location)).version == 3


def test_a_failing_job_leaves_the_table_as_it_was(
    session: SparkSession, any_catalog: Catalog
) -> None:
    table = any_catalog.table("steady")
    write(session.range(0, 4).selectExpr("id"), any_catalog, table, "append")
    location = local_dir(str(any_catalog.describe(table).location))
    before = disk_state(location)

    @udf(LongType(), useArrow=False)  # type: ignore[misc]
    def explode_on_last(value: int) -> int:
        if value == 999:
            raise ValueError("this task fails on purpose")
        return value

    failing = session.range(0, 1000, numPartitions=2).select(explode_on_last("id").alias("id"))
    with pytest.raises(PySparkException, match="on purpose"):
        write(failing, any_catalog, table, "append")

    assert disk_state(location) == before  # no commit, and the other task's files are gone
    assert lance.dataset(str(location)).version == 1
    assert [r[0] for r in rows(read(session, any_catalog, table))] == [0, 1, 2, 3]


def _planned_writer(catalog: Catalog, table: list[str]) -> Any:
    """The writer Spark's driver plans for an append of one ``id`` column. The tests below
    call its tasks' ``write`` and the driver's ``abort`` in orders a real job produces only
    by chance (a task outliving its failed job)."""
    from pyspark.sql.types import StructField, StructType

    source = lna_spark.LanceNamespaceDataSource({**catalog.options(), "path": catalog.name(table)})
    return source.writer(StructType([StructField("id", LongType())]), False)


def _ids(*values: int) -> Iterator[pa.RecordBatch]:
    return iter([pa.record_batch({"id": pa.array(values, pa.int64())})])


def _job_dirs(location: Path) -> list[str]:
    return [path.name for path in location.iterdir() if path.name.startswith("_lna_spark_job_")]


def test_a_task_outliving_its_failed_job_leaves_nothing_behind(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    """Spark hands ``abort`` the messages of the tasks done when the job failed; one still
    running finishes later, and its message is dropped. Its files go all the same: by the
    abort when the task recorded them first, by the task itself when the abort came first."""
    table = dir_catalog.table("outlived")
    write(session.range(0, 4).selectExpr("id"), dir_catalog, table, "append")
    location = local_dir(str(dir_catalog.describe(table).location))
    before = disk_state(location)

    recorded_first = _planned_writer(dir_catalog, table)
    recorded_first.write(_ids(10, 11))  # its message never reaches the driver
    recorded_first.abort([None, None])
    assert disk_state(location) == before

    aborted_first = _planned_writer(dir_catalog, table)
    aborted_first.abort([None])
    with pytest.raises(RuntimeError, match="ended before this task finished"):
        aborted_first.write(_ids(12))
    assert disk_state(location) == before
    assert _job_dirs(location) == []
    assert lance.dataset(str(location)).to_table().column("id").to_pylist() == [0, 1, 2, 3]


def test_a_commit_deletes_the_files_of_a_task_attempt_it_did_not_commit(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    """A task attempt that wrote and recorded its files but whose message never came (it
    failed after writing, or lost to a speculative copy) leaves nothing once the job
    commits its retry's files."""
    table = dir_catalog.table("retried")
    write(session.range(0, 4).selectExpr("id"), dir_catalog, table, "append")
    location = local_dir(str(dir_catalog.describe(table).location))
    data_before = set(os.listdir(location / "data"))

    writer = _planned_writer(dir_catalog, table)
    writer.write(_ids(20))  # the lost attempt
    retry = writer.write(_ids(20))
    writer.commit([retry])
    added = set(os.listdir(location / "data")) - data_before
    assert len(added) == 1  # the retry's file only
    assert _job_dirs(location) == []
    ids = lance.dataset(str(location)).to_table().column("id").to_pylist()
    assert sorted(ids) == [0, 1, 2, 3, 20]


def test_an_abort_after_a_landed_commit_keeps_the_committed_files(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    """Spark calls ``abort`` when ``commit`` raises, also after the Lance commit landed
    (a catalog-managed table whose CommitTableVersion then failed): the files that
    version references stay, so the table stays readable."""
    table = dir_catalog.table("landed")
    write(session.range(0, 4).selectExpr("id"), dir_catalog, table, "append")
    location = local_dir(str(dir_catalog.describe(table).location))

    writer = _planned_writer(dir_catalog, table)
    message = writer.write(_ids(30, 31))
    writer.commit([message])
    writer.abort([message])  # as Spark would, had the commit raised after Lance's
    ids = lance.dataset(str(location)).to_table().column("id").to_pylist()
    assert sorted(ids) == [0, 1, 2, 3, 30, 31]
    assert _job_dirs(location) == []


def test_a_job_leaves_no_directory_of_its_own_and_an_abort_deletes_only_data_files(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    """A committed job removes its record directory; an abort reading hostile records or
    messages (``..``, absolute paths) deletes nothing outside the table's ``data``."""
    table = dir_catalog.table("tidy")
    write(session.range(0, 4).selectExpr("id"), dir_catalog, table, "append")
    location = local_dir(str(dir_catalog.describe(table).location))
    assert _job_dirs(location) == []
    before = disk_state(location)
    manifest = next(name for name in before if name.startswith("_versions/"))

    outside = location.parent / "not-the-table.txt"
    outside.write_text("stays")
    writer = _planned_writer(dir_catalog, table)
    (job,) = _job_dirs(location)
    hostile = [f"../{manifest}", str(outside), f"x/../../{manifest}", "../../not-the-table.txt"]
    (location / job / f"task-{'0' * 32}.json").write_text(json.dumps(hostile))
    message = WrittenFragments([json.dumps({"files": [{"path": f"../{manifest}"}]})])
    writer.abort([message])
    assert disk_state(location) == before
    assert _job_dirs(location) == []
    assert outside.read_text() == "stays"

    # a job directory swapped for a link elsewhere: nothing there is deleted
    elsewhere = location.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "LIVE").write_text("not the job's")
    (elsewhere / f"task-{'1' * 32}.json").write_text("[]")
    writer = _planned_writer(dir_catalog, table)
    (job,) = _job_dirs(location)
    for name in os.listdir(location / job):
        (location / job / name).unlink()
    (location / job).rmdir()
    (location / job).symlink_to(elsewhere)
    writer.abort([None])
    assert sorted(os.listdir(elsewhere)) == ["LIVE", f"task-{'1' * 32}.json"]
    (location / job).unlink()
    assert disk_state(location) == before


# -- the directory catalog: types, pruning, filters, versions, save modes ----------------------


def test_every_type_round_trips(session: SparkSession, dir_catalog: Catalog) -> None:
    table = dir_catalog.table("types")
    data = every_type(session)
    write(data, dir_catalog, table, "append")
    back = read(session, dir_catalog, table)
    assert back.schema == data.schema
    assert rows(back) == rows(data)
    stored = lance.dataset(str(dir_catalog.describe(table).location)).to_table()
    assert stored.num_rows == 40
    assert stored.column("maybe").null_count == 14


def test_a_failed_first_write_leaves_no_table(session: SparkSession, dir_catalog: Catalog) -> None:
    table = dir_catalog.table("never")

    @udf(LongType(), useArrow=False)  # type: ignore[misc]
    def fail(value: int) -> int:
        raise ValueError("this job fails on purpose")

    with pytest.raises(PySparkException, match="on purpose"):
        write(session.range(0, 10).select(fail("id").alias("id")), dir_catalog, table, "append")
    with lna.connect_sync("dir", dir_catalog.properties) as ns:
        assert ns.list_tables({"id": dir_catalog.parent}).tables == []


def test_columns_are_pruned_by_schema_or_option(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    table = dir_catalog.table("wide")
    write(every_type(session, 10), dir_catalog, table, "append")
    by_option = read(session, dir_catalog, table, columns="text,id")
    assert by_option.columns == ["text", "id"]
    assert rows(by_option) == rows(every_type(session, 10).select("text", "id"))
    by_schema = (
        session.read.format(FORMAT)
        .schema("id long, nested struct<a: long, b: string, c: array<double>>")
        .options(**dir_catalog.options())
        .load(dir_catalog.name(table))
    )
    assert rows(by_schema) == rows(every_type(session, 10).select("id", "nested"))
    with pytest.raises(PySparkException, match="no column"):
        read(session, dir_catalog, table, columns="id,missing").collect()


FILTERS = [
    "i32 > 7",
    "i32 >= 7 and i32 < 20",
    "text = 'row ''5'''",
    "text like 'row ''1%'",
    "text like '%9'''",
    "text like '%w ''2%'",
    "maybe is null",
    "maybe is not null and maybe <=> 4",
    "not (maybe <=> 4)",
    "maybe in (1, 2, 5)",
    "not (maybe in (1, 2, 5))",
    "flag",
    "not flag and day >= date'2024-03-10'",
    "nested.a = 3",
    "f64 > 2.0",
    "ts > timestamp'2023-11-15 00:00:00'",
    "maybe_text < 's2'",
]


def test_pushed_filters_return_the_rows_spark_would(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    table = dir_catalog.table("filtered")
    data = every_type(session)
    write(data, dir_catalog, table, "append")
    expected = {where: rows(data.filter(where)) for where in FILTERS}
    lna_spark.register(session, push_filters=True)
    try:
        for where in FILTERS:
            # a fresh DataFrame per query: see register()'s note on Spark 4.1-4.3
            assert rows(read(session, dir_catalog, table).filter(where)) == expected[where], where
    finally:
        session.conf.set(lna_spark.FILTER_PUSHDOWN_CONF, "false")
        lna_spark.register(session)


def test_version_option_reads_an_older_version(session: SparkSession, dir_catalog: Catalog) -> None:
    table = dir_catalog.table("history")
    write(session.range(0, 3), dir_catalog, table, "append")
    write(session.range(3, 5), dir_catalog, table, "append")
    assert read(session, dir_catalog, table, version="1").count() == 3
    assert read(session, dir_catalog, table).count() == 5
    with pytest.raises(PySparkException, match="version 9"):
        read(session, dir_catalog, table, version="9").count()


def test_errorifexists_and_ignore_behave_as_in_spark(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    table = dir_catalog.table("once")
    name = dir_catalog.name(table)
    frame = session.range(0, 3)
    lna_spark.save(frame, name, impl="dir", properties=dir_catalog.properties)
    with pytest.raises(errors.TableAlreadyExistsError):
        lna_spark.save(frame, name, impl="dir", properties=dir_catalog.properties)
    lna_spark.save(
        session.range(0, 100), name, mode="ignore", impl="dir", properties=dir_catalog.properties
    )
    assert read(session, dir_catalog, table).count() == 3
    with pytest.raises(PySparkException, match=r"TableAlreadyExists|already exists"):
        write(frame, dir_catalog, table, "append", save_mode="errorifexists")
    with pytest.raises(errors.InvalidInputError):
        lna_spark.save(frame, name, mode="upsert", impl="dir", properties=dir_catalog.properties)
    assert lance.dataset(str(dir_catalog.describe(table).location)).version == 1


def test_appending_other_columns_is_a_schema_error(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    table = dir_catalog.table("strict")
    write(session.range(0, 3), dir_catalog, table, "append")
    with pytest.raises(PySparkException, match="columns the table does not have"):
        write(session.range(0, 3).selectExpr("id", "id as extra"), dir_catalog, table, "append")


def test_bad_options_are_clear_errors(session: SparkSession, dir_catalog: Catalog) -> None:
    with pytest.raises(PySparkException, match="'impl' is required"):
        session.read.format(FORMAT).load("ns1.t").count()
    with pytest.raises(PySparkException, match="batch_size"):
        read(session, dir_catalog, ["ns1", "t"], batch_size="many").count()


# -- read(): the same partitions through mapInArrow ---------------------------------------------


def test_read_returns_every_type_as_the_data_source_does(
    session: SparkSession, dir_catalog: Catalog
) -> None:
    table = dir_catalog.table("fast")
    data = every_type(session, 120)
    write(data, dir_catalog, table, "append")
    more = every_type(session, 50).withColumn("id", col("id") + 120)
    write(more, dir_catalog, table, "append")
    through_source = read(session, dir_catalog, table)
    fast = read_fast(session, dir_catalog, table, batch_size=16)
    assert fast.schema == through_source.schema == data.schema
    assert rows(fast) == rows(through_source)
    assert fast.count() == 170
    assert "MapInArrow" in fast._jdf.queryExecution().executedPlan().toString()


def test_read_takes_columns_filter_and_version(session: SparkSession, dir_catalog: Catalog) -> None:
    table = dir_catalog.table("asked")
    data = every_type(session)
    write(data, dir_catalog, table, "append")
    write(every_type(session, 5).withColumn("id", col("id") + 100), dir_catalog, table, "append")
    fast = read_fast(
        session, dir_catalog, table, columns=["text", "id"], filter="i32 < 3", version=1
    )
    assert fast.columns == ["text", "id"]
    assert rows(fast) == rows(data.filter("i32 < 3").select("text", "id"))
    lance_filters = {
        "maybe IS NULL": "maybe is null",
        "text = 'row ''5'''": "text = 'row ''5'''",
        "nested.a = 3 OR flag": "nested.a = 3 or flag",
        "i32 IN (1, 2, 5) AND NOT flag": "i32 in (1, 2, 5) and not flag",
    }
    for lance_filter, spark_filter in lance_filters.items():
        got = read_fast(session, dir_catalog, table, filter=lance_filter, version=1)
        assert rows(got) == rows(data.filter(spark_filter)), lance_filter
    assert read_fast(session, dir_catalog, table).count() == 45


def test_read_pins_the_version_it_planned(session: SparkSession, dir_catalog: Catalog) -> None:
    table = dir_catalog.table("pinned")
    write(session.range(0, 3), dir_catalog, table, "append")
    planned = read_fast(session, dir_catalog, table)
    write(session.range(3, 10), dir_catalog, table, "append")
    assert planned.count() == 3
    assert read_fast(session, dir_catalog, table).count() == 10


def test_read_refuses_bad_input_on_the_driver(session: SparkSession, dir_catalog: Catalog) -> None:
    table = dir_catalog.table("picky")
    write(session.range(0, 3), dir_catalog, table, "append")
    with pytest.raises(errors.TableColumnNotFoundError, match="missing"):
        read_fast(session, dir_catalog, table, columns=["id", "missing"])
    with pytest.raises(errors.InvalidInputError, match="sequence of column names"):
        read_fast(session, dir_catalog, table, columns="id")
    for bad in ["", "   ", "nope > 1", "id >", "id = 'x'"]:
        with pytest.raises(errors.InvalidInputError, match="filter"):
            read_fast(session, dir_catalog, table, filter=bad)
    with pytest.raises(errors.InvalidInputError, match="batch_size"):
        read_fast(session, dir_catalog, table, batch_size=0)
    with pytest.raises(errors.TableVersionNotFoundError, match="version 9"):
        read_fast(session, dir_catalog, table, version=9)
    with pytest.raises(errors.TableNotFoundError):
        read_fast(session, dir_catalog, dir_catalog.table("absent"))
    with pytest.raises(errors.InvalidInputError, match="impl"):
        lna_spark.read(session, dir_catalog.name(table), impl=" ")
    assert lance.dataset(str(dir_catalog.describe(table).location)).version == 1


# -- catalog-managed versions (seed 003) --------------------------------------------------------


def test_iceberg_managed_tables_advance_the_catalog_version(
    session: SparkSession, tmp_path: Path
) -> None:
    with catalog_of("iceberg", tmp_path) as catalog:
        table = catalog.table("managed")
        with lna.connect_sync("iceberg", catalog.properties) as ns:
            ns.declare_table({"id": table, "properties": {"managed_by": "impl"}})
        write(session.range(0, 3), catalog, table, "append")
        write(session.range(3, 5), catalog, table, "append")
        described = catalog.describe(table)
        assert described.version == 2  # the catalog's current-snapshot-id moved with each commit
        assert read(session, catalog, table).count() == 5
        assert read(session, catalog, table, version="1").count() == 3


# -- inventory ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dir", "rest"])
def test_inventory_has_a_row_per_table(session: SparkSession, tmp_path: Path, kind: str) -> None:
    with catalog_of(kind, tmp_path) as catalog:
        with lna.connect_sync(catalog.impl, catalog.properties) as ns:
            ns.create_namespace({"id": [*catalog.parent, "deeper"]})
            ns.declare_table({"id": catalog.table("declared_only")})
        write(session.range(0, 7, numPartitions=2), catalog, catalog.table("a"), "append")
        write(session.range(0, 3), catalog, [*catalog.parent, "deeper", "b"], "append")

        found = {
            row["identifier"]: row.asDict()
            for row in lna_spark.inventory(session, catalog.impl, catalog.properties).collect()
        }
        prefix = ".".join(catalog.parent)
        assert set(found) == {
            f"{prefix}.a",
            f"{prefix}.deeper.b",
            f"{prefix}.declared_only",
        }
        a = found[f"{prefix}.a"]
        dataset = lance.dataset(a["location"])
        assert (a["rows"], a["version"], a["error"]) == (7, 1, None)
        assert a["fragments"] == len(dataset.get_fragments())
        assert a["size_bytes"] == sum(
            f.stat().st_size for f in (local_dir(a["location"]) / "data").iterdir()
        )
        assert '"name": "id"' in a["schema"]
        assert found[f"{prefix}.declared_only"]["rows"] is None
        assert found[f"{prefix}.deeper.b"]["rows"] == 3

        under = lna_spark.inventory(
            session, catalog.impl, catalog.properties, root=f"{prefix}.deeper"
        )
        assert [row["identifier"] for row in under.collect()] == [f"{prefix}.deeper.b"]


# -- secrets -----------------------------------------------------------------------------------


def test_credentials_stay_out_of_plans_and_errors(
    session: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with catalog_of("rest", tmp_path) as catalog:
        catalog.properties["header.x-api-key"] = CANARY
        table = catalog.table("quiet")
        write(session.range(0, 3), catalog, table, "append")
        frame = read(session, catalog, table)
        plans: list[str] = []
        capture: Callable[[str], None] = plans.append
        capture(frame._jdf.queryExecution().toString())
        frame.explain("extended")
        fast = read_fast(session, catalog, table)
        assert fast.count() == 3
        capture(fast._jdf.queryExecution().toString())
        fast.explain("extended")
        with pytest.raises(errors.TableNotFoundError) as missing:
            read_fast(session, catalog, catalog.table("missing"))
        capture(str(missing.value))
        with pytest.raises(PySparkException) as failure:
            read(session, catalog, catalog.table("missing")).count()
        capture(str(failure.value))
        out, err = capfd.readouterr()
        for text in [*plans, out, err]:
            assert CANARY not in text
        assert "missing" in str(failure.value)


def test_timestamps_keep_their_instant(session: SparkSession, dir_catalog: Catalog) -> None:
    table = dir_catalog.table("when")
    frame = session.createDataFrame(
        [(datetime.datetime(2024, 1, 2, 3, 4, 5, 678000),)], "ts timestamp"
    )
    write(frame, dir_catalog, table, "append")
    assert read(session, dir_catalog, table).collect()[0][0] == datetime.datetime(
        2024, 1, 2, 3, 4, 5, 678000
    )


def _moved_to(array: pa.Array, misalignment: int) -> pa.Array:
    """``array`` with every buffer copied to an address ``misalignment`` bytes off 64."""
    buffers: list[pa.Buffer | None] = []
    for buffer in array.buffers():
        if buffer is None:
            buffers.append(None)
            continue
        room = pa.allocate_buffer(buffer.size + 64 + misalignment)
        start = (64 - room.address % 64) % 64 + misalignment
        ctypes.memmove(room.address + start, buffer.address, buffer.size)
        buffers.append(room.slice(start, buffer.size))
    return pa.Array.from_buffers(array.type, len(array), buffers, null_count=array.null_count)


def test_only_misaligned_columns_are_copied_before_lance_writes(tmp_path: Path) -> None:
    """Spark's Arrow batches come off an IPC stream: 8-byte aligned buffers are used as they
    are, anything less is copied (Lance's Rust reader panics on it)."""
    from lance.fragment import write_fragments

    from lance_namespace_async.spark._source import _aligned

    columns = {
        "id": pa.array(range(1000), pa.int64()),
        "note": pa.array([f"n{i}" for i in range(1000)]),
        "at": pa.array(range(1000), pa.timestamp("us", tz="UTC")),
    }
    off_by_8 = pa.RecordBatch.from_arrays(
        [_moved_to(a, 8) for a in columns.values()], names=list(columns)
    )
    assert _aligned(off_by_8) is off_by_8
    off_by_4 = pa.RecordBatch.from_arrays(
        [_moved_to(columns["id"], 4), off_by_8.column(1), off_by_8.column(2)],
        names=list(columns),
    )
    fixed = _aligned(off_by_4)
    assert fixed.equals(off_by_4)
    assert all(b is None or b.address % 8 == 0 for c in fixed.columns for b in c.buffers())
    kept = [b.address for b in off_by_4.column(1).buffers() if b is not None]
    assert [b.address for b in fixed.column(1).buffers() if b is not None] == kept
    fragments = write_fragments(pa.Table.from_batches([fixed]), str(tmp_path / "t.lance"))
    assert sum(f.physical_rows for f in fragments) == 1000


def test_a_job_runs_on_the_active_session_of_a_spark_driver(
    session: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32's ``active`` cluster: a library inside a Spark driver runs jobs on that
    very session (in this process, no driver process of its own)."""
    from lance_namespace_async.pipeline import _jobs

    monkeypatch.setitem(_jobs.JOB_KINDS, "count_partitions", "job_bodies:count_partitions")
    lance.write_dataset(pa.table({"x": pa.array(range(40), pa.int64())}), str(tmp_path / "t.lance"))
    with lna.connect_sync("dir", {"root": str(tmp_path)}) as facade:
        job_id = facade.run(
            _jobs.start_job,
            facade.async_namespace,
            kind="count_partitions",
            table_id=["t"],
            request={"table": ["t"], "slices": 2},
            cluster="active",
        )
        final = lna.wait_for_job_sync(facade, job_id, timeout=120)
    assert final.status == "SUCCEEDED"
    record = json.loads((tmp_path / "_lna_jobs" / f"{job_id}.json").read_text())
    assert record["driver"]["pid"] == os.getpid()
    assert record["checkpoints"]["counted"] == "40"
