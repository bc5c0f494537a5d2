"""A real Hive Metastore for the hive backend's tests, and a TCP proxy to break its links.

``hive_metastore(workdir)`` runs Apache Hive's own metastore server
(``org.apache.hadoop.hive.metastore.HiveMetaStore``, Hive 2.3.10) from the jars that the
``pyspark`` wheel ships (``<pyspark>/jars``: hive-metastore, Derby, DataNucleus, HikariCP,
libthrift, Hadoop's client), on an embedded Derby database, with everything it writes
under ``workdir``:

==========================  ==========================================================
``workdir/conf``            ``hive-site.xml`` (first on the classpath)
``workdir/metastore_db``    the Derby database (schema created on start)
``workdir/warehouse``       ``hive.metastore.warehouse.dir`` (``<db>.db`` folders)
``workdir/logs/hive.log``   Hive's log (:attr:`Metastore.log`)
``workdir/logs/jvm.out``    the JVM's stdout and stderr (:attr:`Metastore.console`)
``workdir/logs/derby.log``  Derby's log (``derby.stream.error.file``)
``workdir/tmp``             ``java.io.tmpdir``, and every Hive scratch/resource dir
==========================  ==========================================================

Where the logs go (measured: after a run nothing new appears in ``/tmp`` or
``/tmp/$USER``):

* Hive's ``hive-log4j2.properties`` (in hive-common) writes to
  ``${sys:hive.log.dir}/${sys:hive.log.file}`` and defaults ``hive.log.dir`` to
  ``${sys:java.io.tmpdir}/${sys:user.name}``: the JVM gets ``-Dhive.log.dir`` *and*
  ``-Djava.io.tmpdir`` pointing under ``workdir``.
* Derby writes ``derby.log`` into the working directory unless told otherwise: the JVM
  gets ``-Dderby.stream.error.file`` and runs with ``cwd=workdir``.
* The HiveConf scratch and resource directories (``hive.exec.scratchdir``,
  ``hive.exec.local.scratchdir``, ``hive.downloaded.resources.dir``,
  ``hive.querylog.location``) are set under ``workdir/tmp`` in ``hive-site.xml``.
* ``-Dlog4j2.contextSelector=...ClassLoaderContextSelector`` is required: pyspark's jars
  select log4j2's async context selector, whose LMAX disruptor dependency is not shipped,
  and the JVM dies at its first log line without this override.

Binding: Hive 2.3.10 has no bind-host setting (``HiveMetaStore.startMetaStore`` calls
``HiveAuthUtils.getServerSocket(null, port)``, i.e. the wildcard address;
``hive.metastore.thrift.bind.host`` only exists from Hive 3). The server therefore
listens on every interface of the machine at a free port, and clients use
``thrift://127.0.0.1:PORT``.

No orphans: the JVM is started without a shell (``setpriv`` execs it, so the PID is the
JVM's) in a session of its own, with ``PR_SET_PDEATHSIG=SIGKILL`` so that it dies with
the test process even when that one is killed with SIGKILL (``setpriv --pdeathsig`` from
util-linux, else ``prctl`` in a ``preexec_fn``). On exit of the context manager it is sent
SIGTERM (the metastore's shutdown hook runs), then SIGKILL after a grace period, and
reaped.

Nothing here skips: a missing ``java`` or ``pyspark`` raises :class:`MetastoreError`,
so CI fails loudly instead of silently not testing the backend.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = [
    "Metastore",
    "MetastoreError",
    "TcpProxy",
    "free_port",
    "hive_metastore",
    "metastore_databases",
    "pyspark_jars",
]

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
STARTUP_TIMEOUT = 90.0
STOP_GRACE = 10.0
_PR_SET_PDEATHSIG = 1


class MetastoreError(RuntimeError):
    """The metastore could not be started (or its prerequisites are missing)."""


@dataclass
class Metastore:
    """A running metastore: connect to :attr:`uri`."""

    uri: str
    port: int
    warehouse: Path
    log: Path
    console: Path
    workdir: Path
    pid: int
    startup_seconds: float
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def log_tail(self, lines: int = 60) -> str:
        return _tail(self.console, lines) + "\n" + _tail(self.log, lines)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pyspark_jars() -> Path:
    """``<pyspark>/jars``, found without importing pyspark (which starts nothing but is slow)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise MetastoreError(
            "pyspark is not installed: the hive tests run Hive's metastore from the jars "
            "the pyspark wheel ships (pip install 'pyspark==4.0.1')"
        )
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("hive-metastore-*.jar")):
        raise MetastoreError(f"no hive-metastore jar in {jars}: is this a full pyspark wheel?")
    return jars


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise MetastoreError("no java on PATH (and JAVA_HOME unset): the Hive metastore needs 17")
    return found


