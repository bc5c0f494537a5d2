"""Jobs (issue 32): started on a named Spark cluster, described, cancelled, resumed, and
reported failed when their driver is gone, on every storage backend.

Servers and processes: real pylance tables in temporary directories; a real Spark driver
process on ``local[2]`` started by the runner (shared by the module, so the JVM starts
once); the Iceberg project's REST catalog server (conftest ``iceberg_reference``) and
Glue on moto's server (tables and job records in its S3) for catalog backends;
``lance-ns serve`` as a real process (tests/serve_process.py) answering pylance's own
RestNamespace. The job bodies (tests/job_bodies.py) do real Spark work:
they count a table's rows slice by slice through our Spark data source.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from glue_fixtures import REGION, moto_glue, s3_client
from iceberg_real_server import ReferenceIcebergServer, unique_name
from serve_process import lance_ns_serve
from test_kit import aws_environment

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.models import (
    AlterTransactionAction,
    AlterTransactionRequest,
    AlterTransactionSetProperty,
    AlterTransactionSetStatus,
    AlterTransactionUnsetProperty,
    DescribeTransactionRequest,
)
from lance_namespace_async.pipeline import JobCancelled, _clusters, _jobs

ROWS = 600


@pytest.fixture(scope="module", autouse=True)
def kinds() -> Iterator[None]:
    """The tests' job kinds, and the drivers stopped once the module is done."""
    _jobs.JOB_KINDS["count_partitions"] = "job_bodies:count_partitions"
    _jobs.JOB_KINDS["fail"] = "job_bodies:fail"
    try:
        yield
    finally:
        del _jobs.JOB_KINDS["count_partitions"], _jobs.JOB_KINDS["fail"]
        _clusters.shutdown_drivers()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory catalog with table ``t`` (x = 0..599)."""
    root = tmp_path_factory.mktemp("jobs")
    lance.write_dataset(pa.table({"x": pa.array(range(ROWS), pa.int64())}), str(root / "t.lance"))
    return root


def props(root: Path, **extra: str) -> dict[str, str]:
    return {"root": str(root), "job_heartbeat_timeout": "20", **extra}


def describe(facade: lna.SyncLanceNamespace, *ids: str) -> Any:
    return facade.describe_transaction(DescribeTransactionRequest(id=list(ids)))


def shown(answer: Any) -> dict[str, str]:
    return dict(answer.properties.to_dict())


def start(facade: lna.SyncLanceNamespace, table: list[str], **request: Any) -> str:
    body = {"table": table, "slices": 3, "pause": 0, **request}
    cluster = body.pop("cluster", None)
    job_id: str = facade.run(
        _jobs.start_job,
        facade.async_namespace,
        kind=body.pop("kind", "count_partitions"),
        table_id=table,
        request=body,
        cluster=cluster,
    )
    return job_id


def wait_until(facade: lna.SyncLanceNamespace, job_id: str, predicate: Any) -> dict[str, str]:
    deadline = time.monotonic() + 180
    while True:
        answer = describe(facade, job_id)
        found = {"status": answer.status, **shown(answer)}
        if predicate(found):
            return found
        assert time.monotonic() < deadline, f"job never got there: {found}"
        time.sleep(0.2)


def cancel(facade: lna.SyncLanceNamespace, *ids: str) -> Any:
    action = AlterTransactionAction(set_status_action=AlterTransactionSetStatus(status="CANCELLED"))
    return facade.alter_transaction(AlterTransactionRequest(id=list(ids), actions=[action]))


@pytest.fixture(scope="module")
def finished(catalog: Path) -> tuple[str, list[tuple[int, int]], Any]:
    """A count job run to its end on table ``t``: its id, the progress seen, the answer."""
    seen: list[tuple[int, int]] = []
    with lna.connect_sync("dir", props(catalog)) as facade:
        job_id = start(facade, ["t"])
        assert describe(facade, job_id).status in ("QUEUED", "RUNNING")
        final = _jobs.wait_for_job_sync(
            facade, job_id, on_progress=lambda done, total: seen.append((done, total))
        )
    return job_id, seen, final


def test_a_job_runs_on_spark_reports_progress_and_outlives_its_backend(
    catalog: Path, finished: tuple[str, list[tuple[int, int]], Any]
) -> None:
    job_id, seen, final = finished
    assert re.fullmatch("lna-job-[0-9a-f]{32}", job_id)
    assert final.status == "SUCCEEDED"
    assert shown(final)["version"] == str(lance.dataset(str(catalog / "t.lance")).version)
    assert seen == sorted(seen)
    assert seen[-1] == (3, 3)
    # a new backend instance, and another process, describe it from its record
    with lna.connect_sync("dir", props(catalog)) as again:
        answer = describe(again, "t", job_id)  # the table, then the job, as pylance addresses it
        assert answer.status == "SUCCEEDED"
        assert shown(answer)["fragments_done"] == "3"
        assert shown(answer)["kind"] == "count_partitions"
        with pytest.raises(errors.TransactionNotFoundError):
            describe(again, "other_table", job_id)
    script = (
        "import sys, lance_namespace_async as lna\n"
        "from lance_namespace_async.models import DescribeTransactionRequest as R\n"
        "with lna.connect_sync('dir', {'root': sys.argv[1]}) as ns:\n"
        "    print(ns.describe_transaction(R(id=[sys.argv[2]])).status)\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", script, str(catalog), job_id], capture_output=True, text=True
    )
    assert other.stdout.strip() == "SUCCEEDED", other.stderr
    record = json.loads((catalog / "_lna_jobs" / f"{job_id}.json").read_text())
    assert record["checkpoints"]["counted"] == str(ROWS)


def test_a_cancelled_job_stops_and_a_new_run_resumes_from_its_checkpoints(catalog: Path) -> None:
    with lna.connect_sync("dir", props(catalog)) as facade:
        job_id = start(facade, ["t"], slices=4, pause=1.5)
        wait_until(facade, job_id, lambda found: found.get("fragments_done") == "1")
        answer = cancel(facade, job_id)
        assert shown(answer)["cancel_requested"] == "true"
        with pytest.raises(JobCancelled):
            _jobs.wait_for_job_sync(facade, job_id, timeout=120)
        stopped = shown(describe(facade, job_id))
        assert describe(facade, job_id).status == "CANCELLED"
        assert int(stopped["fragments_done"]) < 4
        # cancelling it again: it already finished
        with pytest.raises(errors.ConcurrentModificationError):
            cancel(facade, job_id)
        resumed = start(facade, ["t"], slices=4, pause=1.5)
        final = _jobs.wait_for_job_sync(facade, resumed, timeout=180)
    assert shown(final)["resumed_from"] == job_id
    record = json.loads((catalog / "_lna_jobs" / f"{resumed}.json").read_text())
    # the resumed run counted only the slices left, and the total is every row once
    assert record["checkpoints"]["counted"] == str(ROWS)


def test_a_failing_body_is_failed_with_its_typed_error(catalog: Path) -> None:
    with lna.connect_sync("dir", props(catalog)) as facade:
        job_id = start(facade, ["t"], kind="fail", column="nope")
        with pytest.raises(errors.TableColumnNotFoundError, match="nope"):
            _jobs.wait_for_job_sync(facade, job_id, timeout=120)
        found = shown(describe(facade, job_id))
    assert describe_status(catalog, job_id) == "FAILED"
    assert found["error_code"] == str(errors.TableColumnNotFoundError.code)
    assert found["error_type"] == "TableColumnNotFoundError"


def test_a_new_job_prunes_finished_records_past_retention(catalog: Path) -> None:
    """Starting a job deletes up to PRUNED_PER_JOB finished records older than
    ``job_retention_days`` (and never the new job's own, or a recent one's). Placed
    before the test that kills the module's driver, so it runs on the warm one."""
    from lance_namespace_async.pipeline._store import JobStore

    store = JobStore(str(catalog))
    then = int((time.time() - 40 * 86_400) * 1000)
    old = f"lna-job-{uuid.uuid4().hex}"
    store.write(
        {
            "job_id": old,
            "kind": "count_partitions",
            "table_id": ["t"],
            "status": "SUCCEEDED",
            "created_at": then,
            "heartbeat": then,
            "finished_at": then,
        }
    )
    os.utime(catalog / "_lna_jobs" / f"{old}.json", (then / 1000, then / 1000))
    with lna.connect_sync("dir", props(catalog, job_retention_days="30")) as facade:
        job_id = start(facade, ["t"], slices=1)
        with pytest.raises(errors.TransactionNotFoundError):
            describe(facade, old)
        assert _jobs.wait_for_job_sync(facade, job_id, timeout=180).status == "SUCCEEDED"


