"""The hive backend (seed 002) against real Hive Metastores: 2.3.10 and 4.0.1.

``tests/hive_metastore.py`` runs Hive's own metastore server (2.3 from the jars of the
pyspark wheel, 4 from Maven Central through ``jvm/hive4``; both on embedded Derby),
each once per session (conftest's ``hive_metastores``); every test that talks to a
metastore runs against both releases. Tests keep apart by creating
uniquely named databases, which the ``db`` fixture drops again. pymetastore's high-level
client (``pymetastore.metastore.HMS``) is the independent reader of what the backend
wrote; its raw thrift client (``HMS.client``) plants the non-Lance tables.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
import lance
import pyarrow as pa
import pytest
from conftest import timed_out_within
from hive_metastore import (
    HIVE_VERSIONS,
    HostileMetastore,
    Metastore,
    MetastoreError,
    TcpProxy,
    free_port,
    hive_metastore,
    metastore_databases,
)
from pymetastore.hive_metastore import ttypes as hive
from pymetastore.metastore import HMS

import lance_namespace_async as lna
from jvm import classpath, java_executable, need
from lance_namespace_async import errors

TESTS = Path(__file__).parent
#: the exact release each of HIVE_VERSIONS runs (pyspark's jars; jvm/hive4/pom.xml)
RELEASES = {"2.3": "2.3.10", "4": "4.0.1"}


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=HIVE_VERSIONS, ids=[f"hms{v}" for v in HIVE_VERSIONS])
def metastore(
    request: pytest.FixtureRequest, hive_metastores: Callable[[str], Metastore]
) -> Metastore:
    return hive_metastores(str(request.param))


class _TableByRequest:
    """pymetastore's raw client with ``get_table`` sent as ``get_table_req``: Hive 4 removed
    ``get_table`` from its thrift API, and pymetastore's ``HMS.get_table`` still calls it."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def get_table(self, database: str, name: str) -> Any:
        return self._raw.get_table_req(hive.GetTableRequest(dbName=database, tblName=name)).table

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@contextlib.contextmanager
def hms(metastore: Metastore) -> Iterator[HMS]:
    """pymetastore's own client: the independent reader of the metastore."""
    with HMS.create(host=metastore.host, port=metastore.port) as client:
        client.client = _TableByRequest(client.client)
        yield client


#: database and table names each release refuses; Hive 4 allows "special characters" in
#: names (metastore.support.special.characters.tablename, default true), ASCII only
REFUSED_NAMES = {"2.3": ("bad-name", "has space", "ümlaut"), "4": ("ümlaut",)}


def managed_tables_become_external(metastore: Metastore) -> bool:
    """Hive 4 stores a non-ACID MANAGED_TABLE created by a client without ACID
    capabilities (pymetastore, Hive 2/3 clients) as an EXTERNAL_TABLE with
    ``TRANSLATED_TO_EXTERNAL=TRUE``; with ``table_type=lance`` it then is a Lance table
    like any other. (A managed table proper needs an ACID-capable client.)"""
    return metastore.version != "2.3"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "lance-root"
    path.mkdir()
    return path


def new_name(prefix: str = "db") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"  # Hive names are lower case, [A-Za-z0-9_]


@pytest.fixture
def db(metastore: Metastore) -> Iterator[str]:
    """A unique database name; whatever database of that name exists at the end is dropped."""
    name = new_name()
    yield name
    drop_database(metastore, name)


@pytest.fixture
def db2(metastore: Metastore) -> Iterator[str]:
    name = new_name()
    yield name
    drop_database(metastore, name)


def drop_database(metastore: Metastore, name: str) -> None:
    """Drop a database with its tables if it exists (Hive 2.3 answers a missing one with an
    NPE MetaException; pymetastore's exceptions are immutable, so contextlib.suppress,
    which sets ``__traceback__``, cannot be used on them)."""
    with hms(metastore) as client:
        if name in client.list_databases():
            client.client.drop_database(name, True, True)


def properties(metastore: Metastore, root: Path | None = None, **extra: str) -> dict[str, str]:
    found = {"uri": metastore.uri, **extra}
    if root is not None:
        found["root"] = str(root)
    return found


@pytest.fixture
async def ns(metastore: Metastore, root: Path) -> AsyncIterator[lna.AsyncLanceNamespace]:
    async with lna.connect("hive", properties(metastore, root)) as namespace:
        yield namespace


def in_hms(path: str | Path) -> str:
    """How the metastore stores a local location: qualified against fs.defaultFS (file:///)."""
    return f"file:{path}"


def same_place(a: str | None, b: str | Path) -> bool:
    """Whether two spellings of a local location (``/p``, ``file:/p``, ``file:///p``) agree."""
    assert a is not None

    def plain(value: str) -> str:
        return os.path.normpath(urlparse(value).path if value.startswith("file:") else value)

    return plain(a) == plain(str(b))


