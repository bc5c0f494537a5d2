"""The named Spark clusters of a backend, and this process's drivers for them.

A backend's ``spark_cluster.<name>=<master>`` properties name the clusters a request's
``cluster`` may pick (``default`` is ``local[2]`` unless configured); ``active`` (or a
cluster configured as ``active``) is the SparkSession of this very process, for a library
running inside a Spark driver. An unknown name is InvalidInput and starts nothing.

Every other master gets one driver process per library process (``_driver``), started on
its first job and shared by every backend instance here, so the JVM's start is paid once.
The driver's stdin is its owner's pipe: when this process exits, the pipe closes and the
driver fails its running jobs and exits with it (at a clean exit, ``atexit`` closes the
pipes and waits for the drivers). A driver inherits this process's environment when it
starts: credentials a backend reads from the environment (AWS's, say) are the ones this
process had then; a backend's own properties travel with each job. So a driver serves
the environment it started with: when the credential variables of this process
(``AWS_*``, ``AZURE_*``, ``GOOGLE_*``, ``GCS_*``) differ from a driver's, a job gets a
driver of its own (a test's temporary AWS keys, a rotated key in a long-lived process).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from .. import errors
from ._runner import JobRunner, answer

DEFAULT_CLUSTER = "default"
DEFAULT_MASTER = "local[2]"
ACTIVE = "active"


@attrs.frozen
class Cluster:
    name: str
    #: a Spark master URL, or ``active`` for this process's SparkSession
    master: str


def clusters_of(config: Any) -> dict[str, str]:
    """The clusters a backend's configuration names (with ``default``)."""
    configured: Mapping[str, str] = getattr(config, "spark_clusters", None) or {}
    found = {DEFAULT_CLUSTER: DEFAULT_MASTER, **configured}
    return {name: master.strip() for name, master in found.items()}


def resolve(config: Any, name: str | None) -> Cluster:
    """The cluster ``name`` (None: ``default``) picks, or InvalidInput."""
    chosen = DEFAULT_CLUSTER if name is None else name
    known = clusters_of(config)
    if chosen == ACTIVE and ACTIVE not in known:
        return Cluster(ACTIVE, ACTIVE)
    master = known.get(chosen)
    if master is None:
        raise errors.InvalidInputError(
            f"unknown cluster {chosen!r}: this backend runs jobs on "
            f"{', '.join(sorted(known))} (configure more with spark_cluster.<name>=<master>)"
        )
    if not master:
        raise errors.InvalidInputError(f"cluster {chosen!r} has an empty master URL")
    return Cluster(chosen, master)