def describe_status(root: Path, job_id: str) -> str:
    with lna.connect_sync("dir", props(root)) as facade:
        return str(describe(facade, job_id).status)


def test_an_unknown_cluster_is_invalid_input_and_starts_nothing(tmp_path: Path) -> None:
    with lna.connect_sync("dir", props(tmp_path, **{"spark_cluster.big": "local[1]"})) as facade:
        with pytest.raises(errors.InvalidInputError, match=r"unknown cluster 'huge'.*big"):
            start(facade, ["t"], cluster="huge")
        with pytest.raises(errors.InvalidInputError, match="unknown job kind"):
            start(facade, ["t"], kind="mine")
    assert not (tmp_path / "_lna_jobs").exists()


def test_unknown_and_malformed_job_ids(tmp_path: Path) -> None:
    with lna.connect_sync("dir", props(tmp_path)) as facade:
        with pytest.raises(errors.TransactionNotFoundError) as missing:
            describe(facade, "lna-job-" + "0" * 32)
        assert missing.value.code == 10
        with pytest.raises(errors.InvalidInputError):
            describe(facade, "lna-job-../../etc/passwd")
        with pytest.raises(errors.TransactionNotFoundError):
            cancel(facade, "lna-job-" + "1" * 32)


def test_properties_are_set_and_unset_and_the_job_own_ones_are_refused(
    catalog: Path, finished: tuple[str, list[tuple[int, int]], Any]
) -> None:
    job_id = finished[0]

    def alter(*actions: AlterTransactionAction) -> Any:
        return facade.alter_transaction(AlterTransactionRequest(id=[job_id], actions=list(actions)))

    with lna.connect_sync("dir", props(catalog)) as facade:
        put = AlterTransactionAction(
            set_property_action=AlterTransactionSetProperty(key="owner", value="etl")
        )
        assert shown(alter(put))["owner"] == "etl"
        again = AlterTransactionAction(
            set_property_action=AlterTransactionSetProperty(key="owner", value="x", mode="FAIL")
        )
        with pytest.raises(errors.InvalidInputError, match="already set"):
            alter(again)
        own = AlterTransactionAction(
            set_property_action=AlterTransactionSetProperty(key="version", value="99")
        )
        with pytest.raises(errors.InvalidInputError, match="job's own"):
            alter(put, own)  # nothing applied: every action is checked first
        running = AlterTransactionAction(
            set_status_action=AlterTransactionSetStatus(status="RUNNING")
        )
        with pytest.raises(errors.InvalidInputError, match="only be set to CANCELLED"):
            alter(running)
        drop = AlterTransactionAction(
            unset_property_action=AlterTransactionUnsetProperty(key="owner")
        )
        assert "owner" not in shown(alter(drop))
        assert shown(describe(facade, job_id))["version"] != "99"


