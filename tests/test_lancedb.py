"""LanceDB (the real ``lancedb`` package) over every backend, through our plugin classes.

One scenario (tests/lancedb_scenario.py: create, add, vector and filtered search,
update, delete, merge_insert, vector and scalar indices, versions, checkout, restore,
tags, add/drop columns, drop) runs through ``lancedb.connect(namespace_client_impl=
"lance_namespace_async.impls.<X>Namespace", ...)`` and must observe exactly what the
same scenario observes through LanceDB's own ``dir`` namespace on the same data — once
as LanceDB runs by default, once with QueryTable and CreateTable pushed down to the
namespace. Where LanceDB calls our facade in this process, the test also counts what it
asked of it: every query a QueryTable call when pushed down, none otherwise.

Servers: ``dir`` on a temporary folder; ``lance-ns serve`` over ``dir`` as a real
process (tests/serve_process.py), reached by LanceDB's own ``rest`` namespace and by our
``RestNamespace``; our ``RestNamespace`` against pylance's own Rust RestAdapter; the
Iceberg project's REST reference server (conftest's session ``iceberg_reference``); the
Unity look-alike; moto's server for Glue, with the tables on moto's S3; the session's
Hive Metastore 2.3 (conftest's ``hive_metastores``). Each server is started once for
this module; each test works in a namespace of its own.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lancedb
import pytest
from glue_fixtures import REGION, moto_glue, s3_client
from hive_metastore import Metastore
from iceberg_real_server import ReferenceIcebergServer, unique_name
from lancedb_scenario import QUERIES, observe
from serve_process import lance_ns_serve
from test_kit import aws_environment, pylance_adapter
from unity_real import unity_under_test

from lance_namespace_async import SyncLanceNamespace

PUSHDOWN = ["QueryTable", "CreateTable"]


@dataclass
class Target:
    """How LanceDB reaches one backend: impl, properties, and where its tables live."""

    impl: str
    properties: dict[str, str]
    #: whether LanceDB calls our facade in this process (not LanceDB's own Rust client)
    in_process: bool = True
    #: the namespace path the scenario's namespace is created under
    parent: list[str] = field(default_factory=list)

    def connect(self, pushdown: bool) -> lancedb.DBConnection:
        return lancedb.connect(
            namespace_client_impl=self.impl,
            namespace_client_properties=self.properties,
            namespace_client_pushdown_operations=PUSHDOWN if pushdown else None,
        )


def ours(backend: str) -> str:
    return f"lance_namespace_async.impls.{backend}Namespace"


@contextlib.contextmanager
def running(
    name: str,
    tmp: Path,
    hive_metastores: Callable[[str], Metastore],
    iceberg: ReferenceIcebergServer | None,
) -> Iterator[Target]:
    """The backend ``name`` on its real (or look-alike) local server, as a LanceDB target."""
    root = str(tmp / "lance-root")
    if name == "dir":
        yield Target(ours("Dir"), {"root": root})
    elif name in ("serve-lancedb-rest", "serve-our-rest"):
        with lance_ns_serve({"root": root}) as served:
            if name == "serve-lancedb-rest":
                yield Target("rest", {"uri": served.uri}, in_process=False)
            else:
                yield Target(ours("Rest"), {"uri": served.uri})
    elif name == "rest-to-pylance":
        with pylance_adapter(tmp / "lance-root") as uri:
            yield Target(ours("Rest"), {"uri": uri})
    elif name == "iceberg":
        assert iceberg is not None
        space = unique_name("lancedb")
        iceberg.rest_client().create_namespace(space)
        yield Target(ours("Iceberg"), iceberg.properties(root=root), parent=["wh", space])
    elif name == "unity":
        with unity_under_test() as server:
            server.add_catalog("main")
            yield Target(ours("Unity"), {"endpoint": server.uri, "root": root}, parent=["main"])
    elif name == "glue":
        with aws_environment(), moto_glue() as endpoint:
            s3_client(endpoint).create_bucket(Bucket="lancedb")
            properties = {
                "endpoint": endpoint,
                "region": REGION,
                "child_catalogs": "false",  # moto has no catalog APIs (glue_fixtures)
                "root": "s3://lancedb/root",
                "storage.aws_endpoint": endpoint,
                "storage.aws_access_key_id": "testing",
                "storage.aws_secret_access_key": "testing",
                "storage.aws_region": REGION,
                "storage.allow_http": "true",
            }
            yield Target(ours("Glue"), properties)
    elif name == "hive":
        metastore = hive_metastores("2.3")
        yield Target(ours("Hive"), {"uri": metastore.uri, "root": root})
    else:
        raise ValueError(name)


BACKENDS = [
    "dir",
    "serve-lancedb-rest",
    "serve-our-rest",
    "rest-to-pylance",
    "iceberg",
    "unity",
    "glue",
    "hive",
]


@pytest.fixture(scope="module", params=BACKENDS)
def target(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[Target]:
    name = str(request.param)
    iceberg = request.getfixturevalue("iceberg_reference") if name == "iceberg" else None
    with running(name, tmp_path_factory.mktemp(f"lancedb-{name}"), hive_metastores, iceberg) as t:
        yield t


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the scenario observes through LanceDB's own dir namespace."""
    root = tmp_path_factory.mktemp("lancedb-reference")
    db = lancedb.connect(
        namespace_client_impl="dir", namespace_client_properties={"root": str(root)}
    )
    db.create_namespace(["reference"])
    return observe(db, ["reference"])


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The operations LanceDB asked of our facades in this process, counted."""
    calls: Counter[str] = Counter()
    call = SyncLanceNamespace._call

    def counted(self: SyncLanceNamespace, operation: Any, *args: Any) -> Any:
        calls[operation.method] += 1
        return call(self, operation, *args)

    monkeypatch.setattr(SyncLanceNamespace, "_call", counted)
    return calls


@pytest.mark.parametrize("pushdown", [False, True], ids=["local", "pushdown"])
def test_lancedb_observes_what_it_observes_over_its_own_dir_namespace(
    target: Target, pushdown: bool, expected: dict[str, Any], served: Counter[str]
) -> None:
    db = target.connect(pushdown)
    namespace = [*target.parent, unique_name("push" if pushdown else "local")]
    db.create_namespace(namespace)

    seen = observe(db, namespace)

    if target.in_process:
        # pushed down, every query is the namespace's QueryTable; else LanceDB reads the
        # files itself. LanceDB 0.40 creates a table with DeclareTable and its own write
        # even when CreateTable is pushed down (its own dir and rest namespaces too)
        assert served["query_table"] == (QUERIES if pushdown else 0)
        assert served["declare_table"] == 1

    differences = {k: (v, expected[k]) for k, v in seen.items() if v != expected[k]}
    assert differences == {}, "step: (ours, LanceDB's own dir)"
    assert seen.keys() == expected.keys()


def test_a_dropped_lancedb_connection_closes_our_namespace_and_its_thread(tmp_path: Path) -> None:
    # LanceDB never closes the namespace client it builds: the facade closes itself
    # when garbage collected, instead of leaving its loop thread (and its backend's
    # connections) behind for every connection an application makes
    def portals() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "lance-namespace-async-portal"}

    for attempt in range(3):
        before = portals()
        db = Target(ours("Dir"), {"root": str(tmp_path)}).connect(pushdown=False)
        db.create_namespace([f"n{attempt}"])
        (started,) = portals() - before
        del db
        gc.collect()
        started.join(timeout=10)
        assert not started.is_alive()
