"""Our backends as ``lance_namespace`` plugin classes (``lance_namespace_async.impls``).

Servers: for each backend the real local servers test_kit.py's ``running`` starts —
a temporary folder (dir), our REST adapter in a uvicorn thread over a dir root (rest),
the Iceberg project's REST reference server (conftest ``iceberg_reference``), the
Unity Catalog look-alike (tests/unity_server.py), moto's Glue server and a real Hive
Metastore 4 (conftest ``hive_metastores``); all on 127.0.0.1.

``lance_namespace.connect(class path or lna-* alias, properties)`` builds each as
``Cls(**properties)``, the way LanceDB's ``namespace_client_impl=`` does; pylance
writes and reads a table through it; a pickled copy reconnects to the same catalog.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from hive_metastore import Metastore
from iceberg_real_server import unique_name
from test_kit import running_param

from lance_namespace_async import impls
from lance_namespace_async.testing import KitSettings

CLASSES = {
    "dir": impls.DirNamespace,
    "rest": impls.RestNamespace,
    "iceberg": impls.IcebergNamespace,
    "unity": impls.UnityNamespace,
    "glue": impls.GlueNamespace,
    "hive": impls.HiveNamespace,
    "mounts": impls.MountsNamespace,  # tests/test_mounts.py
}
# the server each backend runs against (names of test_kit.running)
SERVERS = ["dir", "rest-adapter", "iceberg", "unity", "glue-moto", "hive-4"]


@pytest.fixture(scope="module", params=SERVERS)
def settings(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[KitSettings]:
    with running_param(request, tmp_path_factory, hive_metastores, "impls") as kit:
        yield kit


def test_lance_namespace_connect_builds_each_backend_by_class_path_and_pylance_uses_it(
    settings: KitSettings,
) -> None:
    cls = CLASSES[settings.impl]
    class_path = f"lance_namespace_async.impls.{cls.__name__}"

    ns = ln.connect(class_path, dict(settings.properties))

    assert type(ns) is cls
    assert isinstance(ns, ln.LanceNamespace)
    space = [*settings.root, unique_name("impls")]
    table_id = [*space, "t"]
    try:
        ns.create_namespace(ln.CreateNamespaceRequest(id=space))
        rows = pa.table({"id": [1, 2, 3]})
        lance.write_dataset(rows, namespace_client=ns, table_id=table_id, mode="create")

        listed = ns.list_tables(ln.ListTablesRequest(id=space))
        assert isinstance(listed, ln.ListTablesResponse)
        assert listed.tables == ["t"]
        read = lance.dataset(namespace_client=ns, table_id=table_id)
        assert read.to_table().column("id").to_pylist() == [1, 2, 3]

        # a pickled copy (a Spark or Ray worker) reconnects to the same catalog
        copy = pickle.loads(pickle.dumps(ns))
        try:
            assert type(copy) is cls
            described = copy.describe_table(ln.DescribeTableRequest(id=table_id))
            assert described.location == ns.describe_table({"id": table_id}).location
            assert copy.count_table_rows(ln.CountTableRowsRequest(id=table_id)).count == 3
        finally:
            copy.close()
    finally:
        ns.drop_table(ln.DropTableRequest(id=table_id))
        ns.drop_namespace(ln.DropNamespaceRequest(id=space))
        ns.close()


def test_the_lna_alias_builds_the_same_class(settings: KitSettings) -> None:
    ns = ln.connect(f"lna-{settings.impl}", dict(settings.properties))
    try:
        assert type(ns) is CLASSES[settings.impl]
        listed = ns.list_namespaces(ln.ListNamespacesRequest(id=list(settings.root)))
        assert isinstance(listed, ln.ListNamespacesResponse)
    finally:
        ns.close()


def test_properties_that_are_not_strings_become_the_strings_backends_parse(
    tmp_path: Path,
) -> None:
    # LanceDB users write numbers and booleans in namespace_client_properties
    with impls.DirNamespace(root=tmp_path, manifest_enabled=False) as ns:
        ns.create_table(ln.CreateTableRequest(id=["t"]), _ipc(pa.table({"id": [1]})))
        assert not (tmp_path / "__manifest").exists()
        assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == ["t"]


def test_the_aliases_are_ours_prefixed_and_clash_with_no_other_packages_names() -> None:
    assert {
        f"lna-{impl}": f"lance_namespace_async.impls.{cls.__name__}"
        for impl, cls in CLASSES.items()
    } == impls.ALIASES
    # pylance's native names and lance-namespace-impls' names stay theirs
    taken = {"dir", "rest", "glue", "hive2", "hive3", "iceberg", "polaris", "unity", "goosefs"}
    assert not taken & set(impls.ALIASES)
    assert ln.NATIVE_IMPLS["dir"] == "lance.namespace.DirectoryNamespace"


def _python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_package_registers_nothing_and_stays_off_lance_namespace() -> None:
    shown = _python(
        "import sys, lance_namespace_async\n"
        "print('lance_namespace' in sys.modules)\n"
        "import lance_namespace\n"
        "print(sorted(lance_namespace._REGISTERED_IMPLS))\n"
        "import lance_namespace_async.impls\n"
        "print(sorted(lance_namespace._REGISTERED_IMPLS))\n"
    )
    assert shown.splitlines() == [
        "False",
        "[]",
        str(sorted(impls.ALIASES)),
    ]


def test_a_name_another_package_registered_first_is_left_to_it() -> None:
    shown = _python(
        "import lance_namespace as ln\n"
        "ln.register_namespace_impl('lna-glue', 'elsewhere.GlueNamespace')\n"
        "from lance_namespace_async import impls\n"
        "print(ln._REGISTERED_IMPLS['lna-glue'])\n"
        "print('lna-glue' in impls.register_aliases())\n"
    )
    assert shown.splitlines() == ["elsewhere.GlueNamespace", "False"]


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())
