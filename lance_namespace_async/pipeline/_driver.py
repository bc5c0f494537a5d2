"""A cluster's Spark driver: a child process of the library, one per cluster it uses.

Why a process of its own: Spark allows one SparkContext per process, a job's master is
chosen per request (``cluster``), and the JVM must not live in a server's event loop or
die with one crashed job. The driver starts its SparkSession at once (the JVM's start is
paid while the first job is queued), runs each job in a thread of its own under a Spark
job group (``_runner``), reads its owner's orders as JSON lines on stdin and answers its calls
(``_runner.CALLS``: checking a view's query, say) as JSON lines on stdout; when stdin
closes (the owner exited, however it exited) it fails its running jobs and exits. A
driver whose SparkSession cannot start fails the jobs it holds and exits too, so the
next job starts a new driver.

Run as ``python -m lance_namespace_async.pipeline._driver <master> <app name>``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import warnings
from typing import Any

from ._runner import JobRunner, answer, error_record


def build_session(master: str, app_name: str) -> Any:
    """The driver's SparkSession on ``master`` (UI off, bound to loopback when local)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    builder = builder.config("spark.ui.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    if master.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1")
        builder = builder.config("spark.sql.shuffle.partitions", "4")
    with warnings.catch_warnings():
        # pyspark forks + execs java; the child never touches lance
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def main(argv: list[str]) -> int:
    master, app_name = argv[0], argv[1]
    # stdout carries replies only: what Spark (and its JVM and Python workers, which
    # inherit fd 1) prints goes to stderr instead
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    replies_lock = threading.Lock()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def start() -> None:
        try:
            holder["spark"] = build_session(master, app_name)
        except BaseException as exc:
            holder["error"] = exc
            ready.set()
            # the jobs waiting for the session record the failure; then this driver
            # exits, so the next job starts a new one instead of failing here for ever
            time.sleep(2)
            os._exit(1)
        finally:
            ready.set()

    def get_spark() -> Any:
        ready.wait()
        if "error" in holder:
            raise holder["error"]
        return holder["spark"]

    threading.Thread(target=start, name="lna-spark-start", daemon=True).start()
    runner = JobRunner(get_spark)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("op") == "run":
            runner.submit(message)
        elif message.get("call_id"):
            threading.Thread(
                target=_answer_call,
                args=(get_spark, message, replies, replies_lock),
                name="lna-driver-call",
                daemon=True,
            ).start()
    runner.stop(f"the job's driver (cluster {app_name}) stopped: its owner process exited")
    os._exit(0)  # the JVM's threads must not keep a dead owner's driver alive


def _answer_call(get_spark: Any, message: Any, replies: Any, lock: threading.Lock) -> None:
    """Answer one call on the driver's session (waiting for it to start)."""
    try:
        reply = answer(get_spark(), message)
    except Exception as exc:  # the session did not start
        reply = {"reply_to": message.get("call_id"), "error": error_record(exc)}
    with lock:
        try:
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
        except (OSError, ValueError):
            pass  # the owner is gone


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
