"""Computed columns and their backfill on Spark (issue 32): AlterTableAddColumns with
``computed``, AlterTableBackfillColumns' checks, and the job body that fills the column.

Servers: the directory backend needs none (real pylance on the test's temp directory);
the Iceberg project's REST reference server (conftest ``iceberg_reference``; tables
``managed_by=impl``, so every commit goes through the catalog, which pyiceberg checks);
moto's Glue server (``glue_fixtures.moto_glue``, tables on the local root). Spark: one
``local[2]`` session for the module. The job body runs through a :class:`JobControl`
built here the way the runner builds one (its progress, cancellation and checkpoints are
the test's), so these tests need no job store.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import lance
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import pipeline_places
from conftest import local_spark
from glue_fixtures import REGION, moto_glue
from iceberg_real_server import ReferenceIcebergServer, unique_name
from pipeline_places import ROWS, values
from pyspark.sql import SparkSession

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.pipeline import JobCancelled
from lance_namespace_async.pipeline import _backfill as backfill

EXPRESSION = "x * 3 + 1"


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with local_spark("lance-namespace-async-backfill-tests") as session:
        yield session


class Place(pipeline_places.Place):
    """A backend and a table, whose column ``y`` is a computed (SQL) one."""

    def add(self, name: str = "y", expression: str = EXPRESSION) -> int:
        added = self.call(
            "alter_table_add_columns",
            {"id": self.table, "new_columns": [{"name": name, "computed": expression}]},
        )
        return int(added.version)


def expected(dataset: Any, expression: str = EXPRESSION) -> dict[int, Any]:
    """``x`` -> the value pylance itself computes for ``expression``."""
    table = dataset.to_table(columns={"x": "x", "e": expression})
    return dict(zip(table.column("x").to_pylist(), table.column("e").to_pylist(), strict=True))


@pytest.fixture
def dir_place(tmp_path: Path) -> Place:
    place = Place("dir", {"root": str(tmp_path / "root")}, ["t"])
    place.create()
    return place


@pytest.fixture(scope="module")
def glue_endpoint() -> Iterator[str]:
    with moto_glue() as endpoint:
        yield endpoint


@pytest.fixture(params=["dir", "iceberg", "glue"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    root = str(tmp_path / "root")
    if request.param == "dir":
        found = Place("dir", {"root": root}, ["t"])
    elif request.param == "iceberg":
        server: ReferenceIcebergServer = request.getfixturevalue("iceberg_reference")
        name = unique_name("backfill")
        server.rest_client().create_namespace(name)
        properties = server.properties(root=root, managed_by="impl", iceberg_tooling="true")
        found = Place("iceberg", properties, ["wh", name, "t"])
        found.iceberg = (server, name)
    else:
        endpoint = request.getfixturevalue("glue_endpoint")
        database = unique_name("db")
        properties = {
            "endpoint": endpoint,
            "region": REGION,
            "root": root,
            "child_catalogs": "false",
            "access_key_id": "testing",
            "secret_access_key": "testing",
        }
        found = Place("glue", properties, [database, "t"])
        found.call("create_namespace", {"id": [database]})
    found.create()
    return found


# -- the whole path, on every backend ----------------------------------------------------------


def test_a_computed_column_backfilled_on_spark_equals_what_pylance_computes(
    place: Place, spark: SparkSession
) -> None:
    before = place.dataset().version
    added = place.add()
    assert added == before + 1
    described = place.call("describe_table", {"id": place.table, "load_detailed_metadata": True})
    fields = {f["name"]: f for f in described.to_dict()["schema"]["fields"]}
    assert fields["y"]["metadata"] == {backfill.COMPUTED_KEY: EXPRESSION}
    assert fields["y"]["type"] == {"type": "int64"}
    assert set(values(place.dataset()).values()) == {None}  # added, not computed

    job = place.plan(commit_granularity=2)
    assert job == {
        "id": place.table,
        "column": "y",
        "commit_granularity": 2,
        "expression": EXPRESSION,
    }
    seen: list[tuple[int, int]] = []
    control = place.control(spark, on_progress=lambda done, total: seen.append((done, total)))
    try:
        version = backfill.run_backfill(control, job)
    finally:
        control.close()

    assert version == added + 3  # five fragments, two a commit
    assert seen == [(0, 5), (2, 5), (4, 5), (5, 5)]
    assert control.checkpoints == {backfill.DONE: "0,1,2,3,4", backfill.READ_AT: str(added)}
    dataset = place.dataset()
    assert dataset.version == version
    assert values(dataset) == expected(dataset)
    assert len(values(dataset)) == ROWS
    if place.iceberg is not None:  # every commit went through the catalog
        server, name = place.iceberg
        loaded = server.rest_client().load_table((name, "t"))
        assert loaded.metadata.current_snapshot_id == version
        location = place.call("describe_table", {"id": place.table}).location
        assert lance.dataset(location).version == version  # storage holds no other commit


def test_where_fills_only_matching_rows_and_deleted_rows_stay_deleted(
    dir_place: Place, spark: SparkSession
) -> None:
    dataset = dir_place.dataset()
    dataset.delete("x % 7 = 0")  # deletion vectors in every fragment
    dir_place.add()
    control = dir_place.control(spark)
    version = backfill.run_backfill(control, dir_place.plan(where="x >= 25"))
    control.close()
    dataset = dir_place.dataset()
    assert dataset.version == version
    wanted = {x: (e if x >= 25 else None) for x, e in expected(dataset).items()}
    assert values(dataset) == wanted
    assert all(x % 7 for x in wanted)
    assert len(wanted) == ROWS - 8


def test_read_version_and_num_frags_bound_what_is_filled(
    dir_place: Place, spark: SparkSession
) -> None:
    added = dir_place.add()
    extra = pa.table({"x": pa.array([100, 101], pa.int64())})
    lance.write_dataset(extra, dir_place.dataset().uri, mode="append")  # not at read_version
    control = dir_place.control(spark)
    backfill.run_backfill(control, dir_place.plan(read_version=added, num_frags=3))
    control.close()
    dataset = dir_place.dataset()
    wanted = {x: (e if x < 30 else None) for x, e in expected(dataset).items()}
    assert values(dataset) == wanted  # the first three fragments of version `added` only


# -- groups without barriers, tasks sized to their cores ------------------------------------------


def test_the_next_groups_spark_job_runs_while_a_group_commits_and_commits_stay_in_order(
    dir_place: Place, spark: SparkSession
) -> None:
    added = dir_place.add()
    tracker = spark.sparkContext.statusTracker()
    seen_at_first_commit: list[list[int]] = []
    versions: list[int] = []

    def after_commit(state: Any) -> None:
        versions.append(dir_place.dataset().version)
        if seen_at_first_commit:
            return
        deadline = time.monotonic() + 10  # its thread submits it without waiting for ours
        while time.monotonic() < deadline:
            jobs = list(tracker.getJobIdsForGroup("lna-job-test-1"))
            if jobs:
                break
            time.sleep(0.05)
        seen_at_first_commit.append(jobs)

    control = dir_place.control(spark, on_checkpoint=after_commit)
    try:
        version = backfill.run_backfill(control, dir_place.plan(commit_granularity=2))
    finally:
        control.close()
    assert seen_at_first_commit[0], "group 1's Spark job was not submitted before group 0's commit"
    assert versions == [added + 1, added + 2, added + 3] == [*versions[:2], version]
    dataset = dir_place.dataset()
    assert values(dataset) == expected(dataset)
    for index, group in enumerate([[0, 1], [2, 3], [4]]):  # one DataReplacement per group
        replaced = {
            fragment.fragment_id
            for fragment in lance.dataset(dataset.uri, version=added + 1 + index).get_fragments()
            if any(f.path.startswith("bf-") for f in fragment.data_files())
        }
        assert replaced == set(range(group[-1] + 1))


def test_a_task_sizes_lances_pool_to_its_cores_unless_the_operator_did(
    spark: SparkSession,
) -> None:
    from lance_namespace_async.spark._threads import CPU_THREADS, size_lance_pools

    def in_a_task(preset: str | None) -> str | None:  # local: pickled whole for the worker
        """LANCE_CPU_THREADS after size_lance_pools, the worker's own value restored."""
        before = os.environ.pop(CPU_THREADS, None)
        try:
            if preset is not None:
                os.environ[CPU_THREADS] = preset  # as spark.executorEnv would set it
            size_lance_pools()
            return os.environ.get(CPU_THREADS)
        finally:
            os.environ.pop(CPU_THREADS, None)
            if before is not None:
                os.environ[CPU_THREADS] = before

    cpus = spark.sparkContext.getConf().get("spark.task.cpus", "1")
    run = spark.sparkContext.parallelize([None, "7"], 2).map(in_a_task)
    assert run.collect() == [cpus, "7"]
    before = os.environ.get(CPU_THREADS)
    size_lance_pools()  # outside a task (the driver): nothing changes
    assert os.environ.get(CPU_THREADS) == before