def props(value: Any) -> dict[str, str]:
    """The additional properties of a response's ``properties``/``storage_options``."""
    return dict(getattr(value, "additional_properties", None) or {})


def lance_table_at(location: Path, rows: int = 3) -> str:
    data = pa.table(
        {"id": pa.array(range(rows), pa.int64()), "name": [f"r{i}" for i in range(rows)]}
    )
    lance.write_dataset(data, str(location))
    return str(location)


def plant_table(
    metastore: Metastore,
    database: str,
    name: str,
    *,
    table_type: str = "EXTERNAL_TABLE",
    parameters: dict[str, str] | None = None,
    location: str | None = None,
) -> None:
    """A table created by someone else (Hive, Spark, Iceberg...) through raw thrift.

    Hive 2.3 stores an ``EXTERNAL_TABLE`` without the parameter ``EXTERNAL=TRUE`` as a
    ``MANAGED_TABLE`` (ObjectStore.convertToMTable), so external tables get it, as Hive's
    own DDL does.
    """
    parameters = dict(parameters or {})
    if table_type == "EXTERNAL_TABLE":
        parameters["EXTERNAL"] = "TRUE"
    table = hive.Table(
        tableName=name,
        dbName=database,
        tableType=table_type,
        parameters=parameters,
        partitionKeys=[],
        sd=hive.StorageDescriptor(
            cols=[hive.FieldSchema(name="c", type="string")],
            location=location,
            inputFormat="org.apache.hadoop.mapred.TextInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serdeInfo=hive.SerDeInfo(
                serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                parameters={},
            ),
        ),
    )
    with hms(metastore) as client:
        client.client.create_table(table)


def table_names(metastore: Metastore, database: str) -> set[str]:
    with hms(metastore) as client:
        return set(client.list_tables(database))


def database_names(metastore: Metastore) -> set[str]:
    with hms(metastore) as client:
        return set(client.list_databases())


# -- the metastore itself ------------------------------------------------------------------------


def test_metastore_is_real_and_keeps_its_files_in_the_workdir(metastore: Metastore) -> None:
    assert metastore.startup_seconds < 90
    print(f"\nHive Metastore ready in {metastore.startup_seconds:.1f} s at {metastore.uri}")
    assert metastore.process.poll() is None
    assert "default" in metastore_databases(metastore.host, metastore.port)
    assert metastore.log.is_file(), "Hive logs to the workdir"
    assert metastore.log.parent == metastore.workdir / "logs"
    assert "Starting HiveMetaStore" in metastore.log.read_text()
    assert f"version = {RELEASES[metastore.version]}" in metastore.log.read_text()
    assert (metastore.workdir / "logs" / "derby.log").is_file()
    assert not (metastore.workdir / "derby.log").exists()
    assert (metastore.workdir / "metastore_db").is_dir()
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or "root"
    stray = Path("/tmp") / user / "hive.log"
    assert not stray.exists() or stray.stat().st_mtime < time.time() - metastore.startup_seconds
    with hms(metastore) as client:
        default = client.get_database("default")
    assert default.location == f"file:{metastore.warehouse}"


def test_the_metastore_stops_by_pid_and_leaves_no_process(tmp_path: Path) -> None:
    need(java_executable)
    with hive_metastore(tmp_path / "own") as running:
        pid = running.pid
        assert metastore_databases(running.host, running.port) == ["default"]
    assert running.process.returncode is not None, "reaped"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(ConnectionRefusedError):  # nothing listens on the port any more
        socket.create_connection(("127.0.0.1", running.port), timeout=1).close()


