"""Shared fixtures: real directory catalogs on real temporary folders, real Hive Metastores."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pytest
from hive_metastore import Metastore, MetastoreError, hive_metastore
from iceberg_real_server import ReferenceIcebergServer, reference_iceberg

import lance_namespace_async as lna
from jvm import need
from lance_namespace_async import errors
from lance_namespace_async.directory import DirectoryNamespace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "catalog"
    path.mkdir()
    return path


@pytest.fixture
async def ns(root: Path) -> AsyncIterator[DirectoryNamespace]:
    async with lna.connect("dir", {"root": str(root)}) as namespace:
        assert isinstance(namespace, DirectoryNamespace)
        yield namespace


@pytest.fixture
async def plain(root: Path) -> AsyncIterator[DirectoryNamespace]:
    """A dir backend on ``root`` without the manifest copy: every call that ``ns`` may
    answer on the table itself is pylance's operation here (the peer to compare with)."""
    async with lna.connect("dir", {"root": str(root)}) as namespace:
        assert isinstance(namespace, DirectoryNamespace)
        namespace._snapshots = None
        yield namespace


@pytest.fixture
def handed_to_pylance(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The operation ids the dir backend's data path handed to pylance's operation
    (wrapped, so it still runs)."""
    from lance_namespace_async.directory import _data

    handed: list[str] = []
    call_pylance = _data._call_pylance

    async def counted(namespace: Any, operation: Any, request: Any, data: Any) -> Any:
        handed.append(operation.operation_id)
        return await call_pylance(namespace, operation, request, data)

    monkeypatch.setattr(_data, "_call_pylance", counted)
    return handed


def disk_state(root: Path) -> dict[str, int]:
    """Every file below root with its size: equal states mean nothing changed."""
    state: dict[str, int] = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            state[os.path.relpath(path, root)] = os.path.getsize(path)
    return state


async def timed_out_within(seconds: float, call: Awaitable[Any]) -> errors.LanceNamespaceError:
    """``call`` ends with the deadline's ServiceUnavailableError (17) in under ``seconds``
    (a guard of three times that stops a hang); the error, for its message."""
    started = time.monotonic()
    with anyio.fail_after(3 * seconds), pytest.raises(errors.ServiceUnavailableError) as caught:
        await call
    assert time.monotonic() - started < seconds
    assert "timed out" in str(caught.value)
    return caught.value


def sample_table(rows: int = 3) -> pa.Table:
    return pa.table({"id": list(range(rows)), "name": [f"row-{i}" for i in range(rows)]})


# -- secrets never reach a log line (issue 10) ------------------------------------------------
# Every log record of the whole suite (every logger, DEBUG and up) and every warning is
# scanned for the secrets tests use; the session fails at its end if one ever showed up.

#: part of every secret (token, client secret, AWS key, password) the fault, race and
#: security tests use, so a leak anywhere is found by one substring
SECRET_CANARY = "c4nary-5ecret-91f7"
#: secrets of older test files, scanned too (they predate the canary)
KNOWN_TEST_SECRETS = (SECRET_CANARY, "s3cr3t-T0ken_value", "S3CRET-", "csecret")


class SecretScanner(logging.Handler):
    """Counts records and keeps those that show a known secret (nothing else is stored)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records = 0
        self.leaks: list[str] = []

    def scan(self, source: str, text: str) -> None:
        for secret in KNOWN_TEST_SECRETS:
            if secret in text:
                self.leaks.append(f"{source}: {text[:400]}")

    def emit(self, record: logging.LogRecord) -> None:
        self.records += 1
        try:
            text = self.format(record)  # the message and any traceback
        except Exception:  # a broken record is the logging call's problem, not ours
            text = f"{record.msg!r} {record.args!r}"
        self.scan(record.name, text)


SECRET_SCANNER = SecretScanner()


def stop_spark(session: Any) -> None:
    """Stop a test module's SparkSession and collect what py4j left behind.

    py4j's ClientServer drops the connection of a Python thread that has ended without
    closing its socket; collecting here, in the session's own teardown, keeps that
    ResourceWarning out of whichever later test the collector happens to run in.
    """
    session.stop()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@contextlib.contextmanager
def local_spark(app: str, master: str = "local[2]") -> Iterator[Any]:
    """A test module's own SparkSession on ``master`` (no UI, loopback only, two shuffle
    partitions, this interpreter for the Python workers), stopped by :func:`stop_spark`."""
    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings():
        # pyspark starts its JVM by fork + exec, which runs lance's at-fork hook: the child
        # only execs java and never touches lance
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        session = (
            SparkSession.builder.master(master)
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("FATAL")
    try:
        yield session
    finally:
        stop_spark(session)


def pytest_warning_recorded(warning_message: warnings.WarningMessage) -> None:
    SECRET_SCANNER.scan("warning", str(warning_message.message))


def _attach_to_non_propagating_loggers() -> None:
    """Loggers that do not propagate (uvicorn's) never reach the root: scan them too."""
    for logger in logging.getLogger().manager.loggerDict.values():
        if (
            isinstance(logger, logging.Logger)
            and not logger.propagate
            and SECRET_SCANNER not in logger.handlers
        ):
            logger.addHandler(SECRET_SCANNER)


def pytest_configure(config: pytest.Config) -> None:
    # every record of every logger, DEBUG and up, reaches the scanner for the whole run
    root_logger = logging.getLogger()
    root_logger.addHandler(SECRET_SCANNER)
    root_logger.setLevel(logging.DEBUG)
    # ... while a failing test's report keeps showing WARNING and up, as before
    # (caplog.at_level still lowers it where a test asks)
    if config.getoption("log_level") is None and not config.getini("log_level"):
        config.option.log_level = "WARNING"


@pytest.fixture(autouse=True)
def _scan_non_propagating_loggers() -> Iterator[None]:
    _attach_to_non_propagating_loggers()
    yield
    _attach_to_non_propagating_loggers()


@pytest.fixture(scope="session", autouse=True)
def secrets_never_logged() -> Iterator[SecretScanner]:
    """The final check: no known secret appeared in any record or warning of the run."""
    yield SECRET_SCANNER
    _attach_to_non_propagating_loggers()
    assert not SECRET_SCANNER.leaks, "secrets in the logs:\n" + "\n".join(SECRET_SCANNER.leaks)


# -- real servers shared by the session ------------------------------------------------------


@pytest.fixture(scope="session")
def hive_metastores(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str], Metastore]]:
    """``get(version)``: the session's Hive Metastore ``version`` ("2.3" or "4").

    Started on first use and stopped at the end of the session, so the hive suite, the
    conformance kit and the Spark tests share one JVM per release. Without Java (or Maven,
    for Hive 4) the asking test skips with an install hint, and fails with ``CI=true``; a
    metastore that failed to start fails every test that asks for it, without a retry.
    """
    running: dict[str, Metastore] = {}
    failed: dict[str, BaseException] = {}
    with contextlib.ExitStack() as stack:

        def get(version: str) -> Metastore:
            if version in failed:
                raise failed[version]
            if version not in running:
                workdir = tmp_path_factory.mktemp(f"hms-{version}")
                try:
                    running[version] = need(
                        lambda: stack.enter_context(hive_metastore(workdir, version=version))
                    )
                except MetastoreError as exc:
                    failed[version] = exc
                    raise
            return running[version]

        yield get


@pytest.fixture(scope="session")
def iceberg_reference(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ReferenceIcebergServer]:
    """The Iceberg project's REST catalog server (tests/iceberg_real_server.py), once per
    session: tests isolate themselves with namespaces of unique names."""
    with contextlib.ExitStack() as stack:
        server = need(
            lambda: stack.enter_context(reference_iceberg(tmp_path_factory.mktemp("ice")))
        )
        print(f"\nIceberg REST reference server started in {server.startup_seconds:.1f} s")
        yield server


def tree_digest(path: Path) -> dict[str, str]:
    """Every file (sha256 of its bytes), directory and symlink (its target) below ``path``."""
    found: dict[str, str] = {}
    if not os.path.lexists(path):
        return found
    for directory, dirs, files in os.walk(path):
        for name in sorted(dirs + files):
            full = os.path.join(directory, name)
            relative = os.path.relpath(full, path)
            if os.path.islink(full):
                found[relative] = "link:" + os.readlink(full)
            elif os.path.isfile(full):
                with open(full, "rb") as handle:
                    found[relative] = hashlib.sha256(handle.read()).hexdigest()
            else:
                found[relative] = "dir"
    return found


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it receives."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()