# -- cancellation, resumption, concurrent writers ------------------------------------------------


def test_a_cancelled_backfill_leaves_its_last_commit_and_a_resumed_one_completes(
    place: Place, spark: SparkSession
) -> None:
    added = place.add()
    job = place.plan(commit_granularity=2)
    cancel = {"asked": False}

    def after_commit(state: Any) -> None:
        cancel["asked"] = True  # asked once the first group is committed

    control = place.control(spark, is_cancelled=lambda: cancel["asked"], on_checkpoint=after_commit)
    with pytest.raises(JobCancelled):
        backfill.run_backfill(control, job)
    control.close()
    dataset = place.dataset()
    assert dataset.version == added + 1  # one commit, nothing of the second group
    filled = {x: y for x, y in values(dataset).items() if y is not None}
    assert filled == {x: e for x, e in expected(dataset).items() if x < 20}
    assert control.checkpoints == {backfill.DONE: "0,1", backfill.READ_AT: str(added)}
    assert place.dataset(added).to_table().num_rows == ROWS  # the previous one too

    resumed = place.control(spark, checkpoints=dict(control.checkpoints))
    version = backfill.run_backfill(resumed, job)
    resumed.close()
    assert version == added + 3  # fragments 0 and 1 were not computed again
    dataset = place.dataset()
    assert values(dataset) == expected(dataset)
    if place.iceberg is not None:
        server, name = place.iceberg
        loaded = server.rest_client().load_table((name, "t"))
        assert [entry.snapshot_id for entry in loaded.metadata.snapshot_log][-4:] == [
            added,
            added + 1,
            added + 2,
            added + 3,
        ]


