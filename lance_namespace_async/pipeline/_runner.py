"""Runs jobs on one Spark session: a thread per job, a Spark job group per job, a heartbeat.

Used by a cluster's driver process (``_driver``) and, for the ``active`` cluster, inside
the library's own process. For each job it owns the record's writes (``_store``): QUEUED
→ RUNNING (with progress) → SUCCEEDED (version) / FAILED (code, type, message) /
CANCELLED. Its heartbeat thread stamps every running record once a second (a reader
seeing a stale stamp knows the driver is gone) and turns a cancel request into
``cancelJobGroup``, so a Spark stage under way stops too; the body stops at its next
``raise_if_cancelled`` and nothing after its last commit is visible.
"""

from __future__ import annotations

import importlib
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .. import errors
from ._control import JobCancelled, JobControl, JobStatus
from ._store import JobStore

#: seconds between two stamps of a running job's record
HEARTBEAT_SECONDS = 1.0
#: how much of a failure's message a record keeps
MAX_MESSAGE_CHARS = 2000
#: what Spark says when a task's executor side died (a killed or crashed Python worker,
#: a lost executor): local[N] runs a task once, so the job fails with it
_EXECUTOR_LOST = ("Python worker exited unexpectedly", "ExecutorLostFailure", "Lost executor")


def now_ms() -> int:
    return int(time.time() * 1000)


def driver_identity() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


#: the calls a driver answers at once (request/reply, no record): op → ``"module:function"``
#: of ``answer(spark, message) -> JSON-able result``
CALLS: dict[str, str] = {
    "analyse_view": "lance_namespace_async.pipeline._views:analyse_definition",
}


def answer(spark: Any, message: Mapping[str, Any]) -> dict[str, Any]:
    """The reply to a call: ``{"reply_to", "result"}`` or ``{"reply_to", "error"}``, the
    error as a job record keeps it (code, type, bounded message with secrets masked)."""
    reply: dict[str, Any] = {"reply_to": message.get("call_id")}
    try:
        target = CALLS.get(str(message.get("op")))
        if target is None:
            raise errors.InvalidInputError(f"unknown call {message.get('op')!r}")
        function = load_body(target)
        reply["result"] = function(spark, message)
    except Exception as exc:
        reply["error"] = error_record(exc)
    return reply


def load_body(target: str) -> Callable[[JobControl, Mapping[str, Any]], int]:
    """The function a ``"module:function"`` names (from the runner's registry only)."""
    module_name, _, name = target.partition(":")
    body: Callable[[JobControl, Mapping[str, Any]], int] = getattr(
        importlib.import_module(module_name), name
    )
    return body


class _Running:
    """One job's state in this runner: its record (the only copy it writes) and lock."""

    def __init__(self, store: JobStore, record: dict[str, Any]) -> None:
        self.store = store
        self.record = record
        self.lock = threading.Lock()
        self.group_cancelled = False

    def update(self, **changes: Any) -> None:
        with self.lock:
            self.record.update(changes)
            self.record["heartbeat"] = now_ms()
            self.store.write(self.record)

    @property
    def job_id(self) -> str:
        return str(self.record["job_id"])


