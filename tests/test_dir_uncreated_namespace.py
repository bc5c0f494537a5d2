"""Writes into a namespace nobody created, and the words of the errors a new user meets.

pylance's own DirectoryNamespace (14.0.2) writes such a table and lists it under
ListTables of a namespace that NamespaceExists, ListNamespaces and DropNamespace still
say does not exist. The protocol (and the conformance kit, on every backend) says a
table needs its namespace: here every path refuses with NamespaceNotFound naming the
namespace and writes nothing — the library, the sync facade pylance writes through, and
``lance-ns serve`` (a real process, tests/serve_process.py) reached by pylance's
RestNamespace and by our rest backend.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from conftest import disk_state
from lance.namespace import RestNamespace
from serve_process import lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async import errors

ROWS = pa.table({"x": [1, 2, 3]})


def refused_on_every_write(ns: Any, namespace: str) -> None:
    missing = f"namespace {namespace!r} does not exist"
    table = [namespace, "t"]
    with pytest.raises(errors.NamespaceNotFoundError, match=missing):
        ns.declare_table({"id": table})
    with pytest.raises(errors.NamespaceNotFoundError, match=missing):
        ns.create_table({"id": table}, ROWS)
    with pytest.raises(errors.NamespaceNotFoundError, match=missing):
        lance.write_dataset(ROWS, namespace_client=ns, table_id=table)
    with pytest.raises(errors.NamespaceNotFoundError, match=missing):
        ns.list_tables({"id": [namespace]})


def test_the_library_refuses_a_write_into_an_uncreated_namespace(tmp_path: Path) -> None:
    root = tmp_path / "catalog"
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        ns.create_namespace({"id": ["other"]})
        before = disk_state(root)
        refused_on_every_write(ns, "test_ns")
        assert disk_state(root) == before
        ns.create_namespace({"id": ["test_ns"]})  # once created, the same write succeeds
        lance.write_dataset(ROWS, namespace_client=ns, table_id=["test_ns", "t"])
        assert ns.list_tables({"id": ["test_ns"]}).tables == ["t"]


def test_the_server_refuses_it_too_and_writes_nothing(tmp_path: Path) -> None:
    from lance_namespace import CreateTableRequest, DeclareTableRequest, ListTablesRequest

    root = tmp_path / "served"
    root.mkdir()
    with lance_ns_serve({"root": str(root)}) as served:
        with lna.connect_sync("rest", {"uri": served.uri, "max_retries": "0"}) as ours:
            ours.create_namespace({"id": ["other"]})
            before = disk_state(root)
            refused_on_every_write(ours, "test_ns")
        theirs = RestNamespace(uri=served.uri)
        for write in (
            lambda: theirs.declare_table(DeclareTableRequest(id=["n2", "t"])),
            lambda: theirs.create_table(CreateTableRequest(id=["n2", "t"]), _ipc(ROWS)),
            lambda: lance.write_dataset(ROWS, namespace_client=theirs, table_id=["n2", "t"]),
            lambda: theirs.list_tables(ListTablesRequest(id=["n2"])),
        ):
            with pytest.raises(Exception, match="namespace 'n2' does not exist"):
                write()
        assert disk_state(root) == before


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


# -- the words of the errors -------------------------------------------------------------


def test_a_missing_root_is_named_not_pylance_s_manifest_words(tmp_path: Path) -> None:
    missing_root = tmp_path / "typo"
    with lna.connect_sync("dir", {"root": str(missing_root)}) as ns:
        for call in (
            lambda: ns.count_table_rows({"id": ["shop", "t"]}),
            lambda: ns.describe_table({"id": ["shop", "t"]}),
            lambda: ns.list_tables({"id": ["shop"]}),
        ):
            with pytest.raises(errors.NamespaceNotFoundError) as refused:
                call()
            assert "__manifest" not in refused.value.message
            assert "namespace 'shop' does not exist" in refused.value.message
            assert f"namespace root {str(missing_root)!r} does not exist" in refused.value.message
    assert not missing_root.exists()


def test_a_missing_namespace_of_an_existing_root_is_named(tmp_path: Path) -> None:
    with lna.connect_sync("dir", {"root": str(tmp_path)}) as ns:
        ns.create_namespace({"id": ["a"]})
        with pytest.raises(errors.NamespaceNotFoundError) as refused:
            ns.count_table_rows({"id": ["b", "t"]})
    assert refused.value.message == "namespace 'b' does not exist"


@pytest.mark.parametrize(
    "call",
    [
        lambda ns: ns.count_table_rows({"id": ["a", "t"], "predicate": "nope > 1"}),
        lambda ns: ns.query_table({"id": ["a", "t"], "k": 5, "vector": {}, "filter": "nope = 1"}),
        lambda ns: ns.delete_from_table({"id": ["a", "t"], "predicate": "nope = 1"}),
        lambda ns: ns.update_table(
            {"id": ["a", "t"], "predicate": "nope = 1", "updates": [["x", "1"]]}
        ),
    ],
)
def test_an_unknown_filter_column_is_a_short_error_naming_it(tmp_path: Path, call: Any) -> None:
    wide = pa.table({f"column_{i}": [i] for i in range(60)} | {"x": [1]})
    with lna.connect_sync("dir", {"root": str(tmp_path)}) as ns:
        ns.create_namespace({"id": ["a"]})
        ns.create_table({"id": ["a", "t"]}, wide)
        with pytest.raises(errors.InvalidInputError) as refused:
            call(ns)
    assert refused.value.message == (
        "the table has no column 'nope' (a filter or expression of the request refers to it)"
    )
    assert refused.value.detail is not None
    assert len(refused.value.detail) <= 300


def test_missing_dependency_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lance_namespace_async._core import registry

    (tmp_path / "needs_a_package.py").write_text(
        "from lance_namespace_async import errors\n"
        "try:\n"
        "    import package_that_is_not_installed\n"
        "except ImportError as missing:\n"
        "    raise errors.MissingDependencyError.for_extra(\"impl 'x'\", 'glue', missing)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry._BUILTIN, "needs-a-package", ("needs_a_package:X", "glue"))
    monkeypatch.delitem(sys.modules, "needs_a_package", raising=False)
    with pytest.raises(errors.MissingDependencyError) as refused:
        lna.connect("needs-a-package", {})
    assert refused.value.message == (
        "impl 'x' needs the optional dependency 'package_that_is_not_installed', which is "
        "not installed: pip install 'lance-namespace-async[glue]' "
        "(from a clone: pip install -e '.[glue]')"
    )


def test_dir_of_the_package_lists_each_public_name_once() -> None:
    lna.connect, lna.errors, lna.models  # noqa: B018  (loaded: now module globals too)
    names = dir(lna)
    assert len(names) == len(set(names))
    assert {"connect", "errors", "models", "impls", "connect_sync"} <= set(names)
    assert not {"Any", "TYPE_CHECKING", "importlib"} & set(names)
    assert [n for n in names if not n.startswith("__")] == sorted(lna.__all__)