def _site_xml(properties: dict[str, str]) -> str:
    entries = "\n".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
        for k, v in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{entries}\n</configuration>\n'


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    return f"--- {path} (last {lines} lines) ---\n" + "\n".join(text.splitlines()[-lines:])


def metastore_databases(host: str, port: int, timeout_ms: int = 5000) -> list[str]:
    """``get_all_databases`` over a fresh thrift connection (pymetastore's client)."""
    from pymetastore.hive_metastore import ThriftHiveMetastore
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout_ms)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
        return list(client.get_all_databases())
    finally:
        transport.close()


def _die_with_parent() -> tuple[list[str], Callable[[], None] | None]:
    """How to SIGKILL the JVM when the test process dies: ``PR_SET_PDEATHSIG`` (Linux).

    util-linux's ``setpriv --pdeathsig KILL`` sets it and execs java (same PID, no
    ``preexec_fn`` and its fork-with-threads caveats); without setpriv, a ``preexec_fn``
    calls ``prctl`` itself (looked up beforehand, so nothing else runs in the child).
    Elsewhere there is no such guard and only the context manager stops the JVM.
    """
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        return [setpriv, "--pdeathsig", "KILL"], None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return [], None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return [], preexec


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after a grace period; always reaped (no zombie, no orphan)."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        process.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait(STOP_GRACE)


def _launch(workdir: Path, port: int, jars: Path, java: str) -> subprocess.Popen[bytes]:
    conf, logs, tmp = workdir / "conf", workdir / "logs", workdir / "tmp"
    wrapper, preexec = _die_with_parent()
    command = [
        *wrapper,
        java,
        "-Xmx512m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # C1 only: a faster start for a short-lived server
        "-XX:-UsePerfData",  # else the JVM writes /tmp/hsperfdata_$USER/<pid>
        "-cp",
        f"{conf}{os.pathsep}{jars}/*",
        "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
        f"-Dhive.log.dir={logs}",
        "-Dhive.log.file=hive.log",
        f"-Djava.io.tmpdir={tmp}",
        f"-Dderby.stream.error.file={logs / 'derby.log'}",
        f"-Dderby.system.home={workdir}",
        "-Djava.net.preferIPv4Stack=true",
        MAIN_CLASS,
        "-p",
        str(port),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HIVE_", "HADOOP_"))}
    env["HADOOP_USER_NAME"] = env.get("USER", "hive")
    console = (logs / "jvm.out").open("ab")
    try:
        return subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
        )
    finally:
        console.close()