def test_a_cancel_during_a_group_stops_its_spark_job_commits_nothing_and_leaves_no_files(
    tmp_path: Path, spark: SparkSession
) -> None:
    place = Place("dir", {"root": str(tmp_path / "root")}, ["t"])
    place.create(rows=1000)  # a hundred fragments, one group, one task after the other
    added = place.add()
    data = Path(place.dataset().uri.removeprefix("file://")) / "data"
    before = set(os.listdir(data))
    asked = iter([False])  # not before the group starts; from then on (the first watch), yes

    control = place.control(spark, is_cancelled=lambda: next(asked, True))
    started = time.perf_counter()
    with pytest.raises(JobCancelled):
        backfill.run_backfill(
            control, place.plan(commit_granularity=100, task_size=1, concurrency=1)
        )
    control.close()
    assert place.dataset().version == added  # nothing committed
    left = set(os.listdir(data)) - before
    assert not left, f"{len(left)} files of the stopped tasks left"
    assert time.perf_counter() - started < 60


def _during_backfill(place: Place, spark: SparkSession, write: Callable[[Any], None]) -> Any:
    """Run a two-commit backfill with ``write`` done on the table after its first commit."""
    place.add()
    job = place.plan(commit_granularity=3)
    wrote = []

    def after_commit(state: Any) -> None:
        if not wrote:
            wrote.append(True)
            write(place.dataset())

    control = place.control(spark, on_checkpoint=after_commit)
    try:
        return backfill.run_backfill(control, job)
    finally:
        control.close()


def test_rows_appended_during_a_backfill_stay_and_the_next_backfill_fills_them(
    place: Place, spark: SparkSession
) -> None:
    def append(dataset: Any) -> None:
        extra = pa.table({"x": pa.array([100, 101], pa.int64())})
        with place.facade() as facade:  # through the namespace: the catalog sees it
            lance.write_dataset(extra, namespace_client=facade, table_id=place.table, mode="append")

    version = _during_backfill(place, spark, append)
    dataset = place.dataset()
    assert dataset.version == version
    got = values(dataset)
    assert {x: got[x] for x in (100, 101)} == {100: None, 101: None}  # not in the read version
    assert {x: y for x, y in got.items() if x < ROWS} == {
        x: e for x, e in expected(dataset).items() if x < ROWS
    }
    control = place.control(spark)
    version = backfill.run_backfill(control, place.plan())
    control.close()
    dataset = place.dataset()
    assert values(dataset) == expected(dataset)
    if place.iceberg is not None:  # the rebased commits went through the catalog too
        server, name = place.iceberg
        loaded = server.rest_client().load_table((name, "t"))
        assert loaded.metadata.current_snapshot_id == version == dataset.version


