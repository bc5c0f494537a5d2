"""Job records are kept ``job_retention_days`` (issue 32): finished ones older than that
are deleted, a batch at each new job and all at once by ``lance-ns jobs prune``; a running
job's record never is.

No server and no Spark: records are written through the real JobStore under a temporary
directory root (the same files a driver writes), aged by setting their times; the
directory backend describes them. Pruning at each new job (through a real driver) is
tested in tests/test_pipeline_jobs.py.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.models import DescribeTransactionRequest
from lance_namespace_async.pipeline import _jobs
from lance_namespace_async.pipeline._store import FOLDER, JobStore

DAY_MS = 86_400_000


def record(
    store: JobStore, status: str, age_days: float, *, pid: int | None = None, **extra: Any
) -> str:
    """A job's record as its driver leaves it, last written ``age_days`` ago."""
    job_id = f"lna-job-{uuid.uuid4().hex}"
    at = int(time.time() * 1000 - age_days * DAY_MS)
    found: dict[str, Any] = {
        "job_id": job_id,
        "kind": "backfill_columns",
        "table_id": ["t"],
        "cluster": "default",
        "request": {},
        "status": status,
        "created_at": at - 1000,
        "heartbeat": at,
        "driver": {"host": os.uname().nodename, "pid": pid or os.getpid()},
        "checkpoints": {},
        **extra,
    }
    if status in ("SUCCEEDED", "FAILED", "CANCELLED"):
        found["finished_at"] = at
    store.write(found)
    aged(store_folder(store) / f"{job_id}.json", age_days)
    return job_id


def store_folder(store: JobStore) -> Path:
    return Path(store._files.folder)  # the local folder JobStore writes (a local root)


def aged(path: Path, days: float) -> None:
    then = time.time() - days * 86_400
    os.utime(path, (then, then))


def exists(root: Path, job_id: str) -> bool:
    with lna.connect_sync("dir", {"root": str(root)}) as facade:
        try:
            facade.describe_transaction(DescribeTransactionRequest(id=[job_id]))
        except errors.TransactionNotFoundError:
            return False
        return True


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(str(tmp_path))


def test_finished_records_past_retention_go_and_the_others_stay(
    tmp_path: Path, store: JobStore
) -> None:
    old = {status: record(store, status, 40) for status in ("SUCCEEDED", "FAILED", "CANCELLED")}
    store.request_cancel(old["CANCELLED"])
    store.alter_properties(old["SUCCEEDED"], {"owner": "etl"}, [])
    recent = record(store, "SUCCEEDED", 10)
    # a running job: its driver (this process) is alive and stamps it; its record's file
    # time is made old so it is a candidate, and it must still stay
    running = record(store, "RUNNING", 0)
    aged(store_folder(store) / f"{running}.json", 40)
    # a job whose driver died 40 days ago reads FAILED: it goes
    dead = record(store, "RUNNING", 40, pid=2**22 + 12345)
    stray = store_folder(store) / ".tmp-crashed"
    stray.write_bytes(b"{")
    aged(stray, 40)

    pruned = _jobs.prune(store, 30, 20)

    assert sorted(pruned) == sorted([*old.values(), dead])
    for job_id in pruned:
        assert not exists(tmp_path, job_id)
        assert not list(store_folder(store).glob(f"{job_id}.*"))  # cancel, props, lock too
    assert exists(tmp_path, recent)
    assert exists(tmp_path, running)
    assert not stray.exists()
    assert _jobs.prune(store, 30, 20) == []  # nothing more to do
    assert _jobs.prune(store, 0, 20) == []  # 0 days: keep everything
    assert _jobs.prune(store, 5, 20) == [recent]


def test_a_prune_reads_at_most_its_limit_oldest_first(store: JobStore) -> None:
    ages = [31 + index for index in range(5)]
    ids = {age: record(store, "SUCCEEDED", age) for age in ages}
    assert _jobs.prune(store, 30, 20, limit=2) == [ids[35], ids[34]]
    assert _jobs.prune(store, 30, 20, limit=2) == [ids[33], ids[32]]
    assert _jobs.prune(store, 30, 20, limit=2) == [ids[31]]


def test_the_retention_property_is_checked_and_prune_jobs_uses_it(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidInputError, match="job_retention_days"):
        lna.connect_sync("dir", {"root": str(tmp_path), "job_retention_days": "-1"})
    store = JobStore(str(tmp_path))
    week_old = record(store, "FAILED", 7)
    month_old = record(store, "FAILED", 31)

    def prune(properties: dict[str, str], **given: Any) -> list[str]:
        with lna.connect_sync("dir", {"root": str(tmp_path), **properties}) as facade:
            pruned: list[str] = facade.run(_jobs.prune_jobs, facade.async_namespace, **given)
            return pruned

    assert prune({"job_retention_days": "0"}) == []
    with pytest.raises(errors.InvalidInputError, match="older_than_days"):
        prune({}, older_than_days=0)
    assert prune({}) == [month_old]  # the default, 30 days
    assert prune({"job_retention_days": "6.5"}) == [week_old]


def test_lance_ns_jobs_prune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lance_namespace_async._cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main

    store = JobStore(str(tmp_path))
    old, older = record(store, "SUCCEEDED", 3), record(store, "CANCELLED", 45)
    connection = ["--impl", "dir", "--prop", f"root={tmp_path}", "-o", "json"]
    assert main(["jobs", "prune", *connection]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"pruned": [older]}
    assert main(["jobs", "prune", "--older-than-days", "2", *connection]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"pruned": [old]}
    with pytest.raises(SystemExit) as usage:  # argparse's own usage error
        main(["jobs", "prune", "--older-than-days", "0", *connection])
    assert usage.value.code == EXIT_USAGE
    assert "must be > 0" in capsys.readouterr().err
    # a rest backend's records live with its server (no server needed to be told so)
    remote = ["--impl", "rest", "--prop", "uri=http://127.0.0.1:1", "-o", "json"]
    assert main(["jobs", "prune", *remote]) == EXIT_ERROR
    assert "prune them there" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / FOLDER).iterdir()) == []