def test_a_stale_heartbeat_of_a_driver_elsewhere_is_failed(tmp_path: Path) -> None:
    """A driver on another host cannot be probed: its record's age decides."""
    job_id = "lna-job-" + "2" * 32
    folder = tmp_path / "_lna_jobs"
    folder.mkdir()
    record = {
        "job_id": job_id,
        "kind": "count_partitions",
        "table_id": ["t"],
        "status": "RUNNING",
        "created_at": 1,
        "heartbeat": int(time.time() * 1000) - 3000,
        "driver": {"host": "elsewhere.invalid", "pid": 1},
    }
    (folder / f"{job_id}.json").write_text(json.dumps(record))
    with lna.connect_sync("dir", props(tmp_path, job_heartbeat_timeout="10")) as facade:
        assert describe(facade, job_id).status == "RUNNING"
    with lna.connect_sync("dir", props(tmp_path, job_heartbeat_timeout="2")) as facade:
        answer = describe(facade, job_id)
    assert answer.status == "FAILED"
    assert "no heartbeat for 2s" in shown(answer)["error_message"]


def test_a_job_on_the_iceberg_reference_catalog(
    iceberg_reference: ReferenceIcebergServer, tmp_path: Path
) -> None:
    place = unique_name("jobs")
    iceberg_reference.rest_client().create_namespace(place)
    properties = iceberg_reference.properties(root=str(tmp_path / "root"), managed_by="impl")
    with lna.connect_sync("iceberg", properties) as facade:
        table = ["wh", place, "t"]  # [warehouse, namespace, table]
        lance.write_dataset(
            pa.table({"x": pa.array(range(30), pa.int64())}),
            namespace_client=facade,
            table_id=table,
        )
        job_id = start(facade, table, slices=2)
        final = _jobs.wait_for_job_sync(facade, job_id, timeout=180)
        assert final.status == "SUCCEEDED"
        assert describe(facade, *table, job_id).status == "SUCCEEDED"
    assert (tmp_path / "root" / "_lna_jobs" / f"{job_id}.json").exists()


