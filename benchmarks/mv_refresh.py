"""Refresh of an aggregate materialized view vs the same query elsewhere, in one run.

    .venv/bin/python benchmarks/mv_refresh.py                   # 2,000,000 source rows
    .venv/bin/python benchmarks/mv_refresh.py --rows 20000000   # issue 32's size

The source: a ``dir`` catalog table ``events`` (``k`` int64 with 1,000 groups, ``v``
double, ``tag`` string), written by pylance in 1,048,576-row fragments. The view:
``SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(tag) AS top FROM events GROUP BY k``.

Contenders (each timed ``--repeat`` times, best kept), all at local[2] where Spark runs:

- ours, job body: the refresh job's body (``pipeline._views.run_refresh``) as the runner
  calls it, on this process's (warm) session, for a view this process refreshed before (as
  a server's driver refreshes its views again): the plan remembered from the first refresh,
  each task has Lance's scanner fold its fragments into partial aggregates
  (``pipeline._partials``), the driver merges them and writes the view, one Overwrite
  commit;
- ours, job body, first refresh: the same with the remembered plans forgotten, so the
  query is bound and analysed by Spark and its shape recognised first;
- ours, job body, plain plan: the same with the partial aggregation turned off (every
  source row goes through our reader into the JVM, Spark aggregates), to show what it
  changes;
- ours, through the job runner: ``refresh_materialized_view`` + ``wait_for_job_sync`` on
  a warm driver process (``pipeline._clusters``, already started, as in a server); wall
  includes the client's DescribeTransaction polling;
- (a) Spark SQL writing Parquet: the same source read through our reader, the same
  query, ``.write.parquet``;
- (b) one pylance/DataFusion process: ``dataset.sql(query)`` (pylance's embedded
  DataFusion) and ``lance.write_dataset`` of the result.

All produce the same 1,000 rows (checked: the view equals (b)'s result). The ratios
(a) and (b) use the job body on the warm session (the runner adds only scheduling).

Wall time and CPU time (this process and every process below it: the JVM and Spark's
Python workers, the driver process, read from /proc; the machine is shared, so CPU is
the steadier number). A breakdown follows (``--breakdown``): the pieces timed alone.
Results go to stdout and ``benchmarks/results/mv_refresh.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa

import lance_namespace_async as lna
from lance_namespace_async import spark as lna_spark
from lance_namespace_async.pipeline import JobControl, _pushdown, _views, wait_for_job_sync
from lance_namespace_async.pipeline._partials import fragments_partials, substrait_plan
from lance_namespace_async.pipeline._pushdown import maybe_pushed_down, pushed_again, recognise
from lance_namespace_async.pipeline._views import run_refresh

RESULTS = Path(__file__).parent / "results" / "mv_refresh.md"
QUERY = "SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(tag) AS top FROM events GROUP BY k"
OUTPUT = json.dumps(
    {
        "fields": [
            {"name": "k", "type": {"type": "int64"}, "nullable": True},
            {"name": "n", "type": {"type": "int64"}, "nullable": False},
            {"name": "total", "type": {"type": "double"}, "nullable": True},
            {"name": "top", "type": {"type": "utf8"}, "nullable": True},
        ]
    }
)
_TICKS = os.sysconf("SC_CLK_TCK")
OURS = "ours, job body (partials in tasks, Lance commit)"


def tree_cpu_seconds() -> float:
    """CPU (user + system) of this process and its live descendants, from /proc."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is not None:  # utime, stime, cutime, cstime
            total += sum(int(x) for x in fields[11:15])
        todo.extend(children.get(pid, []))
    return total / _TICKS


def make_source(root: str, rows: int) -> list[str]:
    rng = np.random.default_rng(7)
    with lna.connect_sync("dir", {"root": root}) as facade:
        facade.create_namespace({"id": ["bench"]})
        step = 1_048_576
        for start in range(0, rows, step):
            n = min(step, rows - start)
            keys = rng.integers(0, 1000, n, dtype=np.int64)
            chunk = pa.table(
                {
                    "k": keys,
                    "v": rng.random(n),
                    "tag": pa.array(np.array([f"t{i:03d}" for i in range(1000)])[keys]),
                }
            )
            if start == 0:
                facade.create_table({"id": ["bench", "events"]}, chunk)
            else:
                facade.insert_into_table({"id": ["bench", "events"]}, chunk)
        facade.create_materialized_view(
            {
                "id": ["bench", "agg"],
                "kind": "query",
                "source_query": QUERY,
                "output_schema": OUTPUT,
                "with_no_data": True,
            }
        )
        return [str(facade.describe_table({"id": ["bench", "events"]}).location)]


