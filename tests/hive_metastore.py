"""Real Hive Metastores for the hive backend's tests, and a TCP proxy to break their links.

``hive_metastore(workdir, version=...)`` runs Apache Hive's own metastore server
(``org.apache.hadoop.hive.metastore.HiveMetaStore``) on an embedded Derby database, in
one of two releases (:data:`HIVE_VERSIONS`):

``"2.3"``  Hive 2.3.10, from the jars the ``pyspark`` wheel ships (``<pyspark>/jars``:
           hive-metastore, Derby, DataNucleus, HikariCP, libthrift, Hadoop's client).
``"4"``    Hive 4 (``org.apache.hive:hive-standalone-metastore-server``, see
           ``jvm/hive4/pom.xml``), its classpath resolved by Maven through
           ``tests/jvm.py``; the schema is created by DataNucleus on start
           (``datanucleus.schema.autoCreateAll``, ``metastore.schema.verification=false``).

Everything it writes is under ``workdir``:

==========================  ==========================================================
``workdir/conf``            ``hive-site.xml`` / ``metastore-site.xml`` (first on the
                            classpath), and Hive 4's ``metastore-log4j2.properties``
``workdir/metastore_db``    the Derby database (schema created on start)
``workdir/warehouse``       the warehouse (``<db>.db`` folders); Hive 4's external one
``workdir/managed``         Hive 4's managed warehouse (ACID tables; unused here)
``workdir/logs/hive.log``   Hive's log (:attr:`Metastore.log`)
``workdir/jvm.out``         the JVM's stdout and stderr (:attr:`Metastore.console`)
``workdir/logs/derby.log``  Derby's log (``derby.stream.error.file``)
``workdir/tmp``             ``java.io.tmpdir``, and every Hive scratch/resource dir
==========================  ==========================================================

Where the logs go (measured: after a run nothing new appears in ``/tmp`` or
``/tmp/$USER``):

* Hive 2.3's ``hive-log4j2.properties`` (in hive-common) writes to
  ``${sys:hive.log.dir}/${sys:hive.log.file}`` and defaults ``hive.log.dir`` to
  ``${sys:java.io.tmpdir}/${sys:user.name}``: the JVM gets ``-Dhive.log.dir`` *and*
  ``-Djava.io.tmpdir`` pointing under ``workdir``. Hive 4's standalone jars ship no
  log4j2 configuration at all (only its tarball does): ``conf`` gets one that writes
  ``logs/hive.log``, named by ``-Dlog4j.configurationFile``.
* Derby writes ``derby.log`` into the working directory unless told otherwise: the JVM
  gets ``-Dderby.stream.error.file`` and runs with ``cwd=workdir``.
* The HiveConf scratch and resource directories (``hive.exec.scratchdir``,
  ``hive.exec.local.scratchdir``, ``hive.downloaded.resources.dir``,
  ``hive.querylog.location``) are set under ``workdir/tmp``.
* ``-Dlog4j2.contextSelector=...ClassLoaderContextSelector`` is required for 2.3:
  pyspark's jars select log4j2's async context selector, whose LMAX disruptor dependency
  is not shipped, and the JVM dies at its first log line without this override.

Binding: Hive 2.3.10 has no bind-host setting (``HiveMetaStore.startMetaStore`` calls
``HiveAuthUtils.getServerSocket(null, port)``, i.e. the wildcard address); it listens on
every interface at a free port. Hive 4 gets ``metastore.thrift.bind.host=127.0.0.1``.
Clients use ``thrift://127.0.0.1:PORT`` in both cases.

The JVM is started by ``tests/jvm.py``'s one launcher (no shell, a session of its own,
``PR_SET_PDEATHSIG`` so it dies with the test process, SIGTERM then SIGKILL at exit).

Missing prerequisites (no Java 17+, no Maven for Hive 4, no pyspark for 2.3) raise
:class:`jvm.JvmUnavailable`: fixtures pass the start through ``jvm.need``, so outside
CI the tests skip with an install hint and with ``CI=true`` they fail. A metastore that
starts and dies raises :class:`MetastoreError` (a failure everywhere, never a skip).

:class:`HostileMetastore` is no metastore: a socket server answering every request one
hostile way (silence, a trickle, a flood, a malformed reply), which Hive never does.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import selectors
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from jvm import (
    JvmUnavailable,
    classpath,
    free_port,
    java_executable,
    java_server,
    port_open,
)

__all__ = [
    "HIVE_VERSIONS",
    "Metastore",
    "MetastoreError",
    "TcpProxy",
    "free_port",
    "hive_metastore",
    "metastore_databases",
    "pyspark_jars",
]

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
#: the releases the suite runs: Hive 2.3 (pyspark's jars) and Hive 4 (jvm/hive4)
HIVE_VERSIONS = ("2.3", "4")
#: measured on a loaded 2-core machine: 2.3 starts in ~10 s, 4 in ~25 s (schema creation)
STARTUP_TIMEOUT = 180.0
_LOG4J_CONTEXT = "org.apache.logging.log4j.core.selector.ClassLoaderContextSelector"


class MetastoreError(RuntimeError):
    """The metastore started and then failed (its log's tail is in the message)."""


@dataclass
class Metastore:
    """A running metastore: connect to :attr:`uri`."""

    version: str
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


def pyspark_jars() -> Path:
    """``<pyspark>/jars``, found without importing pyspark (which starts nothing but is slow)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise JvmUnavailable(
            "pyspark is not installed: Hive 2.3's metastore runs from the jars the pyspark "
            "wheel ships (pip install -e '.[dev]')"
        )
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("hive-metastore-*.jar")):
        raise JvmUnavailable(f"no hive-metastore jar in {jars}: is this a full pyspark wheel?")
    return jars


def _site_xml(properties: Mapping[str, str]) -> str:
    entries = "\n".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
        for k, v in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{entries}\n</configuration>\n'


def _log4j2_properties(log: Path) -> str:
    """Hive 4's log: INFO and up to ``log`` (its standalone jars configure nothing)."""
    return "\n".join(
        [
            "status = WARN",
            "appender.file.type = File",
            "appender.file.name = file",
            f"appender.file.fileName = {log}",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = %d{ISO8601} %5p [%t] %c{2}: %m%n",
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.file.ref = file",
            "",
        ]
    )


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


def _answers(port: int) -> bool:
    """Listening (checked first: thrift logs every refused connection) and serving."""
    return port_open(port) and metastore_databases("127.0.0.1", port) == ["default"]


def _settings(version: str, workdir: Path) -> dict[str, str]:
    """The site properties of ``version``, everything under ``workdir``."""
    tmp, warehouse = workdir / "tmp", workdir / "warehouse"
    common = {
        "javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true"
        ),
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "datanucleus.connectionPoolingType": "HikariCP",
        "hive.exec.scratchdir": str(tmp / "scratch"),
        "hive.exec.local.scratchdir": str(tmp / "local-scratch"),
        "hive.downloaded.resources.dir": str(tmp / "resources"),
        "hive.querylog.location": str(tmp / "querylog"),
        "hive.server2.logging.operation.log.location": str(tmp / "operation-logs"),
        "fs.defaultFS": "file:///",
    }
    if version == "2.3":
        return {
            **common,
            "hive.metastore.schema.verification": "false",
            "hive.metastore.warehouse.dir": str(warehouse),
        }
    return {
        **common,
        "metastore.schema.verification": "false",
        # Hive 3+ splits the warehouse: databases (and so external tables such as Lance's)
        # go under the external one; Hive 4 refuses an external table inside the managed one
        "metastore.warehouse.dir": str(workdir / "managed"),
        "metastore.warehouse.external.dir": str(warehouse),
        "metastore.thrift.bind.host": "127.0.0.1",
    }