def test_a_job_on_glue_keeps_its_record_on_s3() -> None:
    """Glue on moto's server, every table and the job records in moto's S3."""
    with aws_environment(), moto_glue() as endpoint:
        s3_client(endpoint).create_bucket(Bucket="jobs")
        properties = {
            "endpoint": endpoint,
            "region": REGION,
            "child_catalogs": "false",
            # the job's driver connects with these, not with the test's environment
            "access_key_id": "testing",
            "secret_access_key": "testing",
            "root": "s3://jobs/root",
            "storage.aws_endpoint": endpoint,
            "storage.aws_access_key_id": "testing",
            "storage.aws_secret_access_key": "testing",
            "storage.aws_region": REGION,
            "storage.allow_http": "true",
        }
        with lna.connect_sync("glue", properties) as facade:
            # moto's state is one per process: a name of its own, never another module's
            database = f"jobs_{uuid.uuid4().hex[:8]}"
            facade.create_namespace({"id": [database]})
            table = [database, "t"]
            lance.write_dataset(
                pa.table({"x": pa.array(range(20), pa.int64())}),
                namespace_client=facade,
                table_id=table,
            )
            job_id = start(facade, table, slices=2)
            final = _jobs.wait_for_job_sync(facade, job_id, timeout=180)
        assert final.status == "SUCCEEDED"
        with lna.connect_sync("glue", properties) as again:
            assert describe(again, *table, job_id).status == "SUCCEEDED"
            with pytest.raises(errors.ConcurrentModificationError):
                cancel(again, job_id)
        listed = s3_client(endpoint).list_objects_v2(Bucket="jobs", Prefix="root/_lna_jobs/")
        keys = {item["Key"] for item in listed.get("Contents", [])}
        assert f"root/_lna_jobs/{job_id}.json" in keys
        record = s3_client(endpoint).get_object(Bucket="jobs", Key=f"root/_lna_jobs/{job_id}.json")
        kept = record["Body"].read().decode()
        assert json.loads(kept)["checkpoints"]["counted"] == "20"
        assert "testing" not in kept  # the storage keys never reach a record


def test_pylance_describes_a_job_through_lance_ns_serve(
    catalog: Path, finished: tuple[str, list[tuple[int, int]], Any]
) -> None:
    import lance_namespace
    from lance_namespace import DescribeTransactionRequest as PeerDescribe

    job_id = finished[0]
    with lance_ns_serve({"root": str(catalog)}) as server:
        client = lance_namespace.connect("rest", {"uri": server.uri})
        answer = client.describe_transaction(PeerDescribe(id=[job_id]))
        assert answer.status == "SUCCEEDED"
        assert answer.properties["kind"] == "count_partitions"
        assert answer.properties["fragments_done"] == "3"
        with pytest.raises(Exception, match="no job"):
            client.describe_transaction(PeerDescribe(id=["lna-job-" + "3" * 32]))