def measure(repeat: int, run: Callable[[], None]) -> tuple[float, float]:
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        cpu, wall = tree_cpu_seconds(), time.perf_counter()
        run()
        took = (time.perf_counter() - wall, tree_cpu_seconds() - cpu)
        best = min(best, took)
    return best


def same_result(view: pa.Table, peer: pa.Table) -> None:
    """The view holds (b)'s rows: counts and maxima exact, sums to rounding."""
    mine, theirs = view.sort_by("k").to_pylist(), peer.sort_by("k").to_pylist()
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs, strict=True):
        assert (a["k"], a["n"], a["top"]) == (b["k"], b["n"], b["top"])
        assert abs(a["total"] - b["total"]) <= 1e-9 * max(1.0, abs(b["total"]))


def tiny(spark: Any) -> Callable[[], None]:
    """A job of the refresh's shape over nothing: Spark + Python worker overhead alone."""

    def passthrough(batches: Any) -> Any:
        yield from batches

    def run() -> None:
        frame = spark.range(0, 2, 1, 2).mapInArrow(passthrough, "id long")
        frame.groupBy("id").count().collect()

    return run


def measure_breakdown(
    spark: Any, location: str, props: dict[str, str]
) -> list[tuple[str, tuple[float, float]]]:
    """Where the job body's time goes, each piece run alone."""
    version = int(lance.dataset(location).version)
    sources = [{"id": ["bench", "events"], "version": version}]

    def bound(pushed: bool) -> Any:
        """A fresh DataFrame each time: Spark reuses a DataFrame's shuffle output."""
        session = spark.newSession()
        lna_spark.read(
            session, "bench$events", impl="dir", properties=props, delimiter="$"
        ).createOrReplaceTempView("events")
        frame = session.sql(QUERY)
        if not pushed:
            return frame
        return maybe_pushed_down(session, frame, sources, impl="dir", properties=props)

    plan = recognise(bound(False), ansi=True)
    assert plan is not None

    def scan_only() -> None:
        for _ in lance.dataset(location).to_batches(columns=["k", "v", "tag"], batch_size=1 << 20):
            pass

    def partials_one_process() -> None:
        dataset = lance.dataset(location)
        fragments = [int(f.fragment_id) for f in dataset.get_fragments()]
        fragments_partials(dataset, plan, fragments, substrait_plan(plan, dataset.schema.names))

    def spark_merges() -> None:
        _pushdown.DRIVER_ROWS, saved = 0, _pushdown.DRIVER_ROWS
        try:
            bound(True).collect()
        finally:
            _pushdown.DRIVER_ROWS = saved

    return [
        ("pylance scan of k, v, tag alone (one process)", measure(2, scan_only)),
        (
            "scan + Lance's native partials (one process, no Spark)",
            measure(2, partials_one_process),
        ),
        (
            "binding + analysis + plan recognition (driver)",
            measure(2, lambda: recognise(bound(False), ansi=True)),
        ),
        (
            "binding + partials on Spark (one stage) + final in the driver",
            measure(2, lambda: bound(True)),
        ),
        ("same, Spark merging the partials (a second stage), collect", measure(2, spark_merges)),
        (
            "plain plan: source rows into the JVM only (noop write)",
            measure(
                2,
                lambda: (
                    lna_spark.read(
                        spark, "bench$events", impl="dir", properties=props, delimiter="$"
                    )
                    .write.format("noop")
                    .mode("overwrite")
                    .save()
                ),
            ),
        ),
        ("plain plan: query, collect", measure(2, lambda: bound(False).collect())),
        ("Spark's fixed cost: a two-row job through a Python task", measure(2, tiny(spark))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--breakdown", action="store_true", help="also time the pieces")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lna_spark.register(spark)
    work = tempfile.mkdtemp(prefix="mv-bench-")
    root = os.path.join(work, "root")
    try:
        (location,) = make_source(root, args.rows)
        props = {"root": root}

        def ours() -> None:
            control = JobControl(
                job_id=f"lna-job-{uuid.uuid4().hex}", spark=spark, impl="dir", properties=props
            )
            try:
                run_refresh(control, {"id": ["bench", "agg"]})
            finally:
                control.close()

        def plain() -> None:
            # neither the fast path nor the plan it remembered
            _views.maybe_pushed_down = lambda spark, frame, *a, **k: frame  # type: ignore
            _views.pushed_again = lambda *a, **k: None  # type: ignore
            try:
                ours()
            finally:
                _views.maybe_pushed_down = maybe_pushed_down
                _views.pushed_again = pushed_again

        def first_refresh() -> None:
            """A refresh whose plan this process has not analysed yet (a view's first
            refresh in a driver): binding and Spark's analysis included."""
            _pushdown._ANALYSED.clear()
            ours()

        facade = lna.connect_sync("dir", props)

        def runner() -> None:
            answer = facade.refresh_materialized_view({"id": ["bench", "agg"]})
            wait_for_job_sync(facade, str(answer.job_id), timeout=600)

        def parquet() -> None:
            session = spark.newSession()
            lna_spark.read(
                session, "bench$events", impl="dir", properties=props, delimiter="$"
            ).createOrReplaceTempView("events")
            session.sql(QUERY).write.mode("overwrite").parquet(os.path.join(work, "pq"))

        def pylance() -> None:
            dataset = lance.dataset(location)
            reader = dataset.sql(QUERY.replace("FROM events", "FROM dataset")).build()
            result = pa.Table.from_batches(reader.to_batch_records())
            lance.write_dataset(result, os.path.join(work, "peer.lance"), mode="overwrite")

        ours()  # warm: Python workers started, classes loaded
        runner()  # warm: the driver process started, its workers too
        results = {
            OURS: measure(args.repeat, ours),
            "ours, job body, first refresh (query bound and analysed)": measure(
                args.repeat, first_refresh
            ),
            "ours, job body, plain plan (no partials)": measure(args.repeat, plain),
            "ours, through the job runner (warm driver)": measure(args.repeat, runner),
            "(a) Spark SQL -> Parquet": measure(args.repeat, parquet),
            "(b) pylance/DataFusion -> Lance": measure(args.repeat, pylance),
        }
        check = lance.dataset(
            str(facade.describe_table({"id": ["bench", "agg"]}).location)
        ).to_table()
        assert check.num_rows == 1000
        assert sum(check.column("n").to_pylist()) == args.rows
        same_result(check, lance.dataset(os.path.join(work, "peer.lance")).to_table())
        breakdown = measure_breakdown(spark, location, props) if args.breakdown else []
        facade.close()
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    ours_wall, ours_cpu = results[OURS]
    lines = [
        "# Materialized view refresh (issue 32)",
        "",
        f"`python benchmarks/mv_refresh.py --rows {args.rows} --repeat {args.repeat}`, "
        f"{platform.machine()}, {os.cpu_count()} cores (shared), local[2]; best of "
        f"{args.repeat}. Throughput = source rows / wall second.",
        "",
        "| contender | wall s | CPU s | Mrows/s | ours' throughput vs it |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, (wall, cpu) in results.items():
        lines.append(
            f"| {name} | {wall:.2f} | {cpu:.2f} | {args.rows / wall / 1e6:.2f} | "
            f"{wall / ours_wall:.2f}x |"
        )
    lines.append("")
    lines.append(f"ours' CPU: {ours_cpu:.2f} s.")
    if breakdown:
        lines += ["", "Breakdown (each piece alone, warm, best of the repeats):", ""]
        lines += ["| piece | wall s | CPU s |", "| --- | ---: | ---: |"]
        lines += [f"| {name} | {wall:.2f} | {cpu:.2f} |" for name, (wall, cpu) in breakdown]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
