"""One interpreter with Spark started, running the docs' Spark blocks one after another.

Starting Spark (a JVM, then the Python workers that import pyspark, pylance and this
package) costs most of a minute on a loaded machine; every Spark block of README.md and
docs/ paid it again in an interpreter of its own. ``tests/test_docs.py`` starts this
runner when the module starts, so Spark comes up (and runs one small read and one small
write through the data source, warming the Python workers) while the other pages' blocks
run. Each Spark block is then run here as a script (``runpy.run_path`` as ``__main__``):
its ``SparkSession.builder...getOrCreate()`` gets the running session, as it would in a
notebook where Spark is already up.

Protocol: the block's script path, stdout and stderr files arrive as one JSON line on
stdin; the exit code goes back as one JSON line on the file descriptor named by argv[1]
(the runner's own stdout and stderr are Spark's log). EOF on stdin stops Spark and exits.

Run as ``python docs_spark_runner.py RESULT_FD WARMUP_DIR``.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import time
import traceback
import warnings
from pathlib import Path


def _warm_up(warmup: Path) -> None:
    import lance
    import pyarrow as pa
    from pyspark.sql import SparkSession

    with warnings.catch_warnings():
        # pyspark starts its JVM by fork + exec, which runs lance's at-fork hook; the
        # child only execs java
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
    lance.write_dataset(pa.table({"id": [1]}), str(warmup / "t.lance"), mode="overwrite")
    source = spark.read.format("lance-namespace").options(impl="dir", root=str(warmup))
    source.load("t").count()
    frame = spark.createDataFrame([(1,)], "id long")
    frame.write.format("lance-namespace").mode("overwrite").options(
        impl="dir", root=str(warmup)
    ).save("w")


def _run(script: str, stdout: str, stderr: str) -> int:
    code = 0
    with (
        open(stdout, "w") as out,
        open(stderr, "w") as err,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BaseException:  # a block's failure is its exit code
            traceback.print_exc()
            code = 1
    return code


def main() -> None:
    result_fd, warmup = int(sys.argv[1]), Path(sys.argv[2])
    warmup.mkdir(parents=True, exist_ok=True)
    with os.fdopen(result_fd, "w") as results:
        started = time.monotonic()
        try:
            _warm_up(warmup)
            print(f"docs_spark_runner: warm in {time.monotonic() - started:.1f} s", flush=True)
        except BaseException:  # reported with the first block
            results.write(json.dumps({"warmup_failed": traceback.format_exc()}) + "\n")
            results.flush()
            return
        for line in sys.stdin:
            request = json.loads(line)
            started = time.monotonic()
            code = _run(request["script"], request["stdout"], request["stderr"])
            took = time.monotonic() - started
            print(f"docs_spark_runner: {request['script']} in {took:.1f} s", flush=True)
            results.write(json.dumps({"code": code}) + "\n")
            results.flush()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


if __name__ == "__main__":
    main()