def test_a_job_whose_driver_was_killed_is_failed(catalog: Path) -> None:
    with lna.connect_sync("dir", props(catalog)) as facade:
        job_id = start(facade, ["t"], slices=50, pause=1)
        wait_until(facade, job_id, lambda found: found["status"] == "RUNNING")
        pid = json.loads((catalog / "_lna_jobs" / f"{job_id}.json").read_text())["driver"]["pid"]
        os.killpg(pid, signal.SIGKILL)
        before = time.monotonic()
        found = wait_until(facade, job_id, lambda found: found["status"] != "RUNNING")
        assert time.monotonic() - before < 5
        assert found["status"] == "FAILED"
        assert found["error_code"] == str(errors.ServiceUnavailableError.code)
        assert "driver is gone" in found["error_message"]


def test_a_refresh_served_by_lance_ns_serve_is_a_job_of_the_server(tmp_path: Path) -> None:
    """Through ``lance-ns serve`` (storage workers on, as by default): the server queues
    the job on its own driver, on the cluster ``--spark-cluster`` names; our rest backend
    waits for it, pylance's RestNamespace describes it."""
    import lance_namespace
    from lance_namespace import DescribeTransactionRequest as PeerDescribe

    lance.write_dataset(
        pa.table({"k": ["a", "a", "b"], "v": pa.array([1, 2, 5], pa.int64())}),
        str(tmp_path / "orders.lance"),
    )
    schema = {
        "fields": [
            {"name": "k", "type": {"type": "utf8"}, "nullable": True},
            {"name": "total", "type": {"type": "int64"}, "nullable": True},
        ]
    }
    with (
        lance_ns_serve({"root": str(tmp_path)}, "--spark-cluster", "small=local[1]") as server,
        # CreateMaterializedView analyses its query in the default cluster's driver (a
        # child process of the server): its first call waits for that JVM to start
        lna.connect_sync(
            "rest", {"uri": server.uri, "read_timeout": "240000", "call_timeout": "240000"}
        ) as remote,
    ):
        remote.create_materialized_view(
            {
                "id": ["by_k"],
                "kind": "query",
                "source_query": "SELECT k, SUM(v) AS total FROM orders GROUP BY k",
                "output_schema": json.dumps(schema),
                "with_no_data": True,
            }
        )
        with pytest.raises(errors.InvalidInputError, match="unknown cluster 'huge'"):
            remote.refresh_materialized_view({"id": ["by_k"], "cluster": "huge"})
        job_id = remote.refresh_materialized_view({"id": ["by_k"], "cluster": "small"}).job_id
        final = lna.wait_for_job_sync(remote, job_id, timeout=300)
        assert final.status == "SUCCEEDED"
        assert shown(final)["cluster"] == "small"
        peer = lance_namespace.connect("rest", {"uri": server.uri})
        assert peer.describe_transaction(PeerDescribe(id=[job_id])).status == "SUCCEEDED"
        view = lance.dataset(namespace_client=remote, table_id=["by_k"])
        assert view.version == int(shown(final)["version"])
        rows = view.to_table().to_pylist()
    assert sorted((row["k"], row["total"]) for row in rows) == [("a", 3), ("b", 5)]


def test_the_command_line_describes_waits_for_and_cancels_jobs(
    catalog: Path,
    finished: tuple[str, list[tuple[int, int]], Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lance_namespace_async._cli import EXIT_CONFLICT, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, main

    job_id = finished[0]
    connection = ["--impl", "dir", "--prop", f"root={catalog}", "-o", "json"]
    assert main(["jobs", "describe", job_id, "--table", "t", *connection]) == EXIT_OK
    described = json.loads(capsys.readouterr().out)
    assert described["status"] == "SUCCEEDED"
    assert described["properties"]["fragments_done"] == "3"
    assert main(["jobs", "wait", job_id, "--no-progress", *connection]) == EXIT_OK
    waited = json.loads(capsys.readouterr().out)
    assert waited["job_id"] == job_id
    assert waited["properties"]["version"] == finished[2].properties["version"]
    assert main(["jobs", "cancel", job_id, *connection]) == EXIT_CONFLICT
    assert "already finished" in capsys.readouterr().err
    unknown = "lna-job-" + "4" * 32
    assert main(["jobs", "describe", unknown, *connection]) == EXIT_NOT_FOUND
    capsys.readouterr()
    served = ["serve", "--impl", "dir", "--prop", f"root={catalog}", "--port", "1"]
    assert main([*served, "--spark-cluster", "no-master"]) == EXIT_USAGE
    assert "NAME=MASTER" in capsys.readouterr().err