def test_rows_deleted_during_a_backfill_stay_deleted(dir_place: Place, spark: SparkSession) -> None:
    _during_backfill(dir_place, spark, lambda dataset: dataset.delete("x IN (1, 45)"))
    dataset = dir_place.dataset()
    got = values(dataset)
    assert 1 not in got
    assert 45 not in got
    assert got == expected(dataset)


def test_rows_updated_during_a_backfill_preempt_it_and_the_table_keeps_its_last_commit(
    dir_place: Place, spark: SparkSession
) -> None:
    versions: list[int] = []

    def update(dataset: Any) -> None:
        dataset.update({"x": "x + 1000"}, where="x = 45")  # in the group not yet committed
        versions.append(dataset.version)

    with pytest.raises(errors.ConcurrentModificationError, match="backfill again"):
        _during_backfill(dir_place, spark, update)
    dataset = dir_place.dataset()
    assert dataset.version == versions[0]  # the update, after the first backfill commit
    referenced = {
        data_file.path
        for entry in dataset.versions()
        for fragment in lance.dataset(dataset.uri, version=entry["version"]).get_fragments()
        for data_file in fragment.data_files()
    }
    data = os.path.join(dataset.uri.removeprefix("file://"), "data")
    assert set(os.listdir(data)) == referenced  # none left over

    control = dir_place.control(spark)
    backfill.run_backfill(control, dir_place.plan())  # a new backfill reads the latest
    control.close()
    dataset = dir_place.dataset()
    assert values(dataset) == expected(dataset)


# -- refusals: typed, and nothing changed ---------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "error", "match"),
    [
        ([{"name": "y", "computed": "x +* 1"}], errors.InvalidInputError, "parsing"),
        ([{"name": "y", "computed": "nope + 1"}], errors.TableColumnNotFoundError, "nope"),
        ([{"name": "y", "computed": "sum(x)"}], errors.InvalidInputError, "computed"),
        ([{"name": "y", "computed": "x; DROP"}], errors.InvalidInputError, "one SQL"),
        ([{"name": "y", "computed": "NULL"}], errors.InvalidInputError, "no type"),
        ([{"name": "x", "computed": "x + 1"}], errors.InvalidInputError, "already has"),
        (
            [{"name": "y", "computed": "x + 1"}, {"name": "z", "expression": "x + 2"}],
            errors.InvalidInputError,
            "own AlterTableAddColumns",
        ),
        (
            [{"name": "y", "virtual_column": {"udf_name": "f", "udf": "ZGVm"}}],
            errors.UnsupportedOperationError,
            "pipeline_allow_udfs",
        ),
    ],
)
def test_a_refused_computed_column_changes_nothing(
    dir_place: Place, entries: list[dict[str, Any]], error: type[Exception], match: str
) -> None:
    before = dir_place.dataset()
    with pytest.raises(error, match=match) as raised:
        dir_place.call("alter_table_add_columns", {"id": dir_place.table, "new_columns": entries})
    if error is errors.UnsupportedOperationError:
        assert raised.value.code == 0  # type: ignore[attr-defined]
    after = dir_place.dataset()
    assert (after.version, after.schema) == (before.version, before.schema)