class _Driver:
    """One driver process, fed JSON lines on its stdin; it answers calls (:meth:`call`)
    as JSON lines on its stdout, which carries nothing else (the driver moves what Spark
    prints to stderr)."""

    def __init__(self, cluster: Cluster) -> None:
        env = dict(os.environ)
        # the driver imports what its owner can (job bodies registered by the owner)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        if cluster.master.startswith("local"):
            env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        log = os.environ.get("LNA_JOBS_DRIVER_LOG")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lance_namespace_async.pipeline._driver",
                cluster.master,
                f"lna-jobs-{cluster.name}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(log, "ab") if log else subprocess.DEVNULL,  # noqa: SIM115
            env=env,
            text=True,
            start_new_session=True,
        )
        self.lock = threading.Lock()
        self._waiting: dict[str, _Reply] = {}
        self._waiting_lock = threading.Lock()
        threading.Thread(target=self._read_replies, name="lna-driver-replies", daemon=True).start()

    def _read_replies(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        with contextlib.suppress(ValueError, OSError):  # closed by shutdown_drivers
            for line in stdout:
                try:
                    reply = json.loads(line)
                except ValueError:
                    continue
                with self._waiting_lock:
                    waiting = self._waiting.pop(str(reply.get("reply_to")), None)
                if waiting is not None:
                    waiting.give(reply)
        with contextlib.suppress(ValueError, OSError):
            stdout.close()
        # the driver is gone: nobody will answer the calls still waiting
        with self._waiting_lock:
            left, self._waiting = list(self._waiting.values()), {}
        for waiting in left:
            waiting.give({"error": _gone("the cluster's driver exited before it answered")})

    def call(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``message`` (an ``op`` the driver answers) and wait for its reply's
        ``result``; the reply's error is raised as its typed error, and no reply in
        ``timeout`` seconds is ServiceUnavailable."""
        call_id = uuid.uuid4().hex
        waiting = _Reply()
        with self._waiting_lock:
            self._waiting[call_id] = waiting
        try:
            self.send({**message, "call_id": call_id})
        except OSError:
            with self._waiting_lock:
                self._waiting.pop(call_id, None)
            raise errors.ServiceUnavailableError("the cluster's driver is gone") from None
        reply = waiting.wait(timeout)
        if reply is None:
            with self._waiting_lock:
                self._waiting.pop(call_id, None)
            raise errors.ServiceUnavailableError(
                f"the cluster's driver did not answer in {timeout:g}s"
            )
        return _result(reply)

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: Mapping[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        with self.lock:
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()


class _Reply:
    """One call's reply, handed from the reader thread to the caller."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._reply: dict[str, Any] | None = None

    def give(self, reply: dict[str, Any]) -> None:
        self._reply = reply
        self._ready.set()

    def wait(self, timeout: float) -> dict[str, Any] | None:
        return self._reply if self._ready.wait(timeout) else None


def _gone(reason: str) -> dict[str, Any]:
    return {
        "code": int(errors.ServiceUnavailableError.code),
        "type": "ServiceUnavailableError",
        "message": reason,
    }


def _result(reply: Mapping[str, Any]) -> dict[str, Any]:
    """A call's result, or its error raised as the typed error its code names."""
    error = reply.get("error")
    if error:
        raise errors.from_code(int(error["code"]), str(error["message"]))
    result: dict[str, Any] = reply.get("result") or {}
    return result


class _InProcess:
    """The ``active`` cluster: a runner on this process's own SparkSession (the user's
    own Spark driver, so calls are answered here too)."""

    def __init__(self) -> None:
        self.runner = JobRunner(_active_session)
        self.process_id = os.getpid()

    def send(self, message: Mapping[str, Any]) -> None:
        self.runner.submit(message)

    def call(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        del timeout  # answered in the calling thread
        return _result(answer(_active_session(), message))


def _active_session() -> Any:
    """This process's SparkSession: the calling thread's active one, else the default
    session of the process's SparkContext (job threads have no active session of their
    own). Never creates one: without a SparkContext, ``active`` is InvalidInput."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        return session
    if SparkContext._active_spark_context is None:
        raise errors.InvalidInputError("cluster 'active': this process has no SparkSession")
    return SparkSession.builder.getOrCreate()


#: the prefixes of environment variables that hold cloud credentials a driver may read
_CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCS_")


def _environment_key() -> str:
    """A digest of this process's credential variables (never their values)."""
    digest = hashlib.sha256()
    for name in sorted(os.environ):
        if name.startswith(_CREDENTIAL_PREFIXES):
            digest.update(f"{name}\0{os.environ[name]}\0".encode())
    return digest.hexdigest()


_drivers: dict[tuple[str, str], _Driver] = {}
_in_process: _InProcess | None = None
_lock = threading.Lock()
#: holds the atexit hook once it is registered (once per process)
_stopped_at_exit: list[object] = []


def driver_for(cluster: Cluster) -> tuple[int, Any]:
    """``(pid, handle)`` of the driver that runs ``cluster``'s jobs, started if needed
    (a driver that died is replaced). ``handle.send(message)`` hands it a job."""
    global _in_process
    with _lock:
        if cluster.master == ACTIVE:
            _active_session()  # refuse now, before a record is written
            if _in_process is None:
                _in_process = _InProcess()
            return _in_process.process_id, _in_process
        key = (cluster.master, _environment_key())
        driver = _drivers.get(key)
        if driver is None or not driver.alive():
            if not _drivers and not _stopped_at_exit:
                _stopped_at_exit.append(atexit.register(shutdown_drivers, 10.0))
            driver = _drivers[key] = _Driver(cluster)
        return driver.process.pid, driver


def call(cluster: Cluster, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """Ask ``cluster``'s driver (started if needed) to answer ``message`` (an ``op`` of
    ``_runner.CALLS``) within ``timeout`` seconds; its error is raised typed."""
    _, handle = driver_for(cluster)
    result: dict[str, Any] = handle.call(message, timeout)
    return result


def driver_processes() -> dict[str, int]:
    """The live driver processes of this process, master → pid (for tests and ops)."""
    with _lock:
        return {m: d.process.pid for (m, _), d in _drivers.items() if d.alive()}


def shutdown_drivers(timeout: float = 30.0) -> None:
    """Stop this process's driver processes (their running jobs fail) and wait for them;
    a driver that does not exit in ``timeout`` seconds is killed."""
    with _lock:
        drivers = list(_drivers.values())
        _drivers.clear()
    for driver in drivers:
        if driver.process.stdin is not None:
            with contextlib.suppress(OSError):
                driver.process.stdin.close()
    for driver in drivers:
        try:
            driver.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(driver.process.pid, signal.SIGKILL)
            driver.process.wait()
        if driver.process.stdout is not None:
            with contextlib.suppress(ValueError, OSError):
                driver.process.stdout.close()
