"""Clients' code on the pipeline's clusters (issue 32): ``virtual_column`` UDFs, opt-in.

Servers: the directory backend needs none (real pylance on the test's temp directory);
the Iceberg project's REST reference server (conftest ``iceberg_reference``; tables
``managed_by=impl``, so the backfill's commits go through the catalog). Spark: one
``local[2]`` session for the module; the backfill job's body runs through a
:class:`JobControl` built here the way the runner builds one, so the UDF runs in that
session's Python workers (separate processes, which the tests check).

A UDF travels as base64 of ``pyspark.cloudpickle.dumps(callable)``; the callables here
are closures (pickled by value, as a client's would be).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

import pipeline_places
from conftest import local_spark
from iceberg_real_server import ReferenceIcebergServer, unique_name
from pipeline_places import ROWS, values
from pyspark import cloudpickle
from pyspark.sql import SparkSession

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.pipeline import JobControl
from lance_namespace_async.pipeline import _backfill as backfill
from lance_namespace_async.pipeline import _udfs as udfs
from lance_namespace_async.pipeline import _views as views

#: UDFs allowed; a view's query analysed on this module's SparkSession (cluster
#: ``active``), so the module starts no driver process of its own
ALLOWED = {"pipeline_allow_udfs": "true", "spark_cluster.default": "active"}


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with local_spark("lance-namespace-async-udf-tests") as session:
        yield session


def payload(function: Any) -> str:
    # this module is not importable in Spark's workers: its functions travel by value,
    # as a client's would
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        return base64.b64encode(cloudpickle.dumps(function)).decode()
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def triple_plus_one() -> Callable[[pa.RecordBatch], pa.Array]:
    def udf(batch: pa.RecordBatch) -> pa.Array:
        return pc.add(pc.multiply(batch.column("x"), 3), 1)

    return udf


def entry(code: str, **changes: Any) -> dict[str, Any]:
    """An AddVirtualColumnEntry for column ``y`` (int64) over ``x``."""
    found: dict[str, Any] = {
        "input_columns": ["x"],
        "outputs": [
            {"column": "y", "struct_field": "", "data_type": {"type": "int64"}, "nullable": True}
        ],
        "image": "",
        "udf": code,
        "udf_name": "triple_plus_one",
        "udf_version": "1",
    }
    found.update(changes)
    return found


class Place(pipeline_places.Place):
    """A backend and a table, whose column ``y`` is a virtual (UDF) one."""

    def add(self, code: str, **changes: Any) -> int:
        added = self.call(
            "alter_table_add_columns",
            {
                "id": self.table,
                "new_columns": [{"name": "y", "virtual_column": entry(code, **changes)}],
            },
        )
        return int(added.version)

    def backfill(self, spark: SparkSession, **fields: Any) -> int:
        control = self.control(spark)
        try:
            return backfill.run_backfill(control, self.plan(**fields))
        finally:
            control.close()


@pytest.fixture
def dir_place(tmp_path: Path) -> Place:
    place = Place("dir", {"root": str(tmp_path / "root"), **ALLOWED}, ["t"])
    place.create()
    return place


@pytest.fixture(params=["dir", "iceberg"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    root = str(tmp_path / "root")
    if request.param == "dir":
        found = Place("dir", {"root": root, **ALLOWED}, ["t"])
    else:
        server: ReferenceIcebergServer = request.getfixturevalue("iceberg_reference")
        name = unique_name("udfs")
        server.rest_client().create_namespace(name)
        properties = server.properties(root=root, managed_by="impl", iceberg_tooling="true")
        properties.update(ALLOWED)
        found = Place("iceberg", properties, ["wh", name, "t"])
        found.iceberg = (server, name)
    found.create()
    return found


def test_a_virtual_column_is_filled_by_its_udf_in_spark_workers_only(
    place: Place, spark: SparkSession, tmp_path: Path
) -> None:
    """Added all-null with its UDF recorded; the backfill job runs the UDF in Spark's
    Python workers (the payload is never loaded in this process) and commits whole
    fragments, through the catalog on Iceberg."""
    loads = tmp_path / "loaded-in"

    def loaded(path: str) -> Callable[[pa.RecordBatch], pa.Array]:
        import os

        with open(path, "a") as out:
            out.write(f"{os.getpid()}\n")
        return triple_plus_one()

    class Marked:  # unpickling it records the process that loaded the UDF
        def __reduce__(self) -> Any:
            return (loaded, (str(loads),))

    before = place.dataset().version
    added = place.add(payload(Marked()))
    assert added == before + 1
    described = place.call("describe_table", {"id": place.table, "load_detailed_metadata": True})
    fields = {f["name"]: f for f in described.to_dict()["schema"]["fields"]}
    assert fields["y"]["type"] == {"type": "int64"}
    assert udfs.VIRTUAL_KEY in fields["y"]["metadata"]
    assert set(values(place.dataset()).values()) == {None}
    assert not loads.exists()  # checked and kept, never unpickled here

    version = place.backfill(spark, commit_granularity=2)

    assert version == added + 3  # five fragments, two a commit
    dataset = place.dataset()
    assert dataset.version == version
    assert values(dataset) == {x: 3 * x + 1 for x in range(ROWS)}
    workers = {int(pid) for pid in loads.read_text().split()}
    assert workers
    assert os.getpid() not in workers
    if place.iceberg is not None:  # every commit went through the catalog
        server, name = place.iceberg
        loaded_table = server.rest_client().load_table((name, "t"))
        assert loaded_table.metadata.current_snapshot_id == version


def test_udfs_are_refused_with_code_0_unless_the_operator_allows_them(dir_place: Place) -> None:
    off = {"pipeline_allow_udfs": "false"}
    before = dir_place.dataset()
    with pytest.raises(errors.UnsupportedOperationError, match="pipeline_allow_udfs") as raised:
        dir_place.call(
            "alter_table_add_columns",
            {
                "id": dir_place.table,
                "new_columns": [{"name": "y", "virtual_column": entry("AA==")}],
            },
            **off,
        )
    assert raised.value.code == 0
    after = dir_place.dataset()
    assert (after.version, after.schema) == (before.version, before.schema)

    # added while allowed, then the operator turned it off: its backfill is refused too
    dir_place.add(payload(triple_plus_one()))
    with pytest.raises(errors.UnsupportedOperationError, match="allow-udfs") as raised:
        dir_place.call(
            "alter_table_backfill_columns", {"id": dir_place.table, "column": "y"}, **off
        )
    assert raised.value.code == 0


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"udf": "not base64!"}, errors.InvalidInputError, "not base64"),
        ({"input_columns": ["nope"]}, errors.TableColumnNotFoundError, "nope"),
        ({"input_columns": []}, errors.InvalidInputError, "at least one"),
        ({"udf_backend": "docker"}, errors.InvalidInputError, "udf_backend"),
        ({"outputs": []}, errors.InvalidInputError, "exactly one output"),
        (
            {
                "outputs": [
                    {
                        "column": "y",
                        "struct_field": "",
                        "data_type": {"type": "nope"},
                        "nullable": True,
                    }
                ]
            },
            errors.InvalidInputError,
            "data_type",
        ),
    ],
)
def test_a_bad_virtual_column_changes_nothing(
    dir_place: Place, changes: dict[str, Any], error: type[Exception], match: str
) -> None:
    before = dir_place.dataset()
    with pytest.raises(error, match=match):
        dir_place.add(payload(triple_plus_one()), **changes)
    after = dir_place.dataset()
    assert (after.version, after.schema) == (before.version, before.schema)


def _raises_on_fragment_three() -> Callable[[pa.RecordBatch], pa.Array]:
    def udf(batch: pa.RecordBatch) -> pa.Array:
        if 30 in batch.column("x").to_pylist():
            raise ZeroDivisionError("the client's bug")
        return pc.multiply(batch.column("x"), 2)

    return udf


def _answers_strings() -> Callable[[pa.RecordBatch], Any]:
    def udf(batch: pa.RecordBatch) -> Any:
        return [f"v{x}" for x in batch.column("x").to_pylist()]

    return udf


def _answers_too_few() -> Callable[[pa.RecordBatch], Any]:
    def udf(batch: pa.RecordBatch) -> Any:
        return [1]

    return udf


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (_raises_on_fragment_three, "raised ZeroDivisionError: the client's bug"),
        (_answers_strings, "returned string; column 'y' is int64"),
        (_answers_too_few, "returned 1 values for 10 rows"),
    ],
)
def test_a_failing_udf_fails_the_job_typed_and_commits_nothing(
    dir_place: Place, spark: SparkSession, make: Callable[[], Any], match: str
) -> None:
    added = dir_place.add(payload(make()))
    data = Path(dir_place.properties["root"]) / "t.lance" / "data"
    data_before = {f.name for f in data.iterdir()}
    with pytest.raises(errors.InvalidInputError, match=match):
        dir_place.backfill(spark)  # one commit group: all five fragments or none
    dataset = dir_place.dataset()
    assert dataset.version == added
    assert set(values(dataset).values()) == {None}
    assert {f.name for f in data.iterdir()} == data_before  # what the tasks wrote was deleted


# -- udtf / chunker materialized views -----------------------------------------------------------

WORDS = json.dumps(
    {
        "fields": [
            {"name": "k", "type": {"type": "utf8"}, "nullable": True},
            {"name": "word", "type": {"type": "utf8"}, "nullable": True},
        ]
    }
)
LENGTHS = json.dumps(
    {
        "fields": [
            {"name": "k", "type": {"type": "utf8"}, "nullable": True},
            {"name": "n", "type": {"type": "int64"}, "nullable": True},
        ]
    }
)


def words() -> Callable[[dict[str, Any]], Any]:
    def chunker(row: dict[str, Any]) -> Any:
        return [{"k": row["k"], "word": word} for word in row["text"].split()]

    return chunker


def lengths() -> Callable[[pa.RecordBatch], Any]:
    def udtf(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch(
            {"k": batch.column("k"), "n": pc.utf8_length(batch.column("text")).cast(pa.int64())}
        )

    return udtf


def udtf_spec(kind: str, function: Any, **changes: Any) -> dict[str, Any]:
    code = payload(function)
    spec = {
        "kind": kind,
        "udtf": code,
        "udtf_sha": hashlib.sha256(base64.b64decode(code)).hexdigest(),
        "udtf_name": function.__name__,
        "udtf_version": "1",
        "input_columns": ["k", "text"],
    }
    spec.update(changes)
    return spec


def docs(*rows: tuple[str, str]) -> pa.Table:
    return pa.table({"k": [r[0] for r in rows], "text": [r[1] for r in rows]})


def refresh(place: Place, spark: SparkSession, view: list[str]) -> int:
    control = JobControl(
        job_id=f"lna-job-{uuid.uuid4().hex}",
        spark=spark,
        impl=place.impl,
        properties=place.properties,
    )
    try:
        return views.run_refresh(control, {"id": view})
    finally:
        control.close()


def read_view(place: Place, view: list[str]) -> list[tuple[Any, ...]]:
    with place.facade() as facade:
        rows = lance.dataset(namespace_client=facade, table_id=view).to_table().to_pylist()
    return sorted(tuple(row.values()) for row in rows)


def test_udtf_and_chunker_views_map_their_sources_rows_in_spark(
    place: Place, spark: SparkSession
) -> None:
    """A chunker (one row → many) and a udtf (batch → batch) view over the same source,
    refreshed twice after an insert; read back by pylance through the namespace."""
    space = place.table[:-1]
    source, chunks, sizes = [*space, "docs"], [*space, "chunks"], [*space, "sizes"]
    with place.facade() as facade:
        facade.create_table({"id": source}, docs(("a", "red fox"), ("b", "dog")))
        for view, kind, function, schema in (
            (chunks, "chunker", words(), WORDS),
            (sizes, "udtf", lengths(), LENGTHS),
        ):
            facade.create_materialized_view(
                {
                    "id": view,
                    "kind": kind,
                    "source_query": "SELECT k, text FROM docs",
                    "output_schema": schema,
                    "udtf_spec": udtf_spec(kind, function),
                    "with_no_data": True,
                }
            )
    assert read_view(place, chunks) == []
    refresh(place, spark, chunks)
    refresh(place, spark, sizes)
    assert read_view(place, chunks) == [("a", "fox"), ("a", "red"), ("b", "dog")]
    assert read_view(place, sizes) == [("a", 7), ("b", 3)]

    with place.facade() as facade:
        facade.insert_into_table({"id": source}, docs(("c", "one two three")))
        metadata = facade.describe_table({"id": chunks, "load_detailed_metadata": True})
    assert metadata.schema.metadata.additional_properties[views.KIND_KEY] == "chunker"
    refresh(place, spark, chunks)
    assert len(read_view(place, chunks)) == 6
    with place.facade() as facade:
        shown = facade.describe_table({"id": chunks, "load_detailed_metadata": True})
    recorded = json.loads(shown.schema.metadata.additional_properties[views.SOURCES_KEY])
    assert recorded == [{"id": source, "version": 2}]


def test_udtf_views_are_refused_with_code_0_unless_allowed(dir_place: Place) -> None:
    request = {
        "id": ["v"],
        "kind": "udtf",
        "source_query": "SELECT x FROM t",
        "output_schema": LENGTHS,
        "udtf_spec": udtf_spec("udtf", lengths(), input_columns=["x"]),
        "with_no_data": True,
    }
    off = {"pipeline_allow_udfs": "false"}
    with pytest.raises(errors.UnsupportedOperationError, match="allow-udfs") as raised:
        dir_place.call("create_materialized_view", request, **off)
    assert raised.value.code == 0
    dir_place.call("create_materialized_view", request)  # allowed: created
    with pytest.raises(errors.UnsupportedOperationError) as raised:
        dir_place.call("refresh_materialized_view", {"id": ["v"]}, **off)
    assert raised.value.code == 0


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"udtf_sha": "0" * 64}, "udtf_sha"),
        ({"input_columns": ["nope"]}, "nope"),
        ({"kind": "chunker"}, "udtf_spec.kind"),
        ({"udtf": "%%%"}, "not base64"),
    ],
)
def test_a_bad_udtf_view_is_refused_before_anything_is_written(
    dir_place: Place, changes: dict[str, Any], match: str
) -> None:
    with pytest.raises(errors.InvalidInputError, match=match):
        dir_place.call(
            "create_materialized_view",
            {
                "id": ["v"],
                "kind": "udtf",
                "source_query": "SELECT x FROM t",
                "output_schema": LENGTHS,
                "udtf_spec": {**udtf_spec("udtf", lengths(), input_columns=["x"]), **changes},
                "with_no_data": True,
            },
        )
    with dir_place.facade() as facade:
        assert facade.list_tables({"id": []}).tables == ["t"]


def test_a_udtf_answering_the_wrong_columns_fails_typed_and_keeps_the_view(
    dir_place: Place, spark: SparkSession
) -> None:
    def wrong(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch({"k": batch.column("x")})

    with dir_place.facade() as facade:
        facade.create_materialized_view(
            {
                "id": ["v"],
                "kind": "udtf",
                "source_query": "SELECT x FROM t",
                "output_schema": LENGTHS,
                "udtf_spec": udtf_spec("udtf", wrong, input_columns=["x"]),
                "with_no_data": True,
            }
        )
        before = lance.dataset(namespace_client=facade, table_id=["v"]).version
    with pytest.raises(errors.InvalidInputError, match="returned no column 'n'"):
        refresh(dir_place, spark, ["v"])
    assert read_view(dir_place, ["v"]) == []
    with dir_place.facade() as facade:
        assert lance.dataset(namespace_client=facade, table_id=["v"]).version == before


# -- a job whose Spark executor is killed -------------------------------------------------------


def _held_on_fragment_two(hold: str, started: str) -> Callable[[pa.RecordBatch], pa.Array]:
    """``3x+1``; on the third fragment (x 20..29) it first writes its worker's pid to
    ``started`` and waits while ``hold`` exists (60 s at most), so a test can kill it."""

    def udf(batch: pa.RecordBatch) -> pa.Array:
        import os
        import time

        if batch.num_rows and 20 <= pc.min(batch.column("x")).as_py() < 30:
            with open(started, "w") as out:
                out.write(str(os.getpid()))
            deadline = time.monotonic() + 60
            while os.path.exists(hold) and time.monotonic() < deadline:
                time.sleep(0.05)
        return pc.add(pc.multiply(batch.column("x"), 3), 1)

    return udf


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _descendants(pid: int) -> set[int]:
    """Every process under ``pid`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


@pytest.fixture
def active(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> SparkSession:
    """This module's session as cluster ``active`` seen from the runner's threads (PySpark's
    getActiveSession is per thread; the session itself is real)."""
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: spark))
    return spark


def test_a_job_whose_spark_executor_is_killed_is_failed_and_resumes(
    dir_place: Place, active: SparkSession, tmp_path: Path
) -> None:
    """The executor side of a running backfill: the Spark Python worker computing its
    third fragment (a ``pyspark.daemon`` process under this session's JVM, found by its
    command line) is SIGKILLed. local[N] runs a task once, so the job is FAILED with a
    typed error within seconds, never RUNNING for ever; the table keeps its last commit
    (whole fragments) and the same request again resumes from there."""
    import signal
    import time

    from lance_namespace_async.pipeline._jobs import wait_for_job

    hold, started = tmp_path / "hold", tmp_path / "started"
    hold.touch()
    added = dir_place.add(payload(_held_on_fragment_two(str(hold), str(started))))
    request = {"id": dir_place.table, "column": "y", "commit_granularity": 1, "cluster": "active"}

    async def killed_then_resumed() -> tuple[Any, Any, str]:
        async with lna.connect("dir", dir_place.properties) as ns:
            first = (await ns.alter_table_backfill_columns(request)).job_id
            deadline = time.monotonic() + 120
            while not (started.exists() and started.read_text()):
                assert time.monotonic() < deadline, "the third fragment's task never started"
                await anyio.sleep(0.05)
            worker = int(started.read_text())
            workers = {
                pid for pid in _descendants(os.getpid()) if "pyspark.daemon" in _command_line(pid)
            }
            assert worker in workers  # the task runs in a Spark Python worker of this JVM
            os.kill(worker, signal.SIGKILL)
            hold.unlink()  # a resumed run is not held
            killed_at = time.monotonic()
            while True:
                failed = await ns.describe_transaction({"id": [first]})
                if failed.status != "RUNNING":
                    break
                assert time.monotonic() - killed_at < 60, "still RUNNING after its executor died"
                await anyio.sleep(0.1)
            stopped = dir_place.dataset()
            second = (await ns.alter_table_backfill_columns(request)).job_id
            final = await wait_for_job(ns, second, timeout=120)
            return failed, stopped, final.properties.to_dict()["resumed_from"] == first

    failed, stopped, resumed = anyio.run(killed_then_resumed)
    shown = failed.properties.to_dict()
    assert failed.status == "FAILED"
    assert shown["error_code"] == str(errors.ServiceUnavailableError.code), shown
    assert "worker" in shown["error_message"].lower()
    # the first two fragments were committed, one each; nothing of the third
    assert stopped.version == added + 2
    assert values(stopped) == {x: (3 * x + 1 if x < 20 else None) for x in range(ROWS)}
    assert resumed
    dataset = dir_place.dataset()
    assert dataset.version == added + 5  # the resumed run committed the three left, once each
    assert values(dataset) == {x: 3 * x + 1 for x in range(ROWS)}


# -- lance-ns mv create of a UDF view ------------------------------------------------------------


def test_the_command_line_creates_udf_views_only_where_the_operator_allows_them(
    tmp_path: Path, active: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lance-ns mv create --kind chunker --udtf-pickle FILE`` (the CLI computes the
    payload's base64 and SHA-256) and ``--udtf-spec FILE`` (the protocol's JSON): refused
    with code 0 (exit 1) and nothing created unless the operator allows UDFs; allowed, the
    view is created and its first refresh run (cluster ``active``, this module's session)."""
    from lance_namespace_async._cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main

    root = tmp_path / "root"
    with lna.connect_sync("dir", {"root": str(root)}) as facade:
        facade.create_table({"id": ["docs"]}, docs(("a", "red fox"), ("b", "dog")))
    pickled = tmp_path / "words.pkl"
    pickled.write_bytes(base64.b64decode(payload(words())))
    spec_file = tmp_path / "lengths.json"
    spec_file.write_text(json.dumps(udtf_spec("udtf", lengths())))
    base = ["--impl", "dir", "--prop", f"root={root}", "-o", "json"]
    allowed = [
        *base,
        "--prop",
        "pipeline_allow_udfs=true",
        "--prop",
        "spark_cluster.default=active",
    ]
    query = ["--query", "SELECT k, text FROM docs"]
    chunker = [*query, "--schema", WORDS, "--kind", "chunker", "--udtf-pickle", str(pickled)]
    chunker += ["--input-columns", "k,text"]

    assert main(["mv", "create", "words", *chunker, *base]) == EXIT_ERROR
    assert "pipeline_allow_udfs" in capsys.readouterr().err
    sizes = ["mv", "create", "sizes", *query, "--schema", LENGTHS, "--udtf-spec", str(spec_file)]
    assert main([*sizes, *base]) == EXIT_ERROR
    capsys.readouterr()
    with lna.connect_sync("dir", {"root": str(root)}) as facade:
        assert facade.list_tables({"id": []}).tables == ["docs"]  # nothing was created

    # bad input is a usage error before anything is sent
    def create_w(*options: str) -> int:
        return main(["mv", "create", "w", *query, "--schema", WORDS, *options, *allowed])

    assert create_w("--kind", "chunker") == EXIT_USAGE
    assert "--udtf-spec or --udtf-pickle" in capsys.readouterr().err
    assert create_w("--kind", "query", "--udtf-pickle", str(pickled)) == EXIT_USAGE
    capsys.readouterr()
    (tmp_path / "bad.json").write_text("[1]")
    assert create_w("--udtf-spec", str(tmp_path / "bad.json")) == EXIT_USAGE
    capsys.readouterr()

    # allowed: created (empty; refreshing a UDF view is tested above, through the API)
    assert main(["mv", "create", "words", *chunker, "--with-no-data", *allowed]) == EXIT_OK
    assert main([*sizes, "--with-no-data", *allowed]) == EXIT_OK
    capsys.readouterr()
    place = Place("dir", {"root": str(root), **ALLOWED}, ["docs"])
    for view, kind, function in (("words", "chunker", words()), ("sizes", "udtf", lengths())):
        assert read_view(place, [view]) == []
        described = place.call("describe_table", {"id": [view], "load_detailed_metadata": True})
        metadata = described.to_dict()["schema"]["metadata"]
        assert metadata["materialized_view.kind"] == kind
        assert udtf_spec(kind, function)["udtf_sha"] in json.dumps(metadata)  # the payload kept