def test_an_unknown_cluster_is_refused_before_a_job_exists(dir_place: Place) -> None:
    dir_place.add()
    before = dir_place.dataset().version
    with pytest.raises(errors.InvalidInputError, match="unknown cluster"):
        dir_place.call(
            "alter_table_backfill_columns",
            {"id": dir_place.table, "column": "y", "cluster": "nowhere"},
        )
    assert dir_place.dataset().version == before
    assert not (Path(dir_place.properties["root"]) / "_lna_jobs").exists() or not any(
        (Path(dir_place.properties["root"]) / "_lna_jobs").iterdir()
    )


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        ({"column": "x"}, errors.InvalidInputError, "not computed"),
        ({"column": "nope"}, errors.TableColumnNotFoundError, "nope"),
        ({"where": "x >"}, errors.InvalidInputError, "backfill"),
        ({"where": "x + 1"}, errors.InvalidInputError, "condition"),
        ({"where": "zz > 1"}, errors.TableColumnNotFoundError, "zz"),
        ({"read_version": 99}, errors.TableVersionNotFoundError, "99"),
        ({"commit_granularity": 0}, errors.InvalidInputError, "commit_granularity"),
        ({"branch": "dev"}, errors.UnsupportedOperationError, "main branch"),
    ],
)
def test_a_refused_backfill_changes_nothing(
    dir_place: Place, fields: dict[str, Any], error: type[Exception], match: str
) -> None:
    dir_place.add()
    before = dir_place.dataset().version
    with pytest.raises(error, match=match):
        dir_place.plan(**fields)
    assert dir_place.dataset().version == before


# -- as a job, through the API (the runner on this module's SparkSession: cluster "active") ----


@pytest.fixture
def active(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> SparkSession:
    """This module's session as cluster ``active`` from every thread.

    PySpark's getActiveSession is per thread, and the runner looks from its own; until
    ``pipeline._clusters`` falls back to the process's session, the test says which it
    is (the session itself is real)."""
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: spark))
    return spark


def test_a_backfill_request_answers_a_job_that_fills_the_column(
    dir_place: Place, active: SparkSession
) -> None:
    from lance_namespace_async.pipeline._jobs import wait_for_job

    added = dir_place.add()
    seen: list[tuple[int, int]] = []

    async def backfilled() -> Any:
        async with lna.connect("dir", dir_place.properties) as ns:
            answer = await ns.alter_table_backfill_columns(
                {"id": dir_place.table, "column": "y", "commit_granularity": 2, "cluster": "active"}
            )
            assert answer.job_id.startswith("lna-job-")
            return await wait_for_job(
                ns, answer.job_id, timeout=120, on_progress=lambda d, t: seen.append((d, t))
            )

    final = anyio.run(backfilled)
    assert final.status == "SUCCEEDED"
    shown = final.properties.to_dict()
    assert int(shown["version"]) == added + 3
    assert seen[-1] == (5, 5)
    dataset = dir_place.dataset()
    assert dataset.version == added + 3
    assert values(dataset) == expected(dataset)


def test_a_job_cancelled_through_alter_transaction_resumes_when_asked_again(
    tmp_path: Path, active: SparkSession
) -> None:
    from lance_namespace_async.pipeline._jobs import wait_for_job

    place = Place("dir", {"root": str(tmp_path / "root")}, ["t"])
    place.create(rows=300)  # thirty fragments, one a commit: time to cancel mid-way
    added = place.add()
    request = {"id": place.table, "column": "y", "commit_granularity": 1, "cluster": "active"}

    async def cancelled_then_resumed() -> None:
        async with lna.connect("dir", place.properties) as ns:
            first = (await ns.alter_table_backfill_columns(request)).job_id
            while True:  # cancel once the first commit is in
                described = await ns.describe_transaction({"id": [first]})
                if int(described.properties.to_dict().get("fragments_done", "0")) >= 1:
                    break
                await anyio.sleep(0.05)
            await ns.alter_transaction(
                {"id": [first], "actions": [{"setStatusAction": {"status": "CANCELLED"}}]}
            )
            with pytest.raises(JobCancelled):
                await wait_for_job(ns, first, timeout=120)
            stopped = place.dataset()
            assert added < stopped.version < added + 30  # committed fragments stay, no others
            filled = {x: y for x, y in values(stopped).items() if y is not None}
            assert filled == {x: e for x, e in expected(stopped).items() if x in filled}
            assert len(filled) == 10 * (stopped.version - added)  # whole fragments only

            second = (await ns.alter_table_backfill_columns(request)).job_id
            final = await wait_for_job(ns, second, timeout=120)
            assert final.properties.to_dict()["resumed_from"] == first

    anyio.run(cancelled_then_resumed)
    dataset = place.dataset()
    assert dataset.version == added + 30  # each fragment committed once
    assert values(dataset) == expected(dataset)