def test_the_metastore_dies_with_a_killed_test_process(tmp_path: Path) -> None:
    """PR_SET_PDEATHSIG: a SIGKILLed pytest does not leave a JVM behind."""
    need(java_executable)
    script = textwrap.dedent(
        f"""
        import os, sys, time
        from pathlib import Path
        sys.path.insert(0, {str(TESTS)!r})
        from hive_metastore import hive_metastore
        with hive_metastore(Path({str(tmp_path / "orphan")!r})) as running:
            print(running.pid, flush=True)
            time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        os.kill(pid, 0)  # the JVM runs
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"JVM {pid} outlived its killed parent")


@pytest.mark.parametrize("version", HIVE_VERSIONS)
def test_an_early_jvm_exit_raises_with_the_log_tail(tmp_path: Path, version: str) -> None:
    need(java_executable)
    if version != "2.3":
        need(lambda: classpath("hive4"))
    started = time.monotonic()
    broken = {"hive.metastore.rawstore.impl": "no.such.RawStore"}
    with (
        pytest.raises(MetastoreError, match="exited with status") as caught,
        hive_metastore(tmp_path / "broken", version=version, timeout=60, site=broken),
    ):
        pass
    assert time.monotonic() - started < 30, "an exit is noticed, not waited out"
    assert "no.such.RawStore class not found" in str(caught.value), "the log's tail is shown"


# -- configuration -------------------------------------------------------------------------------


def test_configuration_is_validated_without_io() -> None:
    namespace = lna.connect("hive", {"uri": "thrift://127.0.0.1:9"})  # no I/O until used
    assert namespace.config.uri == "thrift://127.0.0.1:9"
    for bad in ("http://127.0.0.1:9083", "127.0.0.1:9083", "thrift://", "thrift://host"):
        with pytest.raises(errors.InvalidInputError, match="'uri'") as caught:
            lna.connect("hive", {"uri": bad})
        assert caught.value.code == 13
    with pytest.raises(errors.InvalidInputError, match="uri"):
        lna.connect("hive", {})
    for key, bad in (
        ("pool_size", "0"),
        ("connect_timeout", "soon"),
        ("read_timeout", "-5"),
        ("max_retries", "-1"),
    ):
        with pytest.raises(errors.InvalidInputError, match=key):
            lna.connect("hive", {"uri": "thrift://127.0.0.1:9", key: bad})
    with pytest.raises(errors.InvalidInputError, match="'warehouse'"):
        lna.connect("hive", {"uri": "thrift://127.0.0.1:9", "warehouse": "/w"})


async def test_an_unreachable_metastore_is_service_unavailable() -> None:
    uri = f"thrift://127.0.0.1:{free_port()}"  # nothing listens there
    options = {"uri": uri, "connect_timeout": "500", "max_retries": "1"}
    async with lna.connect("hive", options) as namespace:
        with anyio.fail_after(10), pytest.raises(errors.ServiceUnavailableError) as caught:
            await namespace.list_namespaces()
    assert caught.value.code == 17


# -- a hostile metastore (tests/hive_metastore.py's HostileMetastore, not Hive) ------------------


async def test_a_silent_metastore_is_cut_off_at_the_calls_deadline() -> None:
    """``read_timeout`` bounds one wait; ``call_timeout`` the call, retries included, and
    ``timeout=`` per call overrides it, as on the HTTP backends."""
    with HostileMetastore("silent") as server:
        options = {"uri": server.uri, "call_timeout": "600", "read_timeout": "60000"}
        async with lna.connect("hive", options) as namespace:
            error = await timed_out_within(3, namespace.list_namespaces())
            assert "deadline of 0.6 s" in str(error)
            per_call = namespace.describe_namespace({"id": ["db"]}, timeout=0.2)
            assert "deadline of 0.2 s" in str(await timed_out_within(2, per_call))


async def test_a_trickling_metastore_is_cut_off_at_the_calls_deadline() -> None:
    with HostileMetastore("trickle") as server:
        options = {"uri": server.uri, "call_timeout": "800", "max_retries": "0"}
        async with lna.connect("hive", options) as namespace:
            error = await timed_out_within(3, namespace.list_namespaces())
            assert "deadline of 0.8 s" in str(error)


async def test_a_flooding_metastore_is_stopped_at_max_response_bytes() -> None:
    """A 2 GiB length prefix and endless bytes: the call reads no more than the limit (the
    buffered transport would otherwise ask the socket for 2 GiB at once), and a connection
    stopped mid-answer is never reused."""
    with HostileMetastore("flood") as server:
        options = {"uri": server.uri, "max_response_bytes": str(1 << 20)}
        async with lna.connect("hive", options) as namespace:
            for attempt in (1, 2):
                with anyio.fail_after(20), pytest.raises(errors.InternalError) as caught:
                    await namespace.list_namespaces()
                assert "larger than max_response_bytes (1048576 bytes)" in str(caught.value)
                assert server.accepted == attempt


async def test_a_malformed_answer_is_internal_and_its_connection_is_dropped() -> None:
    with HostileMetastore("bad-version") as server:
        async with lna.connect("hive", {"uri": server.uri}) as namespace:
            for attempt in (1, 2):
                with anyio.fail_after(20), pytest.raises(errors.InternalError) as caught:
                    await namespace.list_namespaces()
                assert "malformed metastore answer" in str(caught.value)
                assert server.accepted == attempt


def test_the_new_limits_are_validated_without_io() -> None:
    for key in ("call_timeout", "max_response_bytes"):
        with pytest.raises(errors.InvalidInputError, match=key):
            lna.connect("hive", {"uri": "thrift://127.0.0.1:9", key: "0"})


# -- namespaces ----------------------------------------------------------------------------------


async def test_databases_are_namespaces(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str
) -> None:
    created = await ns.create_namespace({"id": [db], "properties": {"owner": "ana", "k": "v"}})
    assert props(created.properties) == {"owner": "ana", "k": "v"}
    with hms(metastore) as client:
        database = client.get_database(db)
    assert database.name == db
    assert database.parameters == {"owner": "ana", "k": "v"}
    listed = (await ns.list_namespaces()).namespaces
    assert db in listed
    assert "default" in listed
    assert listed == sorted(listed)
    assert props((await ns.describe_namespace({"id": [db]})).properties) == {
        "owner": "ana",
        "k": "v",
    }
    await ns.namespace_exists({"id": [db]})
    await ns.namespace_exists({"id": []})  # the root: the metastore itself
    assert (await ns.list_namespaces({"id": [db]})).namespaces == [], "databases are leaves"
    ghost = new_name("ghost")
    for call in (ns.namespace_exists, ns.describe_namespace, ns.list_namespaces):
        with pytest.raises(errors.NamespaceNotFoundError) as missing:
            await call({"id": [ghost]})
        assert missing.value.code == 1


async def test_a_database_created_elsewhere_is_a_namespace(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str
) -> None:
    with hms(metastore) as client:
        client.client.create_database(hive.Database(name=db, parameters={"from": "hive"}))
    assert db in (await ns.list_namespaces()).namespaces
    assert props((await ns.describe_namespace({"id": [db]})).properties) == {"from": "hive"}


async def test_list_namespaces_paginates(ns: lna.AsyncLanceNamespace, metastore: Metastore) -> None:
    prefix = new_name("page")
    names = [f"{prefix}_{i}" for i in (3, 0, 4, 1, 2)]
    try:
        for name in names:
            await ns.create_namespace({"id": [name]})
        everything = (await ns.list_namespaces()).namespaces
        seen: list[str] = []
        token = None
        while True:
            page = await ns.list_namespaces({"id": [], "limit": 2, "page_token": token})
            assert len(page.namespaces) <= 2
            seen += page.namespaces
            token = page.page_token
            if not token:
                break
        assert seen == everything
        assert [n for n in seen if n.startswith(prefix)] == sorted(names)
    finally:
        for name in names:
            await ns.drop_namespace({"id": [name], "mode": "Skip"})


async def test_create_namespace_modes(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str
) -> None:
    await ns.create_namespace({"id": [db], "properties": {"owner": "ana"}})
    with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
        await ns.create_namespace({"id": [db], "properties": {"owner": "bob"}})
    assert caught.value.code == 2
    kept = await ns.create_namespace(
        {"id": [db], "mode": "ExistOk", "properties": {"owner": "bob"}}
    )
    assert props(kept.properties) == {"owner": "ana"}
    with hms(metastore) as client:
        assert client.get_database(db).parameters == {"owner": "ana"}
    await ns.create_namespace({"id": [db], "mode": "Overwrite", "properties": {"owner": "carol"}})
    with hms(metastore) as client:
        assert client.get_database(db).parameters == {"owner": "carol"}


async def test_drop_namespace_modes(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str
) -> None:
    ghost = new_name("ghost")
    with pytest.raises(errors.NamespaceNotFoundError) as caught:
        await ns.drop_namespace({"id": [ghost]})
    assert caught.value.code == 1
    await ns.drop_namespace({"id": [ghost], "mode": "Skip"})
    await ns.create_namespace({"id": [db], "properties": {"k": "v"}})
    await ns.drop_namespace({"id": [db]})
    assert db not in database_names(metastore)


async def test_restrict_refuses_a_database_with_tables(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str
) -> None:
    await ns.create_namespace({"id": [db]})
    await ns.declare_table({"id": [db, "t"]})
    with pytest.raises(errors.NamespaceNotEmptyError) as caught:
        await ns.drop_namespace({"id": [db]})
    assert caught.value.code == 3
    with pytest.raises(errors.NamespaceNotEmptyError):
        await ns.drop_namespace({"id": [db], "behavior": "Restrict"})
    assert table_names(metastore, db) == {"t"}


async def test_cascade_drops_lance_tables_with_data_and_stops_at_foreign_tables(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str, tmp_path: Path, root: Path
) -> None:
    await ns.create_namespace({"id": [db]})
    location = lance_table_at(root / "data")  # inside the storage root
    await ns.register_table({"id": [db, "lance_t"], "location": location})
    foreign_data = tmp_path / "csv-files"
    foreign_data.mkdir()
    plant_table(metastore, db, "hive_t", location=str(foreign_data))
    with pytest.raises(errors.NamespaceNotEmptyError, match="hive_t") as caught:
        await ns.drop_namespace({"id": [db], "behavior": "Cascade"})
    assert caught.value.code == 3
    assert table_names(metastore, db) == {"lance_t", "hive_t"}, "nothing dropped"
    assert lance.dataset(location).count_rows() == 3
    with hms(metastore) as client:
        client.client.drop_table(db, "hive_t", False)
    await ns.drop_namespace({"id": [db], "behavior": "Cascade"})
    assert db not in database_names(metastore)
    assert not Path(location).exists(), "cascade deletes the Lance tables' data"
    assert foreign_data.exists()


async def test_bad_names_are_invalid_input(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str
) -> None:
    for bad in REFUSED_NAMES[metastore.version]:
        with pytest.raises(errors.InvalidInputError) as caught:
            await ns.create_namespace({"id": [bad]})
        assert caught.value.code == 13, bad
    await ns.create_namespace({"id": [db]})
    for bad in REFUSED_NAMES[metastore.version]:
        with pytest.raises(errors.InvalidInputError) as caught:
            await ns.declare_table({"id": [db, bad]})
        assert caught.value.code == 13, bad
    for bad_id in ([db, "t", "deeper"], [db], [], [db, ""]):
        with pytest.raises(errors.InvalidInputError) as caught:
            await ns.declare_table({"id": bad_id})
        assert caught.value.code == 13, bad_id
    for bad_id in ([db, "child"], []):
        with pytest.raises(errors.InvalidInputError) as caught:
            await ns.create_namespace({"id": bad_id})
        assert caught.value.code == 13, bad_id
    assert table_names(metastore, db) == set()


# -- tables --------------------------------------------------------------------------------------


async def test_declare_writes_a_lance_external_table(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str, root: Path
) -> None:
    await ns.create_namespace({"id": [db]})
    declared = await ns.declare_table({"id": [db, "t"], "properties": {"tier": "gold"}})
    assert declared.location == f"file://{root}/{db}/t"  # one form: file:// URIs
    with hms(metastore) as client:
        table = client.get_table(db, "t")
    assert table.table_type == "EXTERNAL_TABLE"
    assert table.parameters["table_type"] == "lance"
    assert table.parameters["tier"] == "gold"
    assert table.storage.location == in_hms(f"{root}/{db}/t")
    with pytest.raises(errors.TableAlreadyExistsError) as exists:
        await ns.declare_table({"id": [db, "t"]})
    assert exists.value.code == 5
    with pytest.raises(errors.NamespaceNotFoundError) as missing:
        await ns.declare_table({"id": [new_name("ghost"), "t"]})
    assert missing.value.code == 1
    elsewhere = await ns.declare_table({"id": [db, "u"], "location": f"{root}/elsewhere/u"})
    assert elsewhere.location == f"file://{root}/elsewhere/u"
    with hms(metastore) as client:
        assert client.get_table(db, "u").storage.location == in_hms(f"{root}/elsewhere/u")
    described = await ns.describe_table({"id": [db, "t"]})
    assert same_place(described.location, f"{root}/{db}/t")
    assert props(described.storage_options)["tier"] == "gold"


async def test_every_operation_reports_the_location_in_one_form(
    ns: lna.AsyncLanceNamespace, db: str, root: Path, tmp_path: Path
) -> None:
    """Declare/Register answer the location as given; the metastore stores it qualified
    (``/p`` becomes ``file:/p``), and Describe/Deregister/Drop answer what it stored. The
    project's rule (``_storage.places.canonical``: "so every operation reports one form")
    wants the same string from every operation on one table."""
    await ns.create_namespace({"id": [db]})
    declared = await ns.declare_table({"id": [db, "t"]})
    described = await ns.describe_table({"id": [db, "t"]})
    assert described.location == declared.location
    location = lance_table_at(tmp_path / "data")
    registered = await ns.register_table({"id": [db, "r"], "location": location})
    assert (await ns.describe_table({"id": [db, "r"]})).location == registered.location
    assert (await ns.deregister_table({"id": [db, "r"]})).location == registered.location


async def test_without_root_tables_go_under_the_database_location(
    metastore: Metastore, db: str
) -> None:
    """HiveConfig.root: "default: the database's location" (the metastore's warehouse)."""
    async with lna.connect("hive", properties(metastore)) as namespace:
        await namespace.create_namespace({"id": [db]})
        declared = await namespace.declare_table({"id": [db, "t"]})
    with hms(metastore) as client:
        database_location = client.get_database(db).location
        table_location = client.get_table(db, "t").storage.location
    assert database_location == f"file:{metastore.warehouse}/{db}.db"
    assert table_location == f"{database_location}/t"
    assert declared.location == f"file://{metastore.warehouse}/{db}.db/t"


def test_pylance_writes_under_the_warehouse_without_root(metastore: Metastore, db: str) -> None:
    with lna.connect_sync("hive", properties(metastore)) as facade:
        facade.create_namespace({"id": [db]})
        lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=facade, table_id=[db, "t"])
        assert lance.dataset(namespace_client=facade, table_id=[db, "t"]).count_rows() == 2
    assert lance.dataset(str(metastore.warehouse / f"{db}.db" / "t")).count_rows() == 2


async def test_register_an_existing_lance_table(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str, tmp_path: Path
) -> None:
    await ns.create_namespace({"id": [db]})
    location = lance_table_at(tmp_path / "data")
    registered = await ns.register_table(
        {"id": [db, "t"], "location": location, "properties": {"tier": "gold"}}
    )
    assert registered.location == f"file://{location}"
    with hms(metastore) as client:
        table = client.get_table(db, "t")
    assert table.table_type == "EXTERNAL_TABLE"
    assert table.parameters["table_type"] == "lance"
    assert table.parameters["tier"] == "gold"
    assert table.storage.location == in_hms(location)
    assert [column.name for column in table.columns] == ["id", "name"]
    with pytest.raises(errors.InvalidInputError) as nothing_there:
        await ns.register_table({"id": [db, "bad"], "location": str(tmp_path / "nothing")})
    assert nothing_there.value.code == 13
    with pytest.raises(errors.TableAlreadyExistsError) as exists:
        await ns.register_table({"id": [db, "t"], "location": location})
    assert exists.value.code == 5
    with pytest.raises(errors.NamespaceNotFoundError) as missing:
        await ns.register_table({"id": [new_name("ghost"), "t"], "location": location})
    assert missing.value.code == 1
    assert table_names(metastore, db) == {"t"}


async def test_describe_and_exists(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str, tmp_path: Path
) -> None:
    await ns.create_namespace({"id": [db]})
    location = lance_table_at(tmp_path / "data", rows=5)
    await ns.register_table({"id": [db, "t"], "location": location, "properties": {"k": "v"}})
    described = await ns.describe_table({"id": [db, "t"]})
    assert same_place(described.location, location)
    assert props(described.storage_options) == {"k": "v"}, "HMS bookkeeping is not an option"
    detailed = await ns.describe_table({"id": [db, "t"], "load_detailed_metadata": True})
    assert detailed.version == 1
    assert [field.name for field in detailed.schema.fields] == ["id", "name"]
    assert detailed.stats.num_fragments == 1
    assert detailed.stats.num_deleted_rows == 0
    await ns.table_exists({"id": [db, "t"]})
    for call in (ns.table_exists, ns.describe_table):
        with pytest.raises(errors.TableNotFoundError) as caught:
            await call({"id": [db, "nope"]})
        assert caught.value.code == 4
        with pytest.raises(errors.NamespaceNotFoundError) as no_db:
            await call({"id": [new_name("ghost"), "t"]})
        assert no_db.value.code == 1


async def test_non_lance_tables_are_refused(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str, tmp_path: Path
) -> None:
    await ns.create_namespace({"id": [db]})
    kept = tmp_path / "parquet-files"
    kept.mkdir()
    plant_table(metastore, db, "hive_t", location=str(kept))
    plant_table(metastore, db, "iceberg_t", parameters={"table_type": "ICEBERG"})
    plant_table(
        metastore, db, "managed", table_type="MANAGED_TABLE", parameters={"table_type": "lance"}
    )
    refused = ["hive_t", "iceberg_t"]
    if managed_tables_become_external(metastore):
        translated = await ns.describe_table({"id": [db, "managed"]})
        assert props(translated.properties)["TRANSLATED_TO_EXTERNAL"] == "TRUE"
        assert "TRANSLATED_TO_EXTERNAL" not in props(translated.storage_options)
    else:
        refused.append("managed")
    for name in refused:
        for call in (ns.describe_table, ns.deregister_table, ns.drop_table):
            with pytest.raises(errors.InvalidInputError) as caught:
                await call({"id": [db, name]})
            assert caught.value.code == 13, (name, call)
        with pytest.raises(errors.LanceNamespaceError):
            await ns.table_exists({"id": [db, name]})
    assert table_names(metastore, db) == {"hive_t", "iceberg_t", "managed"}
    assert kept.exists()


async def test_list_tables_is_lance_only_sorted_and_paginated(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str
) -> None:
    await ns.create_namespace({"id": [db]})
    names = ["t4", "t1", "t3", "t0", "t2"]
    for name in names:
        await ns.declare_table({"id": [db, name]})
    plant_table(metastore, db, "a_hive")
    plant_table(metastore, db, "b_iceberg", parameters={"table_type": "ICEBERG"})
    plant_table(
        metastore, db, "c_managed", table_type="MANAGED_TABLE", parameters={"table_type": "lance"}
    )
    plant_table(metastore, db, "t_shouting", parameters={"table_type": "LANCE"})
    expected = sorted([*names, "t_shouting"])
    if managed_tables_become_external(metastore):
        expected = sorted([*expected, "c_managed"])
    assert (await ns.list_tables({"id": [db]})).tables == expected
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = await ns.list_tables({"id": [db], "limit": 2, "page_token": token})
        assert len(page.tables) <= 2
        seen += page.tables
        pages += 1
        token = page.page_token
        if not token:
            break
    assert seen == expected
    assert pages == (len(expected) + 1) // 2
    with pytest.raises(errors.InvalidInputError):
        await ns.list_tables({"id": [db], "limit": 0})
    with pytest.raises(errors.NamespaceNotFoundError) as caught:
        await ns.list_tables({"id": [new_name("ghost")]})
    assert caught.value.code == 1
    await ns.create_namespace({"id": [f"{db}_empty"]})
    try:
        assert (await ns.list_tables({"id": [f"{db}_empty"]})).tables == []
    finally:
        await ns.drop_namespace({"id": [f"{db}_empty"]})


async def test_deregister_keeps_the_data_and_drop_deletes_it(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str, tmp_path: Path, root: Path
) -> None:
    await ns.create_namespace({"id": [db]})
    location = lance_table_at(root / "data")  # inside the storage root
    await ns.register_table({"id": [db, "t"], "location": location})
    deregistered = await ns.deregister_table({"id": [db, "t"]})
    assert same_place(deregistered.location, location)
    assert table_names(metastore, db) == set()
    assert lance.dataset(location).count_rows() == 3, "deregister keeps the data"
    with pytest.raises(errors.TableNotFoundError) as caught:
        await ns.deregister_table({"id": [db, "t"]})
    assert caught.value.code == 4
    await ns.register_table({"id": [db, "t"], "location": location})
    dropped = await ns.drop_table({"id": [db, "t"]})
    assert same_place(dropped.location, location)
    assert table_names(metastore, db) == set()
    assert not Path(location).exists(), "drop deletes the data"
    with pytest.raises(errors.TableNotFoundError) as again:
        await ns.drop_table({"id": [db, "t"]})
    assert again.value.code == 4
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.drop_table({"id": [new_name("ghost"), "t"]})
    declared = await ns.declare_table({"id": [db, "only_declared"]})
    await ns.drop_table({"id": [db, "only_declared"]})  # no data yet: fine
    assert not Path(declared.location).exists()


async def test_rename_table(
    ns: lna.AsyncLanceNamespace, metastore: Metastore, db: str, db2: str, tmp_path: Path
) -> None:
    await ns.create_namespace({"id": [db]})
    await ns.create_namespace({"id": [db2]})
    location = lance_table_at(tmp_path / "data")
    await ns.register_table({"id": [db, "old"], "location": location, "properties": {"k": "v"}})
    await ns.rename_table({"id": [db, "old"], "new_table_name": "new"})
    assert table_names(metastore, db) == {"new"}
    with hms(metastore) as client:
        renamed = client.get_table(db, "new")
    assert renamed.storage.location == in_hms(location)
    assert renamed.parameters["table_type"] == "lance"
    assert renamed.parameters["k"] == "v"
    assert renamed.table_type == "EXTERNAL_TABLE"

    await ns.declare_table({"id": [db, "taken"]})
    with pytest.raises(errors.TableAlreadyExistsError) as caught:
        await ns.rename_table({"id": [db, "new"], "new_table_name": "taken"})
    assert caught.value.code == 5
    assert table_names(metastore, db) == {"new", "taken"}
    with hms(metastore) as client:
        assert client.get_table(db, "taken").storage.location != in_hms(location)

    await ns.rename_table({"id": [db, "new"], "new_namespace_id": [db2], "new_table_name": "moved"})
    assert (await ns.list_tables({"id": [db2]})).tables == ["moved"]
    assert (await ns.list_tables({"id": [db]})).tables == ["taken"]
    with hms(metastore) as client:
        assert client.get_table(db2, "moved").storage.location == in_hms(location)
    assert lance.dataset(location).count_rows() == 3, "rename leaves the data where it is"
    described = await ns.describe_table({"id": [db2, "moved"], "load_detailed_metadata": True})
    assert described.version == 1

    with pytest.raises(errors.TableNotFoundError) as gone:
        await ns.rename_table({"id": [db, "new"], "new_table_name": "x"})
    assert gone.value.code == 4
    with pytest.raises(errors.NamespaceNotFoundError) as no_target:
        await ns.rename_table(
            {"id": [db2, "moved"], "new_namespace_id": [new_name("ghost")], "new_table_name": "x"}
        )
    assert no_target.value.code == 1
    with pytest.raises(errors.InvalidInputError):
        await ns.rename_table(
            {"id": [db2, "moved"], "new_table_name": REFUSED_NAMES[metastore.version][0]}
        )
    assert table_names(metastore, db2) == {"moved"}


# -- concurrency and connections -----------------------------------------------------------------


async def test_concurrent_calls_share_a_bounded_pool(
    metastore: Metastore, db: str, root: Path
) -> None:
    with TcpProxy(metastore.host, metastore.port) as proxy:
        options = {"uri": proxy.uri, "root": str(root), "pool_size": "4"}
        async with lna.connect("hive", options) as namespace:
            await namespace.create_namespace({"id": [db]})
            for i in range(4):
                await namespace.declare_table({"id": [db, f"t{i}"]})
            listed: list[list[str]] = []
            described: list[str | None] = []

            async def describe(i: int) -> None:
                answer = await namespace.describe_table({"id": [db, f"t{i % 4}"]})
                described.append(answer.location)

            async def list_tables(i: int) -> None:
                listed.append((await namespace.list_tables({"id": [db]})).tables)

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    for i in range(32):
                        group.start_soon(describe if i % 2 else list_tables, i)
            assert listed == [["t0", "t1", "t2", "t3"]] * 16
            assert len(described) == 16
            tables = [f"{root}/{db}/t{n}" for n in range(4)]
            assert all(any(same_place(found, t) for t in tables) for found in described)
            assert proxy.open_links <= 4
        assert proxy.peak <= 4, f"{proxy.peak} connections open at once over pool_size=4"
        assert proxy.accepted <= 4, "connections are reused, not opened per call"


async def test_reads_recover_after_the_connections_are_cut(
    metastore: Metastore, db: str, root: Path
) -> None:
    with TcpProxy(metastore.host, metastore.port) as proxy:
        options = {"uri": proxy.uri, "root": str(root), "pool_size": "2"}
        async with lna.connect("hive", options) as namespace:
            await namespace.create_namespace({"id": [db]})
            await namespace.declare_table({"id": [db, "t"]})
            assert proxy.cut() >= 1
            with anyio.fail_after(20):
                await namespace.describe_table({"id": [db, "t"]})
                assert (await namespace.list_tables({"id": [db]})).tables == ["t"]
            await namespace.declare_table({"id": [db, "u"]})


async def test_reads_recover_when_every_pooled_connection_is_broken(
    metastore: Metastore, db: str, root: Path
) -> None:
    """A metastore restart breaks *all* idle connections; max_retries=3 < pool_size=8."""
    with TcpProxy(metastore.host, metastore.port) as proxy:
        options = {"uri": proxy.uri, "root": str(root), "pool_size": "8", "max_retries": "3"}
        async with lna.connect("hive", options) as namespace:
            await namespace.create_namespace({"id": [db]})
            await namespace.declare_table({"id": [db, "t"]})
            async with anyio.create_task_group() as group:  # fill the pool: 8 idle links
                for _ in range(32):
                    group.start_soon(namespace.describe_table, {"id": [db, "t"]})
            idle = proxy.cut()
            assert idle >= 5, idle
            with anyio.fail_after(20):
                described = await namespace.describe_table({"id": [db, "t"]})
            assert same_place(described.location, f"{root}/{db}/t")


async def test_a_write_on_a_cut_connection_is_not_blindly_retried(
    metastore: Metastore, db: str, root: Path
) -> None:
    with TcpProxy(metastore.host, metastore.port) as proxy:
        options = {"uri": proxy.uri, "root": str(root), "pool_size": "1"}
        async with lna.connect("hive", options) as namespace:
            await namespace.list_namespaces()  # one idle pooled connection
            assert proxy.cut() == 1
            with pytest.raises(errors.ServiceUnavailableError) as caught:
                await namespace.create_namespace({"id": [db]})
            assert caught.value.code == 17
            assert db not in database_names(metastore), "the request never arrived"
            await namespace.create_namespace({"id": [db]})  # a fresh connection
            assert db in database_names(metastore)


# -- pylance end to end --------------------------------------------------------------------------


def test_pylance_writes_and_reads_through_connect_sync(
    metastore: Metastore, db: str, root: Path
) -> None:
    with lna.connect_sync("hive", properties(metastore, root)) as facade:
        facade.create_namespace({"id": [db]})
        lance.write_dataset(pa.table({"x": [1, 2, 3]}), namespace_client=facade, table_id=[db, "t"])
        lance.write_dataset(
            pa.table({"x": [4]}), namespace_client=facade, table_id=[db, "t"], mode="append"
        )
        dataset = lance.dataset(namespace_client=facade, table_id=[db, "t"])
        assert dataset.count_rows() == 4
        assert dataset.version == 2
        assert facade.list_tables({"id": [db]}).tables == ["t"]
        detailed = facade.describe_table({"id": [db, "t"], "load_detailed_metadata": True})
        assert detailed.version == 2
    with hms(metastore) as client:
        table = client.get_table(db, "t")
    assert table.table_type == "EXTERNAL_TABLE"
    assert table.parameters["table_type"] == "lance"
    assert table.storage.location == in_hms(f"{root}/{db}/t")
    assert lance.dataset(table.storage.location).to_table().column("x").to_pylist() == [1, 2, 3, 4]
