"""Where a Spark JVM's CPU goes: CPU by thread group, and Java Flight Recorder per timed run.

Two views, for ``spark_vs_lance_spark.py``:

- :func:`thread_cpu` reads ``/proc/<pid>/task/*/stat``: user + system seconds of every thread
  of a JVM, grouped by what the thread does (Spark's task threads, Rust/native threads such as
  Lance's, the JIT compilers, the garbage collector). Two samples' difference splits a run's
  JVM CPU without any profiler running.
- :func:`recording` wraps a run in a JFR recording (``jcmd <pid> JFR.start settings=profile``,
  ``JFR.stop filename=...``); :func:`task_phases` then splits the Java samples of the task
  threads into the conversion steps (making the rows, row -> Arrow, Arrow -> row, the IPC
  stream, metrics...) by the innermost frame of each stack that names one.

JFR samples only threads running Java code: time a task thread spends in a system call
(socket I/O to a Python worker) or in JNI code (Lance's Rust decoder inside lance-spark) is not
in the Java samples, which is why the thread CPU comes from ``/proc`` and the samples only
split the Java part of it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: (group, prefixes of thread names as /proc shows them: at most 15 characters)
THREAD_GROUPS = (
    ("tasks", ("Executor task",)),
    ("jit", ("C1 CompilerThre", "C2 CompilerThre")),
    ("gc", ("GC Thread", "G1 ", "VM Thread")),
    ("native", ("tokio", "lance", "rayon")),
)

#: (step, substring of a frame "package/Class.method"); the innermost frame that matches any
#: entry decides a sample's step, the first entry that matches that frame names it
STEPS = (
    ("row -> Arrow: batch-size check", "BatchedPythonArrowInput$.underBatchSizeLimit"),
    ("row -> Arrow: batch-size check", "arrow/ArrowWriter.sizeInBytes"),
    ("row -> Arrow", "execution/arrow/ArrowWriter"),
    ("row -> Arrow", "execution/arrow/ArrowFieldWriter"),
    ("row -> Arrow", "lance/spark/arrow/"),
    ("Arrow -> row", "SpecificUnsafeProjection"),
    ("Arrow -> row", "ColumnarToRow"),
    ("Arrow -> row", "ColumnarBatchRow"),
    ("Arrow -> row", "ArrowColumnVector"),
    ("IPC to Python", "ipc/message/MessageSerializer.serialize"),
    ("IPC to Python", "ipc/ArrowStreamWriter"),
    ("IPC to Python", "ipc/WriteChannel"),
    ("IPC from Python", "ipc/ArrowStreamReader"),
    ("IPC from Python", "ipc/message/MessageSerializer.deserialize"),
    ("IPC from Python", "ipc/ReadChannel"),
    ("IPC from Python", "arrow/vector/VectorLoader"),
    ("IPC from Python", "ArrowOutputProcessor"),
    ("Lance (JNI side)", "org/lance/"),
    ("Lance (JNI side)", "com/lancedb/"),
    ("Lance (JNI side)", "arrow/c/"),
    ("Parquet", "org/apache/parquet/"),
    ("Parquet", "datasources/parquet/"),
    ("metrics", "updateMetrics"),
    ("metrics", "MetricsValues"),
    ("metrics", "TaskMetrics"),
    ("codegen stage (writes: making the rows)", "GeneratedIteratorForCodegenStage"),
)


def _group(thread_name: str) -> str:
    for group, prefixes in THREAD_GROUPS:
        if thread_name.startswith(prefixes):
            return group
    return "other"


def thread_cpu(pid: int) -> dict[tuple[int, str], tuple[str, float, float]]:
    """(thread id, name) -> (group, user s, system s) for every live thread of ``pid``."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[tuple[int, str], tuple[str, float, float]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        found[(int(tid), name)] = (_group(name), int(fields[11]) / ticks, int(fields[12]) / ticks)
    return found


def cpu_by_group(
    before: dict[tuple[int, str], tuple[str, float, float]],
    after: dict[tuple[int, str], tuple[str, float, float]],
) -> dict[str, float]:
    """CPU seconds by thread group between two samples, and ``system``: the kernel's share."""
    parts: Counter[str] = Counter()
    for key, (group, user, system) in after.items():
        _, user0, system0 = before.get(key, (group, 0.0, 0.0))
        parts[group] += (user - user0) + (system - system0)
        parts["system"] += system - system0
    return dict(parts)


def _jdk_tool(pid: int, tool: str) -> str:
    """``jcmd``/``jfr`` of the JDK the JVM ``pid`` runs on."""
    java = os.path.realpath(f"/proc/{pid}/exe")
    return str(Path(java).parent / tool)


@contextmanager
def recording(pid: int, path: Path) -> Iterator[None]:
    """A JFR recording (the JDK's ``profile`` settings) of the JVM ``pid``, saved to ``path``."""
    jcmd = _jdk_tool(pid, "jcmd")
    name = f"bench-{path.stem}"
    subprocess.run(
        [jcmd, str(pid), "JFR.start", f"name={name}", "settings=profile"],
        check=True,
        capture_output=True,
    )
    try:
        yield
    finally:
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [jcmd, str(pid), "JFR.stop", f"name={name}", f"filename={path}"],
            check=True,
            capture_output=True,
        )


def task_phases(path: Path, jfr: str = "jfr") -> tuple[int, dict[str, float]]:
    """Java samples of the task threads in a recording, and each step's share of them."""
    printed = subprocess.run(
        [jfr, "print", "--json", "--stack-depth", "400", "--events", "jdk.ExecutionSample", path],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    steps: Counter[str] = Counter()
    samples = 0
    for event in json.loads(printed)["recording"]["events"]:
        values = event["values"]
        thread = (values.get("sampledThread") or {}).get("javaName") or ""
        if not thread.startswith("Executor task"):
            continue
        samples += 1
        frames = (values.get("stackTrace") or {}).get("frames", [])
        step = "other"
        for frame in frames:
            method = frame["method"]
            where = f"{method['type']['name']}.{method['name']}"
            step = next((name for name, part in STEPS if part in where), "")
            if step:
                break
        steps[step or "other"] += 1
    return samples, {
        step: count / samples for step, count in steps.most_common()
    } if samples else {}
