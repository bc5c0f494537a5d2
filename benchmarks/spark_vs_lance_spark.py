"""Our Spark data source vs lance-spark (the Lance project's JVM connector) and Spark's Parquet.

    .venv/bin/python benchmarks/spark_vs_lance_spark.py            # 20,000,000 rows x 8 columns
    .venv/bin/python benchmarks/spark_vs_lance_spark.py --rows 1000000   # smoke run (to /tmp)

Four contenders write, then read, the same 8 columns (int64, int32, float64, float32, bool,
2 strings, timestamp) at ``local[2]``, with ``spark.driver.memory`` 4g:

- **ours**: ``df.write/spark.read.format("lance-namespace")`` on pyspark 4 (this process's
  Spark) into a ``dir`` catalog;
- **ours, read()**: ``lna_spark.read(spark, ...)``, the same reader and partitions run
  through ``mapInArrow`` instead of Spark's data source scan (reads only);
- **Parquet, Spark 4**: ``df.write.parquet`` / ``spark.read.parquet`` in the same session;
- **lance-spark**: ``org.lance:lance-spark-3.5_2.12`` 0.4.0 (``LanceNamespaceSparkCatalog``,
  ``impl=dir``) on Spark 3.5.5 in a JVM of its own (``jvm/lance-spark``, driven over a
  loopback socket by ``LanceSparkSql.java``): ``INSERT OVERWRITE`` / ``SELECT *``;
- **Parquet, Spark 3.5**: ``INSERT OVERWRITE DIRECTORY ... USING parquet`` / ``SELECT *`` in
  that same JVM.

lance-spark publishes no Spark 4 module (nor any bundle) on Maven Central, and our data
source is a Python Data Source, which needs Spark 4: the two Lance contenders cannot share
one Spark. Each is therefore paired with the Parquet of its own Spark, run side by side on
the same machine in the same run.

Every contender generates its rows inside its engine with the same SQL expressions over
``range(0, rows, 1, 2)`` (two partitions, so two write tasks), so no Python -> JVM transfer is
timed for anyone; ours then moves them JVM -> Python (Arrow) as any Python data source must.
A read goes to Spark's ``noop`` sink, which materializes every column of every row. A
``generate`` row shows what making the rows costs each Spark (the query into ``noop``, no
writer): the part of every write that is not the writer's. Each
write overwrites a table/directory a warm-up wrote first (JIT, Python workers, imports); the
warm-ups write and read a tenth of the rows, so every timed run finds the JIT's second tier
done.

CPU time is the whole process tree's (user + system, children included): this process, its
Spark JVM and Python workers for the pyspark contenders; the lance-spark JVM for the others.
The markdown goes to ``benchmarks/results/spark_vs_lance_spark.md`` for a run with the default
size and repeat, else under ``/tmp/lna-bench/smoke/`` (``--output`` overrides).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from _jvm_profile import cpu_by_group, recording, task_phases, thread_cpu  # noqa: E402
from _results import output_path  # noqa: E402

RESULTS = HERE / "results" / "spark_vs_lance_spark.md"
CATALOG_CLASS = "org.lance.spark.LanceNamespaceSparkCatalog"
COLUMNS = "int64, int32, float64, float32, bool, 2 strings, timestamp"


def select_rows(rows: int) -> str:
    """The rows every contender writes: deterministic, computed inside the engine.

    ``hash`` is Spark's Murmur3 (the same in 3.5 and 4), so both Sparks make the same data.
    """
    return (
        "SELECT id,"
        " CAST(pmod(hash(id), 1000000) AS INT) AS user,"
        " CAST(pmod(hash(id, 7), 1000000) AS DOUBLE) / 1000 AS amount,"
        " CAST(pmod(hash(id, 11), 1000) AS FLOAT) / CAST(1000 AS FLOAT) AS score,"
        " pmod(hash(id, 13), 2) = 1 AS active,"
        " element_at(array('fr', 'de', 'us', 'jp', 'br'), CAST(id % 5 AS INT) + 1) AS country,"
        " concat('note-', CAST(id % 10000 AS STRING)) AS note,"
        " timestamp_micros(1700000000000000 + id * 1000000) AS at"
        f" FROM range(0, {rows}, 1, 2)"
    )


# -- CPU time of a process tree ------------------------------------------------------------------


#: CPU seconds of a process tree, by (pid, own or reaped) and kind of process
CpuSample = dict[tuple[int, str], tuple[str, float]]


def tree_cpu(root: int, exclude: frozenset[int] = frozenset()) -> CpuSample:
    """User + system CPU seconds of ``root`` and each descendant, own and reaped children's.

    Kinds: ``jvm`` (java), ``driver`` (``root`` itself when it is Python), ``workers``
    (other Python processes: Spark's Python workers), ``other``. A child that exits and is
    reaped moves its time into its parent's ``cutime``/``cstime`` (``reaped``), which is how
    a planning worker that lives for one call is counted. Subtrees rooted at a pid in
    ``exclude`` are left out.
    """
    parents: dict[int, int] = {}
    own: dict[int, int] = {}
    reaped: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        names[pid] = text[text.index("(") + 1 : text.rindex(")")]
        # after "pid (comm) ": state ppid ... utime(12) stime(13) cutime(14) cstime(15)
        fields = text[text.rindex(")") + 2 :].split()
        parents[pid] = int(fields[1])
        own[pid] = int(fields[11]) + int(fields[12])
        reaped[pid] = int(fields[13]) + int(fields[14])
    inside = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in inside and pid not in inside and pid not in exclude:
                inside.add(pid)
                changed = True
    ticks = os.sysconf("SC_CLK_TCK")
    sample: CpuSample = {}
    for pid in inside:
        name = names.get(pid, "")
        kind = (
            "jvm"
            if name == "java"
            else ("driver" if pid == root else "workers")
            if name.startswith("python")
            else "other"
        )
        sample[(pid, "own")] = (kind, own.get(pid, 0) / ticks)
        # Spark's JVM reaps the Python workers it started (and only those)
        sample[(pid, "reaped")] = ("workers" if kind == "jvm" else kind, reaped.get(pid, 0) / ticks)
    return sample


def cpu_used(before: CpuSample, after: CpuSample) -> dict[str, float]:
    """CPU seconds by kind between two samples.

    A process gone by the second sample is not subtracted: Spark stops Python workers
    idle for a minute, and where nobody reaps them their time leaves the tree (a
    process-wide difference would go negative by their whole lifetime).
    """
    parts = {"jvm": 0.0, "driver": 0.0, "workers": 0.0, "other": 0.0}
    for key, (kind, seconds) in after.items():
        parts[kind] += seconds - before.get(key, (kind, 0.0))[1]
    return parts


@dataclass
class Timing:
    wall: float
    cpu_parts: dict[str, float]
    #: the contender's JVM CPU by thread group (``_jvm_profile.THREAD_GROUPS``, and ``system``)
    jvm_threads: dict[str, float]

    @property
    def cpu(self) -> float:
        return sum(self.cpu_parts.values())

    def split(self) -> str:
        return ", ".join(f"{k} {v:.1f}" for k, v in self.cpu_parts.items() if round(v, 1))

    def __str__(self) -> str:
        return f"{self.wall:.2f} s wall, CPU {self.cpu:.1f} s ({self.split()})"


def timed(
    repeat: int,
    run: Callable[[], None],
    cpu_of: Callable[[], CpuSample],
    jvm: int,
    jfr: Path | None = None,
) -> Timing:
    """The fastest of ``repeat`` runs, with that run's CPU time (JFR-recorded into ``jfr``)."""
    best: Timing | None = None
    for _ in range(repeat):
        with ExitStack() as profiling:
            if jfr is not None:
                profiling.enter_context(recording(jvm, jfr))
            threads_before = thread_cpu(jvm)
            cpu_before = cpu_of()
            start = time.perf_counter()
            run()
            wall = time.perf_counter() - start
            cpu_after = cpu_of()
            threads = cpu_by_group(threads_before, thread_cpu(jvm))
        result = Timing(wall, cpu_used(cpu_before, cpu_after), threads)
        if best is None or result.wall < best.wall:
            best = result
    assert best is not None
    return best


# -- lance-spark on Spark 3.5, in its own JVM ---------------------------------------------------


class SparkSql:
    """Statements sent to ``LanceSparkSql.java`` (one JSON line each way)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=3600)
        self.reader = self.sock.makefile("r", encoding="utf-8")

    def sql(self, statement: str) -> list[dict[str, Any]]:
        self.sock.sendall((json.dumps(statement) + "\n").encode())
        found = json.loads(self.reader.readline())
        if not found["ok"]:
            raise RuntimeError("\n".join([statement, found["error"], *found["causes"]]))
        rows: list[dict[str, Any]] = found["rows"]
        return rows

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@contextmanager
def lance_spark_session(work: Path) -> Iterator[tuple[SparkSql, int]]:
    """Spark 3.5.5 local[2] with lance-spark 0.4.0 and a ``dir`` catalog ``lance``."""
    from jvm import (
        JVM_PROJECTS,
        SPARK_JAVA17_OPTIONS,
        classpath,
        free_port,
        java_executable,
        java_server,
        port_open,
    )

    port = free_port()
    conf = {
        "spark.master": "local[2]",
        "spark.app.name": "lance-spark-bench",
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.warehouse.dir": str(work / "spark-warehouse"),
        "spark.local.dir": str(work / "tmp"),
        "spark.sql.catalog.lance": CATALOG_CLASS,
        "spark.sql.catalog.lance.impl": "dir",
        "spark.sql.catalog.lance.root": str(work / "lance-spark-catalog"),
    }
    # java_server's defaults suit a short-lived test server (C1 only, serial GC, 768 MB);
    # a throughput run gets what pyspark's JVM gets: both JIT tiers, G1, 4 GB
    tuning = ["-Xmx4g", "-XX:TieredStopAtLevel=4", "-XX:-UseSerialGC", "-XX:+UseG1GC"]
    with java_server(
        "Spark 3.5 with lance-spark",
        main_class=str(JVM_PROJECTS / "lance-spark" / "LanceSparkSql.java"),
        classpath_entries=classpath("lance-spark").split(os.pathsep),
        workdir=work / "jvm",
        port=port,
        ready=lambda: port_open(port),
        args=[str(port), *(f"{k}={v}" for k, v in conf.items())],
        jvm_options=[*SPARK_JAVA17_OPTIONS, *tuning],
        env={"SPARK_LOCAL_IP": "127.0.0.1"},
        drop_env=("SPARK_", "PYSPARK_", "HADOOP_"),
        java=java_executable(),
        startup_timeout=300,
    ) as server:
        client = SparkSql(port)
        try:
            yield client, server.process.pid
        finally:
            client.close()


#: longer than Spark's idle timeout for Python workers (PythonWorkerFactory: one minute)
IDLE_SECONDS = 75.0


# -- the run -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--no-jvm", action="store_true", help="the pyspark contenders only")
    parser.add_argument(
        "--conf", action="append", default=[], help="key=value for the pyspark session"
    )
    parser.add_argument("--no-cold", action="store_true", help="skip the read after idling")
    parser.add_argument(
        "--source-option", action="append", default=[], help="key=value for ours' reads/writes"
    )
    parser.add_argument(
        "--jfr",
        type=Path,
        default=None,
        help="record each timed run with Java Flight Recorder into this folder",
    )
    args = parser.parse_args(argv)
    sizes = ["rows", "repeat", "no_jvm", "conf", "source_option", "no_cold", "jfr"]
    output = output_path(parser, args, RESULTS, sizes)
    load_start = os.getloadavg()

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import lance
    from pyspark.sql import SparkSession

    import lance_namespace_async as lna
    from lance_namespace_async import spark as lna_spark

    work = Path(tempfile.mkdtemp(prefix="lna-spark-vs-"))
    results: dict[tuple[str, str], Timing] = {}
    me = os.getpid()
    not_ours: set[int] = set()  # the lance-spark JVM (a child of this process)
    rows = args.rows
    # A tenth of the rows: enough for the JIT to reach its second tier on every hot path of a
    # write and a read (after 100,000 rows, ours' first timed read spent 4.9 s of its JVM's
    # CPU in the JIT compilers, a later one 1.1 s), so no timed run pays for compiling more
    # than the others.
    warmup = max(100_000, rows // 10)
    #: (operation, contender, the run, its CPU sample, its JVM's pid)
    runs: list[tuple[str, str, Callable[[], None], Callable[[], CpuSample], int]] = []
    with ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, work, ignore_errors=True)
        # The JVM starts first: Spark kills Python workers idle for a minute, and a slow JVM
        # start after the pyspark warm-ups would make the timed runs fork fresh ones.
        if not args.no_jvm:
            client, jvm_pid = cleanup.enter_context(lance_spark_session(work))
            not_ours.add(jvm_pid)
            parquet35 = work / "parquet35"
            client.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
            client.sql(f"CREATE TABLE lance.bench.events AS {select_rows(100_000)}")

            def lance_spark_write(rows: int) -> None:
                client.sql(f"INSERT OVERWRITE lance.bench.events {select_rows(rows)}")

            def lance_spark_read() -> None:
                client.sql("NOOP SELECT * FROM lance.bench.events")

            def parquet35_write(rows: int) -> None:
                client.sql(
                    f"INSERT OVERWRITE DIRECTORY '{parquet35}' USING parquet {select_rows(rows)}"
                )

            def parquet35_read() -> None:
                client.sql(f"NOOP SELECT * FROM parquet.`{parquet35}`")

            def jvm_cpu() -> CpuSample:
                return tree_cpu(jvm_pid)

            lance_spark_write(warmup)  # warm-ups: the JIT, the first versions
            lance_spark_read()
            parquet35_write(warmup)
            parquet35_read()

            def generate35(rows: int) -> None:
                client.sql(f"NOOP {select_rows(rows)}")

            runs += [
                ("generate", "parquet35", partial(generate35, rows), jvm_cpu, jvm_pid),
                ("write", "lance-spark", partial(lance_spark_write, rows), jvm_cpu, jvm_pid),
                ("write", "parquet35", partial(parquet35_write, rows), jvm_cpu, jvm_pid),
                ("read", "lance-spark", lance_spark_read, jvm_cpu, jvm_pid),
                ("read", "parquet35", parquet35_read, jvm_cpu, jvm_pid),
            ]

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
            builder = (
                SparkSession.builder.master("local[2]")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.memory", "4g")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.local.dir", str(work / "tmp"))
            )
            for setting in args.conf:
                key, _, value = setting.partition("=")
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
        cleanup.callback(spark.stop)
        spark_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        spark.sparkContext.setLogLevel("ERROR")
        lna_spark.register(spark)
        root = work / "catalog"
        root.mkdir()
        with lna.connect_sync("dir", {"root": str(root)}) as ns:
            ns.create_namespace({"id": ["bench"]})
        options = {"impl": "dir", "root": str(root)}
        options.update(setting.split("=", 1) for setting in args.source_option)
        parquet4 = str(work / "parquet4")

        def ours_write(rows: int) -> None:
            frame = spark.sql(select_rows(rows))
            frame.write.format("lance-namespace").mode("overwrite").options(**options).save(
                "bench.events"
            )

        def ours_read() -> None:
            frame = spark.read.format("lance-namespace").options(**options).load("bench.events")
            frame.write.format("noop").mode("overwrite").save()

        def ours_fast_read() -> None:
            frame = lna_spark.read(
                spark, "bench.events", impl="dir", properties={"root": str(root)}
            )
            frame.write.format("noop").mode("overwrite").save()

        def parquet4_write(rows: int) -> None:
            spark.sql(select_rows(rows)).write.mode("overwrite").parquet(parquet4)

        def parquet4_read() -> None:
            spark.read.parquet(parquet4).write.format("noop").mode("overwrite").save()

        def ours_cpu() -> CpuSample:
            return tree_cpu(me, frozenset(not_ours))

        ours_write(warmup)  # warm-ups: the JIT, the Python workers' imports, the first version
        ours_read()
        ours_fast_read()
        parquet4_write(warmup)
        parquet4_read()

        def generate4(rows: int) -> None:
            spark.sql(select_rows(rows)).write.format("noop").mode("overwrite").save()

        runs += [
            ("generate", "parquet4", partial(generate4, rows), ours_cpu, spark_pid),
            ("write", "ours", partial(ours_write, rows), ours_cpu, spark_pid),
            ("write", "parquet4", partial(parquet4_write, rows), ours_cpu, spark_pid),
            ("read", "ours", ours_read, ours_cpu, spark_pid),
            ("read", "ours-read()", ours_fast_read, ours_cpu, spark_pid),
            ("read", "parquet4", parquet4_read, ours_cpu, spark_pid),
        ]
        print("warm-ups done", flush=True)
        # Each contender writes then reads, ours first, right after the warm-ups: Spark stops a
        # Python worker idle for a minute, so ours is timed with warm workers here and once
        # more at the end after such a pause ("read-cold").
        order = ["ours", "ours-read()", "lance-spark", "parquet4", "parquet35"]
        phases = ["generate", "write", "read"]
        runs.sort(key=lambda run: (order.index(run[1]), phases.index(run[0])))
        if not args.no_cold:
            runs.append(("read-cold", "ours", ours_read, ours_cpu, spark_pid))
            runs.append(("read-cold", "ours-read()", ours_fast_read, ours_cpu, spark_pid))
        for operation, name, run, cpu_of, jvm in runs:
            cold = operation.endswith("-cold")
            if cold:
                time.sleep(IDLE_SECONDS)  # untimed: once, since a run warms the workers again
            jfr = None if args.jfr is None else args.jfr / f"{operation}-{name}.jfr"
            results[(name, operation)] = timed(1 if cold else args.repeat, run, cpu_of, jvm, jfr)
            print(f"{operation} {name}: {results[(name, operation)]}", flush=True)
        if not args.no_jvm:
            count = client.sql("SELECT count(*) AS n FROM lance.bench.events")[0]["n"]
            assert count == rows, f"lance-spark wrote {count} rows"
        with lna.connect_sync("dir", {"root": str(root)}) as ns:
            location = ns.describe_table({"id": ["bench", "events"]}).location
        written = lance.dataset(str(location))
        assert written.count_rows() == rows, "the data source lost rows"
        fragments = len(written.get_fragments())

    steps = {}
    if args.jfr is not None:
        for operation, name, *_ in runs:
            steps[(name, operation)] = task_phases(args.jfr / f"{operation}-{name}.jfr")
    text = render(args, results, fragments, load_start, steps)
    print(text)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    return 0


LABELS = {
    "ours": "ours (lance-namespace, pyspark 4.3)",
    "ours-read()": "ours, lna_spark.read() (mapInArrow, pyspark 4.3)",
    "parquet4": "Parquet, Spark 4.3 (same session as ours)",
    "lance-spark": "lance-spark 0.4.0, Spark 3.5.5",
    "parquet35": "Parquet, Spark 3.5.5 (same JVM as lance-spark)",
}


def render(
    args: argparse.Namespace,
    results: dict[tuple[str, str], Timing],
    fragments: int,
    load_start: tuple[float, float, float],
    steps: dict[tuple[str, str], tuple[int, dict[str, float]]],
) -> str:
    rows = args.rows
    lines = [
        "# Spark data source vs lance-spark and Spark's Parquet",
        "",
        f"{rows:,} rows x 8 columns ({COLUMNS}), generated inside each engine; local[2], "
        f"driver memory 4 GB; best of {args.repeat}; {platform.machine()}, "
        f"{os.cpu_count()} CPUs; load average (1 min) {load_start[0]:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end. Ours wrote {fragments} fragments.",
        "",
        "lance-spark has no Spark 4 build on Maven Central and our data source needs Spark 4, "
        "so the Lance contenders run on different Sparks: each is shown with its own Spark's "
        "Parquet, measured in the same run.",
        "",
        "| Operation | Contender | wall (s) | rows/s | CPU (s) | CPU / wall | CPU by process (s) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for operation in ("generate", "write", "read", "read-cold"):
        for name, label in LABELS.items():
            found = results.get((name, operation))
            if found is None:
                continue
            if operation == "generate":
                label = f"{label.split(' (')[0]}: no writer, rows into noop"
            if operation == "read-cold":
                label = f"{label}, after {IDLE_SECONDS:.0f} s idle (fresh Python workers)"
            lines.append(
                f"| {operation} | {label} | {found.wall:.2f} | {rows / found.wall:,.0f} | "
                f"{found.cpu:.1f} | {found.cpu / found.wall:.2f} | {found.split()} |"
            )
    lines += [
        "",
        "| Operation | ours / lance-spark: throughput (CPU) | ours / Parquet 4.3 | "
        "lance-spark / Parquet 3.5 | goal: >= 0.80x lance-spark's throughput |",
        "|---|---:|---:|---:|---|",
    ]
    for operation, contender in (("write", "ours"), ("read", "ours"), ("read", "ours-read()")):
        ours = results.get((contender, operation))
        if ours is None:
            continue

        def ratio(peer: str, mine: Timing | None, operation: str = operation) -> str:
            found = results.get((peer, operation))
            if found is None or mine is None:
                return "-"
            return f"{found.wall / mine.wall:.2f}x ({found.cpu / mine.cpu:.2f}x)"

        lance_spark = results.get(("lance-spark", operation))
        met = "-"
        if lance_spark is not None:
            met = "met" if lance_spark.wall / ours.wall >= 0.8 else "not met"
        shown = operation if contender == "ours" else f"{operation}, {contender}"
        lines.append(
            f"| {shown} | {ratio('lance-spark', ours)} | {ratio('parquet4', ours)} | "
            f"{ratio('parquet35', lance_spark)} | {met} |"
        )
    lines += [
        "",
        "A throughput ratio is the peer's wall time over the first contender's: above 1 the "
        "first is faster; in brackets the same for CPU time (above 1: the first needs less "
        "CPU), the steadier measure on a shared machine. CPU is user + system seconds of the "
        "contender's whole process tree (ours: this process, pyspark's JVM and its Python "
        "workers), by process: jvm (Spark), "
        "workers (Spark's Python workers: the data source's tasks, planning and commit), "
        "driver (this Python process).",
    ]
    lines += render_jvm(results, steps)
    return "\n".join(lines) + "\n"


def render_jvm(
    results: dict[tuple[str, str], Timing],
    steps: dict[tuple[str, str], tuple[int, dict[str, float]]],
) -> list[str]:
    """The JVM's CPU by thread group, and (with ``--jfr``) the task threads' Java samples."""
    groups = ["tasks", "native", "jit", "gc", "other", "ended"]
    lines = [
        "",
        "JVM CPU by thread (s): Spark's task threads, native threads (Lance's Rust runtime in "
        "lance-spark's JVM), the JIT compilers, the garbage collector, the rest, threads that "
        "ended during the run (the JVM's total minus its live threads: in lance-spark's write, "
        "Lance's per-write Rust threads); and the kernel's share of all of it (system).",
        "",
        f"| Operation | Contender | {' | '.join(groups)} | system |",
        f"|---|---|{'---:|' * (len(groups) + 1)}",
    ]
    for (name, operation), found in results.items():
        live = sum(found.jvm_threads.get(group, 0.0) for group in groups)
        threads = {**found.jvm_threads, "ended": max(0.0, found.cpu_parts["jvm"] - live)}
        cells = [f"{threads.get(group, 0.0):.1f}" for group in [*groups, "system"]]
        lines.append(f"| {operation} | {LABELS[name]} | {' | '.join(cells)} |")
    if not steps:
        return lines
    names = sorted({step for _, shares in steps.values() for step in shares})
    lines += [
        "",
        "Java Flight Recorder: the Java samples of the task threads by step (% of the samples; "
        "time in system calls and JNI code is not sampled).",
        "",
        f"| Operation | Contender | samples | {' | '.join(names)} |",
        f"|---|---|---:|{'---:|' * len(names)}",
    ]
    for (name, operation), (samples, shares) in steps.items():
        cells = [f"{100 * shares.get(step, 0.0):.0f}" for step in names]
        lines.append(f"| {operation} | {LABELS[name]} | {samples} | {' | '.join(cells)} |")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