class JobRunner:
    """Runs the jobs handed to :meth:`submit` on the session ``get_spark()`` returns."""

    def __init__(self, get_spark: Callable[[], Any]) -> None:
        self._get_spark = get_spark
        self._running: dict[str, _Running] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._heartbeat = threading.Thread(
            target=self._beat, name="lna-jobs-heartbeat", daemon=True
        )
        self._heartbeat.start()

    def submit(self, message: Mapping[str, Any]) -> None:
        """Start one job: ``message`` has ``root``, ``job_id``, ``target``, ``impl``,
        ``properties`` and ``storage_options`` (the backend's, never stored), ``request``,
        ``checkpoints``."""
        store = JobStore(str(message["root"]), message.get("storage_options") or {})
        record = store.read(str(message["job_id"]))
        if record is None:
            return
        running = _Running(store, record)
        with self._lock:
            self._running[running.job_id] = running
        threading.Thread(
            target=self._run,
            args=(running, message),
            name=f"lna-job-{running.job_id[-8:]}",
            daemon=True,
        ).start()

    def stop(self, reason: str) -> None:
        """The owner is gone: every job still running fails with ``reason``."""
        self._stopping.set()
        with self._lock:
            left = list(self._running.values())
        for running in left:
            running.update(
                status=JobStatus.FAILED.value,
                finished_at=now_ms(),
                error=error_record(errors.ServiceUnavailableError(reason)),
            )

    def _run(self, running: _Running, message: Mapping[str, Any]) -> None:
        control: JobControl | None = None
        try:
            if running.store.cancel_requested(running.job_id):
                raise JobCancelled(f"job {running.job_id} was cancelled before it started")
            spark = self._get_spark()
            running.update(status=JobStatus.RUNNING.value, started_at=now_ms())
            control = JobControl(
                job_id=running.job_id,
                spark=spark,
                impl=str(message["impl"]),
                properties=dict(message["properties"]),
                checkpoints=dict(message.get("checkpoints") or {}),
                on_progress=lambda done, total: running.update(progress=[done, total]),
                is_cancelled=lambda: running.store.cancel_requested(running.job_id),
                on_checkpoint=lambda state: running.update(checkpoints=dict(state)),
            )
            body = load_body(str(message["target"]))
            spark.sparkContext.setJobGroup(running.job_id, f"lance job {running.job_id}", True)
            version = body(control, dict(message["request"]))
            running.update(
                status=JobStatus.SUCCEEDED.value, finished_at=now_ms(), version=int(version)
            )
        except JobCancelled:
            running.update(status=JobStatus.CANCELLED.value, finished_at=now_ms())
        except BaseException as exc:
            if running.store.cancel_requested(running.job_id):
                # a cancelled Spark job group surfaces as the stage's failure
                running.update(status=JobStatus.CANCELLED.value, finished_at=now_ms())
            else:
                running.update(
                    status=JobStatus.FAILED.value, finished_at=now_ms(), error=error_record(exc)
                )
        finally:
            if control is not None:
                control.close()
            with self._lock:
                self._running.pop(running.job_id, None)

    def _beat(self) -> None:
        while not self._stopping.wait(HEARTBEAT_SECONDS):
            with self._lock:
                running = list(self._running.values())
            for job in running:
                try:
                    job.update()
                    running_now = job.record.get("status") == JobStatus.RUNNING.value
                    # a queued job has no Spark work to cancel (and the session may still be
                    # starting: waiting for it here would stop every heartbeat)
                    if (
                        running_now
                        and not job.group_cancelled
                        and job.store.cancel_requested(job.job_id)
                    ):
                        job.group_cancelled = True
                        self._get_spark().sparkContext.cancelJobGroup(job.job_id)
                except Exception:
                    continue


def error_record(exc: BaseException) -> dict[str, Any]:
    """What a record keeps of a failure: the protocol code, the type, a bounded message
    with credentials masked."""
    if isinstance(exc, errors.LanceNamespaceError):
        code = int(exc.code)
        kind = type(exc).__name__
    elif lost := next((sign for sign in _EXECUTOR_LOST if sign in str(exc)), None):
        # not the request's fault and not a bug: the job's executor died (killed, out of
        # memory); the same request again resumes from the job's last commit
        return {
            "code": int(errors.ServiceUnavailableError.code),
            "type": "ServiceUnavailableError",
            "message": f"a Spark executor of the job was lost ({lost}); "
            "the same request again resumes from the job's last commit",
        }
    else:
        code = int(errors.InternalError.code)
        kind = type(exc).__name__
    message = errors.redact(str(exc))[:MAX_MESSAGE_CHARS]
    return {"code": code, "type": kind, "message": message}