def _classpath(version: str, conf: Path) -> list[str]:
    if version == "2.3":
        return [str(conf), f"{pyspark_jars()}/*"]
    return [str(conf), *classpath("hive4").split(os.pathsep)]


@contextlib.contextmanager
def hive_metastore(
    workdir: Path,
    *,
    version: str = "2.3",
    timeout: float = STARTUP_TIMEOUT,
    site: Mapping[str, str] | None = None,
) -> Iterator[Metastore]:
    """Run a Hive Metastore ``version`` with its state under ``workdir``; stop it at exit.

    ``site`` adds or overrides site properties.
    """
    if version not in HIVE_VERSIONS:
        raise ValueError(f"version must be one of {HIVE_VERSIONS}, not {version!r}")
    workdir = workdir.resolve()
    conf, logs = workdir / "conf", workdir / "logs"
    for sub in ("conf", "logs", "tmp", "warehouse"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    java = java_executable()  # JvmUnavailable: skip outside CI
    entries = _classpath(version, conf)
    site_file = "hive-site.xml" if version == "2.3" else "metastore-site.xml"
    (conf / site_file).write_text(_site_xml({**_settings(version, workdir), **(site or {})}))
    options = [
        f"-Dlog4j2.contextSelector={_LOG4J_CONTEXT}",
        f"-Dhive.log.dir={logs}",
        "-Dhive.log.file=hive.log",
        f"-Dderby.stream.error.file={logs / 'derby.log'}",
        f"-Dderby.system.home={workdir}",
    ]
    if version != "2.3":
        log4j = conf / "metastore-log4j2.properties"
        log4j.write_text(_log4j2_properties(logs / "hive.log"))
        options.append(f"-Dlog4j.configurationFile={log4j}")
    for attempt in range(3):  # the free port may be taken before the JVM binds it
        port = free_port()
        running = java_server(
            f"Hive Metastore {version}",
            main_class=MAIN_CLASS,
            classpath_entries=entries,
            workdir=workdir,
            port=port,
            ready=lambda port=port: _answers(port),
            args=["-p", str(port)],
            jvm_options=options,
            env={"HADOOP_USER_NAME": os.environ.get("USER", "hive")},
            drop_env=("HIVE_", "HADOOP_"),
            java=java,
            startup_timeout=timeout,
        )
        stack = contextlib.ExitStack()
        try:
            server = stack.enter_context(running)
        except (JvmUnavailable, RuntimeError) as exc:  # it started, then died or hung
            tail = _tail(workdir / "jvm.out", 60) + "\n" + _tail(logs / "hive.log", 60)
            if "Address already in use" in tail and attempt < 2:
                continue
            raise MetastoreError(f"{exc}\n{tail}") from None
        break
    with stack:
        yield Metastore(
            version=version,
            uri=f"thrift://127.0.0.1:{port}",
            port=port,
            warehouse=workdir / "warehouse",
            log=logs / "hive.log",
            console=server.console,
            workdir=workdir,
            pid=server.process.pid,
            startup_seconds=server.startup_seconds,
            process=server.process,
        )


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


class HostileMetastore:
    """Not Hive: a socket server that answers every request one hostile way, for what a
    real metastore never does (the backend's budget per call).

    ``answer`` is ``"silent"`` (reads the request, never answers), ``"trickle"`` (a
    reply's 4 KiB method name, a byte every 50 ms), ``"flood"`` (a Thrift length prefix
    of 2 GiB, then bytes as fast as the client takes them) or ``"bad-version"`` (a reply
    of an unknown Thrift protocol version: a malformed answer). :attr:`accepted` counts
    connections.
    """

    def __init__(self, answer: str) -> None:
        if answer not in ("silent", "trickle", "flood", "bad-version"):
            raise ValueError(f"unknown answer {answer!r}")
        self.answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.accepted = 0
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def __enter__(self) -> HostileMetastore:
        self._spawn(self._accept)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(5)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name="hostile-hms", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._open.add(client)
                self.accepted += 1
            self._spawn(self._serve, client)

    def _serve(self, client: socket.socket) -> None:
        try:
            client.settimeout(0.05)
            with contextlib.suppress(TimeoutError):
                client.recv(65536)  # the request (its first segment is enough)
            if self.answer == "bad-version":
                client.sendall(b"\x80\x09\x00\x02" + b"\x00" * 64)
            if self.answer == "trickle":  # a reply whose 4 KiB method name comes slowly
                client.sendall(b"\x80\x01\x00\x02\x00\x00\x10\x00")
            if self.answer == "flood":
                client.settimeout(5)
                client.sendall(b"\x7f\xff\xff\xff")
            chunk = b"x" * 65536
            while not self._stopped.wait(0.05 if self.answer == "trickle" else 0):
                if self.answer == "trickle":
                    client.sendall(b"x")
                elif self.answer == "flood":
                    client.sendall(chunk)
                else:
                    self._stopped.wait(0.1)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(client)
            client.close()
