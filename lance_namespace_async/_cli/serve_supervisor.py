"""``lance-ns serve --workers N``: N serving processes on one port, and SIGHUP reloads.

The supervisor binds the port once and starts N serving processes ("workers"; not the
storage workers, which each serving process keeps in its own pool) that inherit the
listening socket: the kernel hands each new connection to one of them, and a worker that
stops accepting leaves the socket open for the others, so no connection is refused while
one drains. Each worker runs ``lance-ns serve`` with the same arguments (it reads the config
file itself) and builds its own backend connection.

* A worker that dies is started again after a backoff (0.1 s, doubling while workers keep
  dying within 10 s of their start, at most 30 s); :func:`add_worker_restart_listener`
  callbacks hear of each restart (metrics count them).
* SIGTERM (or SIGINT): the supervisor closes its socket and passes SIGTERM on; each worker
  stops accepting, lets its requests in flight finish (up to ``--shutdown-grace`` when it has
  storage workers), and exits; the supervisor exits 0 once they all did (it kills those
  still running ``--shutdown-grace`` + 30 s later).
* SIGHUP: the supervisor reads and checks the config file again; a file that fails keeps the
  running configuration (logged). Otherwise a new generation of workers starts with it, and
  each old worker is sent SIGTERM once the new ones are up, so its requests in flight finish
  on the old backend connection. host, port and workers cannot change without a restart:
  a change is logged and ignored.

Per-process state stays per process: the directory backend's manifest copy (each worker
re-reads the manifest after another's write), single-flight token and config fetches (one
per worker), the storage-worker pool (its default size and memory divided among the
workers). What must hold across workers, MergeInsertIntoTable's one-at-a-time per table,
uses a lock directory the supervisor makes (``server._table_locks``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ..server._table_locks import LOCK_DIR_ENV

__all__ = [
    "LISTEN_FD_ENV",
    "READY_FD_ENV",
    "Supervisor",
    "add_worker_restart_listener",
    "inherited_socket",
    "is_worker",
    "signal_ready",
    "worker_slot",
]

#: set in a worker's environment: the inherited listening socket's descriptor
LISTEN_FD_ENV = "LANCE_NS_SERVE_LISTEN_FD"
#: set in a worker's environment: a pipe to write one byte to once it serves
READY_FD_ENV = "LANCE_NS_SERVE_READY_FD"
#: set in a worker's environment and kept there: its slot, 0 .. N-1 (a replacement keeps
#: the slot), e.g. for labels, or for what only one worker should do
WORKER_SLOT_ENV = "LANCE_NS_SERVE_WORKER"

MAX_BACKOFF_SECONDS = 30.0
#: a worker that lived this long is healthy again: the next death restarts at once-ish
HEALTHY_AFTER_SECONDS = 10.0
#: how long past --shutdown-grace workers get before they are killed
KILL_MARGIN_SECONDS = 30.0
#: an old worker is retired this long after a reload even if its successor never said ready
READY_TIMEOUT_SECONDS = 60.0

_restart_listeners: list[Callable[[int, int | None], None]] = []


def add_worker_restart_listener(callback: Callable[[int, int | None], None]) -> None:
    """Call ``callback(slot, exit_status)`` each time the supervisor restarts a worker that
    died (``exit_status`` is the negative signal number when a signal killed it)."""
    _restart_listeners.append(callback)


def is_worker() -> bool:
    """Whether this process is a worker a supervisor started (until it took the socket)."""
    return LISTEN_FD_ENV in os.environ


def worker_slot() -> int | None:
    """This serving process's slot among the supervisor's workers; None when unsupervised."""
    slot = os.environ.get(WORKER_SLOT_ENV)
    return int(slot) if slot is not None and slot.isdigit() else None


def inherited_socket() -> socket.socket:
    """The listening socket the supervisor passed on (its descriptor leaves the environment,
    so storage workers this process starts do not think they are serving workers)."""
    fd = int(os.environ.pop(LISTEN_FD_ENV))
    _die_with_supervisor()
    return socket.socket(fileno=fd)


def _die_with_supervisor() -> None:
    """SIGTERM (a drain) when the supervisor dies, even by SIGKILL: set here, in the
    worker, as a preexec_fn would make the supervisor fork instead of spawn."""
    import ctypes

    supervisor = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != supervisor:  # it died before the line above
        os.kill(os.getpid(), signal.SIGTERM)


def signal_ready() -> None:
    """Tell the supervisor this worker is about to serve (its backend is built)."""
    fd_text = os.environ.pop(READY_FD_ENV, None)
    if fd_text is None:
        return
    with contextlib.suppress(OSError):
        os.write(int(fd_text), b"r")
        os.close(int(fd_text))


def _log(message: str) -> None:
    print(f"lance-ns serve: {message}", file=sys.stderr, flush=True)


def _bind(host: str, port: int) -> socket.socket:
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = info[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    sock.bind(address)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@dataclass
class _Worker:
    slot: int
    process: subprocess.Popen[bytes]
    ready_fd: int
    started: float
    ready: bool = False
    #: replaced by a reload: SIGTERM once its successors serve; never restarted
    old: bool = False
    retiring: bool = False


@dataclass
class Supervisor:
    """Runs ``command`` (``lance-ns serve`` and its arguments) as ``workers`` processes."""

    command: Sequence[str]
    workers: int
    host: str
    port: int
    shutdown_grace: float
    #: re-reads and checks the configuration: (host, port, workers), or raises with why
    reload: Callable[[], tuple[str, int, int]]
    #: (host, port) of ``--metrics-port``: served here for every worker (prometheus-client's
    #: multiprocess mode: the workers write their values to a directory this process reads)
    metrics_at: tuple[str, int] | None = None
    _running: list[_Worker] = field(default_factory=list)
    _failures: dict[int, int] = field(default_factory=dict)
    _respawn_at: dict[int, float] = field(default_factory=dict)
    _wake: threading.Event = field(default_factory=threading.Event)
    _stop: bool = False
    _reload_asked: bool = False
    _retire_deadline: float | None = None

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; 0 once every worker is gone."""
        self._sock = _bind(self.host, self.port)
        self._lock_dir = tempfile.mkdtemp(prefix="lance-ns-serve-locks-")
        metrics_server, metrics_dir = self._serve_metrics()
        previous = {
            sig: signal.signal(sig, self._on_signal)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        }
        try:
            for slot in range(self.workers):
                self._spawn(slot)
            while not self._stop:
                self._wake.wait(0.1)
                self._wake.clear()
                if self._reload_asked:
                    self._reload_asked = False
                    self._reload()
                self._tend()
            return self._shut_down()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            with contextlib.suppress(OSError):
                self._sock.close()
            shutil.rmtree(self._lock_dir, ignore_errors=True)
            if metrics_server is not None:
                metrics_server.shutdown()
            if metrics_dir is not None:
                shutil.rmtree(metrics_dir, ignore_errors=True)

    def _serve_metrics(self) -> tuple[Any, str | None]:
        """Start the metrics port over all workers' values (before any worker starts, so
        each inherits ``PROMETHEUS_MULTIPROC_DIR``)."""
        if self.metrics_at is None:
            return None, None
        from ..server._metrics import start_metrics_server

        metrics_dir = tempfile.mkdtemp(prefix="lance-ns-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        try:
            return start_metrics_server(*self.metrics_at), metrics_dir
        except BaseException:
            shutil.rmtree(metrics_dir, ignore_errors=True)
            raise

    def _reaped(self, pid: int, *, restarted: bool) -> None:
        if self.metrics_at is not None:
            from ..server._metrics import worker_exited

            worker_exited(pid, restarted=restarted)

    # -- signals ---------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            self._reload_asked = True
        else:
            self._stop = True
        self._wake.set()

    # -- workers ---------------------------------------------------------------------------

    def _spawn(self, slot: int) -> None:
        ready_read, ready_write = os.pipe()
        os.set_blocking(ready_read, False)
        fd = self._sock.fileno()
        env = {
            **os.environ,
            LISTEN_FD_ENV: str(fd),
            READY_FD_ENV: str(ready_write),
            LOCK_DIR_ENV: self._lock_dir,
            WORKER_SLOT_ENV: str(slot),
        }
        process = subprocess.Popen(
            list(self.command),
            pass_fds=(fd, ready_write),
            env=env,
        )
        os.close(ready_write)
        self._running.append(_Worker(slot, process, ready_read, time.monotonic()))
        _log(f"worker {slot} started (pid {process.pid})")

    def _tend(self) -> None:
        """Note workers that said ready, restart the dead, retire the replaced."""
        now = time.monotonic()
        for worker in list(self._running):
            if not worker.ready:
                with contextlib.suppress(BlockingIOError, OSError):
                    worker.ready = bool(os.read(worker.ready_fd, 1))
            status = worker.process.poll()
            if status is None:
                continue
            self._running.remove(worker)
            os.close(worker.ready_fd)
            retired = worker.retiring or worker.old or self._stop
            self._reaped(worker.process.pid, restarted=not retired)
            if retired:
                continue
            lived = now - worker.started
            failures = 0 if lived >= HEALTHY_AFTER_SECONDS else self._failures.get(worker.slot, 0)
            self._failures[worker.slot] = failures + 1
            delay = min(MAX_BACKOFF_SECONDS, 0.1 * 2**failures)
            self._respawn_at[worker.slot] = now + delay
            _log(
                f"worker {worker.slot} (pid {worker.process.pid}) exited with status {status}; "
                f"restarting it in {delay:.1f} s"
            )
            for listener in _restart_listeners:
                with contextlib.suppress(Exception):
                    listener(worker.slot, status)
        for slot, when in list(self._respawn_at.items()):
            if when <= now:
                del self._respawn_at[slot]
                self._spawn(slot)
        self._retire_replaced(now)

    def _retire_replaced(self, now: float) -> None:
        """After a reload: SIGTERM the old generation once the new one is ready."""
        if self._retire_deadline is None:
            return
        new = [w for w in self._running if not w.old]
        if all(w.ready for w in new) or now >= self._retire_deadline:
            for worker in self._running:
                if worker.old:
                    worker.retiring = True
                    with contextlib.suppress(ProcessLookupError):
                        worker.process.send_signal(signal.SIGTERM)
            self._retire_deadline = None

    def _reload(self) -> None:
        try:
            host, port, workers = self.reload()
        except (Exception, SystemExit) as exc:  # parser.error is SystemExit
            reason = exc.code if isinstance(exc, SystemExit) else exc
            _log(f"SIGHUP: the configuration was not reloaded, the running one stays ({reason})")
            return
        for name, old, new in (
            ("host", self.host, host),
            ("port", self.port, port),
            ("workers", self.workers, workers),
        ):
            if old != new:
                _log(f"SIGHUP: {name} cannot change without a restart; keeping {old}")
        for worker in self._running:
            worker.old = True
        self._respawn_at.clear()
        for slot in range(self.workers):
            self._spawn(slot)
        self._retire_deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        _log("SIGHUP: configuration reloaded; old workers finish their requests and exit")

    def _shut_down(self) -> int:
        """Pass SIGTERM on and wait for every worker; kill the late ones."""
        self._sock.close()  # the workers' copies keep serving what they accepted
        for worker in self._running:
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.shutdown_grace + KILL_MARGIN_SECONDS
        clean = True
        for worker in self._running:
            try:
                status = worker.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                status = worker.process.wait()
            clean = clean and status == 0
            os.close(worker.ready_fd)
        self._running.clear()
        _log("stopped" if clean else "stopped (some workers did not exit cleanly)")
        return 0