def _wait_ready(process: subprocess.Popen[bytes], port: int, deadline: float) -> None:
    last: BaseException | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise MetastoreError(f"the metastore JVM exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            if metastore_databases("127.0.0.1", port) == ["default"]:
                return
        except Exception as exc:  # not up yet: refused, reset, or timed out
            last = exc
        time.sleep(0.25)
    raise MetastoreError(f"the metastore did not answer within the timeout (last: {last!r})")


@contextlib.contextmanager
def hive_metastore(
    workdir: Path,
    *,
    timeout: float = STARTUP_TIMEOUT,
    site: Mapping[str, str] | None = None,
) -> Iterator[Metastore]:
    """Run a Hive Metastore with its state under ``workdir``; stop it (by PID) at exit.

    ``site`` adds or overrides ``hive-site.xml`` properties.
    """
    jars, java = pyspark_jars(), java_executable()
    workdir = workdir.resolve()
    for sub in ("conf", "logs", "tmp", "warehouse"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    tmp, warehouse = workdir / "tmp", workdir / "warehouse"
    (workdir / "conf" / "hive-site.xml").write_text(
        _site_xml(
            {
                "javax.jdo.option.ConnectionURL": (
                    f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true"
                ),
                "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
                "datanucleus.schema.autoCreateAll": "true",
                "hive.metastore.schema.verification": "false",
                "datanucleus.connectionPoolingType": "HikariCP",
                "hive.metastore.warehouse.dir": str(warehouse),
                "hive.exec.scratchdir": str(tmp / "scratch"),
                "hive.exec.local.scratchdir": str(tmp / "local-scratch"),
                "hive.downloaded.resources.dir": str(tmp / "resources"),
                "hive.querylog.location": str(tmp / "querylog"),
                "hive.server2.logging.operation.log.location": str(tmp / "operation-logs"),
                "fs.defaultFS": "file:///",
                **(site or {}),
            }
        )
    )
    for attempt in range(3):  # the free port may be taken before the JVM binds it
        port = free_port()
        started = time.monotonic()
        process = _launch(workdir, port, jars, java)
        try:
            _wait_ready(process, port, started + timeout)
        except BaseException as exc:
            _stop(process)
            tail = (
                _tail(workdir / "logs" / "jvm.out", 60)
                + "\n"
                + _tail(workdir / "logs" / "hive.log", 60)
            )
            if isinstance(exc, MetastoreError) and "Address already in use" in tail and attempt < 2:
                continue
            if isinstance(exc, MetastoreError):
                raise MetastoreError(f"{exc}\n{tail}") from None
            raise
        break
    metastore = Metastore(
        uri=f"thrift://127.0.0.1:{port}",
        port=port,
        warehouse=warehouse,
        log=workdir / "logs" / "hive.log",
        console=workdir / "logs" / "jvm.out",
        workdir=workdir,
        pid=process.pid,
        startup_seconds=time.monotonic() - started,
        process=process,
    )
    try:
        yield metastore
    finally:
        _stop(process)


# -- a TCP proxy whose connections can be cut -------------------------------------------------


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``target``; :meth:`cut` closes every open link.

    Counts the connections it accepted (:attr:`accepted`) and the most that were open at
    once (:attr:`peak`), so a client's connection pooling is observable from outside.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._links: set[tuple[socket.socket, socket.socket]] = set()
        self.accepted = 0
        self.peak = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def open_links(self) -> int:
        with self._lock:
            return len(self._links)

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self.cut()
        self._thread.join(5)

    def cut(self) -> int:
        """Close every open link (both sides); returns how many were cut."""
        with self._lock:
            links, self._links = self._links, set()
        for pair in links:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        return len(links)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            pair = (client, upstream)
            with self._lock:
                self._links.add(pair)
                self.accepted += 1
                self.peak = max(self.peak, len(self._links))
            threading.Thread(target=self._pump, args=(pair,), daemon=True).start()

    def _pump(self, pair: tuple[socket.socket, socket.socket]) -> None:
        client, upstream = pair
        other = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            try:
                selector.register(client, selectors.EVENT_READ)
                selector.register(upstream, selectors.EVENT_READ)
                while True:
                    for key, _ in selector.select(timeout=1):
                        data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                        if not data:
                            raise ConnectionError("closed")
                        other[key.fileobj].sendall(data)  # type: ignore[index]
                    with self._lock:
                        if pair not in self._links:
                            return
            except (OSError, ValueError, ConnectionError):
                pass
            finally:
                with self._lock:
                    self._links.discard(pair)
                for sock in pair:
                    with contextlib.suppress(OSError):
                        sock.close()
