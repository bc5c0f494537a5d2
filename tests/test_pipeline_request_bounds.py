"""The bounds of the pipeline's request counts (issue 32): a value that would explode a
job's work is refused with InvalidInput (13) and starts nothing.

No server and no Spark: the directory backend over real pylance tables in a temporary
directory; the refusals come before a job (or its Spark driver) exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import lance
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.models import AlterTableBackfillColumnsRequest
from lance_namespace_async.pipeline import _backfill as backfill
from lance_namespace_async.pipeline import _views as views

JAVA_INT_MAX = 2**31 - 1


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Table ``t``: x = 0..49 in five fragments, and a computed column ``y``."""
    data = pa.table({"x": pa.array(range(50), pa.int64())})
    lance.write_dataset(data, str(tmp_path / "t.lance"), max_rows_per_file=10)
    call(
        tmp_path,
        "alter_table_add_columns",
        {"id": ["t"], "new_columns": [{"name": "y", "computed": "x * 2"}]},
    )
    return tmp_path


def call(root: Path, method: str, request: Any) -> Any:
    async def run() -> Any:
        async with lna.connect("dir", {"root": str(root)}) as ns:
            return await getattr(ns, method)(request)

    return anyio.run(run)


def plan(root: Path, **fields: Any) -> dict[str, Any]:
    request = AlterTableBackfillColumnsRequest.from_dict({"id": ["t"], "column": "y", **fields})

    async def run() -> dict[str, Any]:
        async with lna.connect("dir", {"root": str(root)}) as ns:
            return await backfill.plan_backfill(ns, request)

    return anyio.run(run)


def nothing_started(root: Path, version: int) -> None:
    assert lance.dataset(str(root / "t.lance")).version == version
    assert not (root / "_lna_jobs").exists()


REFRESH = ("refresh_materialized_view", {"id": ["t"]})
BACKFILL = ("alter_table_backfill_columns", {"id": ["t"], "column": "y"})


@pytest.mark.parametrize(
    ("operation", "field", "value", "least"),
    [
        (REFRESH, "max_rows_per_fragment", 1, views.MIN_ROWS_PER_FRAGMENT),
        (
            REFRESH,
            "max_rows_per_fragment",
            views.MIN_ROWS_PER_FRAGMENT - 1,
            views.MIN_ROWS_PER_FRAGMENT,
        ),
        (REFRESH, "max_rows_per_fragment", JAVA_INT_MAX + 1, views.MIN_ROWS_PER_FRAGMENT),
        (REFRESH, "concurrency", 0, 1),
        (REFRESH, "concurrency", JAVA_INT_MAX + 1, 1),
        (BACKFILL, "checkpoint_size", 1, backfill.MIN_CHECKPOINT_SIZE),
        (
            BACKFILL,
            "checkpoint_size",
            backfill.MIN_CHECKPOINT_SIZE - 1,
            backfill.MIN_CHECKPOINT_SIZE,
        ),
        (BACKFILL, "task_size", 0, 1),
        (BACKFILL, "num_frags", 0, 1),
        (BACKFILL, "commit_granularity", 0, 1),
        (BACKFILL, "concurrency", JAVA_INT_MAX + 1, 1),
        (BACKFILL, "task_size", JAVA_INT_MAX + 1, 1),
    ],
    ids=lambda v: v[0] if isinstance(v, tuple) else str(v),
)
def test_a_job_request_outside_the_bounds_is_refused_and_starts_nothing(
    root: Path, operation: tuple[str, dict[str, Any]], field: str, value: int, least: int
) -> None:
    version = lance.dataset(str(root / "t.lance")).version
    name, request = operation
    with pytest.raises(
        errors.InvalidInputError,
        match=rf"{field} must be an integer from {least} to {JAVA_INT_MAX}",
    ):
        call(root, name, {**request, field: value})
    nothing_started(root, version)


def test_a_refresh_at_the_minimum_passes_the_bounds(root: Path) -> None:
    """1024 rows per fragment is accepted: the next check (``t`` is no view) answers."""
    with pytest.raises(errors.InvalidInputError, match="not a materialized view"):
        call(
            root,
            "refresh_materialized_view",
            {"id": ["t"], "max_rows_per_fragment": views.MIN_ROWS_PER_FRAGMENT, "concurrency": 1},
        )


def test_a_backfill_at_the_minimums_is_planned(root: Path) -> None:
    planned = plan(
        root, checkpoint_size=backfill.MIN_CHECKPOINT_SIZE, task_size=1, commit_granularity=1
    )
    assert planned["checkpoint_size"] == backfill.MIN_CHECKPOINT_SIZE
    assert planned["commit_granularity"] == 1


def test_a_commit_granularity_making_too_many_commits_is_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits are counted over the fragments the job would fill (``num_frags`` bounds
    them); the limit is lowered to 2 here so five fragments exceed it."""
    monkeypatch.setattr(backfill, "MAX_COMMITS", 2)
    version = lance.dataset(str(root / "t.lance")).version
    with pytest.raises(errors.InvalidInputError, match=r"3 commits over 5 fragments \(at most 2\)"):
        call(
            root,
            "alter_table_backfill_columns",
            {"id": ["t"], "column": "y", "commit_granularity": 2},
        )
    nothing_started(root, version)
    assert plan(root, commit_granularity=3)["commit_granularity"] == 3  # two commits
    assert plan(root, commit_granularity=2, num_frags=4)["num_frags"] == 4  # two commits
