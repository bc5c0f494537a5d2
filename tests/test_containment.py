"""No operation of a confined backend reads, writes or deletes storage outside its root
(issue 27, "changing and deleting tables outside the storage root").

Servers used: the real ``lance-ns serve --impl dir`` process (``serve_process``), which
confines its backend by default, and for the catalog backends the in-process Iceberg REST
Catalog of ``tests/iceberg_rest_server.py`` behind ``lance-ns serve --impl iceberg``; the
decision itself and a batch's undo are checked in-process (a confined ``dir`` backend). The
canary is a real Lance table (several versions, a tag, a scalar index) written outside
the root and registered with the library unconfined (its default); every one of the 54
operations of the operation table is then sent to the confined server against it, and the
canary's tree (every file name and the sha256 of its content) must be what it was.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Collection
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import lance
import pyarrow as pa
import pytest
from conftest import Listener, sample_table, tree_digest
from serve_process import ServeProcess, lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.operations import OPERATIONS, Operation
from lance_namespace_async._storage.containment import Confinement
from lance_namespace_async.server._serving import served_properties

pytest.importorskip("uvicorn", reason="the server extra is not installed")

CANARY = ["ns", "canary"]


def write_canary(location: Path) -> None:
    """A Lance table of 60 rows in 3 versions, with a tag and a scalar index."""
    lance.write_dataset(sample_table(20), str(location))
    dataset = lance.write_dataset(sample_table(20), str(location), mode="append")
    dataset.tags.create("v1", 1)
    dataset = lance.write_dataset(sample_table(20), str(location), mode="append")
    dataset.create_scalar_index("id", "BTREE")


# -- the decision -------------------------------------------------------------------------------


async def _run(fn: Any, *args: Any) -> Any:
    return fn(*args)


def confinement(root: Path, *allowed: str) -> Confinement:
    return Confinement(True, str(root), allowed, _run)


def test_the_decision_is_strictly_inside_the_root_or_an_allowed_prefix(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "ns").mkdir(parents=True)
    (tmp_path / "root2").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "ns" / "link").symlink_to(tmp_path / "elsewhere")
    confined = confinement(root, str(tmp_path / "allowed"), "s3://bucket/shared")

    inside = [root / "ns" / "t", f"file://{root}/ns/t", root / "ns" / "new" / "deeper"]
    outside = [
        root,  # the root itself is no table's place
        tmp_path / "root2" / "t",  # a sibling sharing the root's spelling
        root / "ns" / "link" / "t",  # a link inside the root that points out
        f"{root}/ns/../../elsewhere/t",  # .. resolved
        tmp_path / "elsewhere",
        "s3://other-bucket/root/t",
        "s3://bucket/shared2/t",
        "s3://bucket/shared/../x",  # ambiguous: no one place
        "relative/t",  # against the cwd, which is not the root
    ]
    allowed = [tmp_path / "allowed", tmp_path / "allowed" / "t", "s3://bucket/shared/t"]
    assert [confined.outside(str(p)) for p in inside] == [False] * len(inside)
    assert [confined.outside(str(p)) for p in outside] == [True] * len(outside)
    assert [confined.outside(str(p)) for p in allowed] == [False] * len(allowed)

    with pytest.raises(errors.PermissionDeniedError) as refused:
        confined.refuse(str(tmp_path / "root2" / "t"), "QueryTable")
    assert refused.value.code == 15
    assert str(tmp_path) not in refused.value.message
    assert "outside the storage root" in refused.value.message
    Confinement(False, str(root), (), _run).refuse("/anywhere", "QueryTable")  # not confined


def test_a_server_confines_storage_backends_and_honours_an_explicit_no(
    caplog: pytest.LogCaptureFixture,
) -> None:
    served = served_properties("dir", {"root": "/r"}, allowed_locations=["/a", "s3://b/p"])
    assert served == {
        "root": "/r",
        "confine_storage": "true",
        "allowed_locations": "/a,s3://b/p",
        "table_storage_options": "",
    }
    merged = served_properties(
        "dir", {"root": "/r", "allowed_locations": "/x"}, allowed_locations=["/a"]
    )
    assert merged["allowed_locations"] == "/x,/a"
    with caplog.at_level("WARNING", logger="lance_namespace_async.server"):
        kept = served_properties("dir", {"root": "/r", "confine_storage": "false"})
    assert kept["confine_storage"] == "false"
    assert "confine_storage=false" in caplog.text
    assert served_properties("rest", {"uri": "http://h"}) == {"uri": "http://h"}
    with pytest.raises(errors.InvalidInputError, match="--allow-location"):
        served_properties("rest", {"uri": "http://h"}, allowed_locations=["/a"])


def test_storage_confinement_is_reported_and_create_app_warns_when_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from lance_namespace_async.server import create_app

    free = lna.connect("dir", {"root": str(tmp_path)})
    confined = lna.connect("dir", {"root": str(tmp_path), "confine_storage": "true"})
    rest = lna.connect("rest", {"uri": "http://127.0.0.1:9"})
    assert (free.storage_confined, confined.storage_confined, rest.storage_confined) == (
        False,
        True,
        True,
    )
    with caplog.at_level("WARNING", logger="lance_namespace_async.server"):
        create_app(confined)
        create_app(rest)
        assert "confine_storage" not in caplog.text
        create_app(free)
    assert "without confine_storage=true" in caplog.text


# -- the attack, over HTTP against lance-ns serve --------------------------------------------


def ipc_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def request_for(
    operation: Operation, namespace: list[str], outside: Path
) -> tuple[dict[str, Any], bytes | None]:
    """A well-formed request of ``operation`` aimed at the canary of ``namespace``: its
    fields (path, query and body alike) and the Arrow body of the operations with rows."""
    table = [*namespace, "canary"]
    versions = {
        "id": table,
        "ranges": [{"start_version": 0, "end_version": -1}],
    }
    query = {"id": table, "k": 3, "vector": {}, "columns": {"column_names": ["id"]}}
    fields: dict[str, dict[str, Any]] = {
        "CreateNamespace": {"id": [*namespace[:-1], "other"]},
        "ListNamespaces": {"id": []},
        "DescribeNamespace": {"id": namespace},
        "DropNamespace": {"id": namespace},  # Restrict: not empty, refused by the catalog
        "NamespaceExists": {"id": namespace},
        "ListTables": {"id": namespace},
        "ListAllTables": {},
        "RegisterTable": {"id": [*namespace, "again"], "location": str(outside)},
        "DescribeTable": {"id": table},
        "TableExists": {"id": table},
        "DeclareTable": {"id": [*namespace, "declared"], "location": str(outside / "declared")},
        "RestoreTable": {"id": table, "version": 1},
        "ListTableVersions": {"id": table},
        "UpdateTableSchemaMetadata": {"id": table, "metadata": {"k": "v"}},
        "CreateTableVersion": {
            "id": table,
            "version": 99,
            "manifest_path": "_versions/99.manifest",
        },
        "DescribeTableVersion": {"id": table, "version": 1},
        "BatchDeleteTableVersions": versions,
        "BatchCreateTableVersions": {
            "entries": [{"id": table, "version": 99, "manifest_path": "_versions/99.manifest"}]
        },
        "BatchCommitTables": {
            "operations": [{"delete_table_versions": versions}],
        },
        "AlterTableAlterColumns": {"id": table, "alterations": [{"path": "id", "rename": "x"}]},
        "UpdateFieldMetadata": {"id": table, "updates": [{"path": "id", "metadata": {"a": "b"}}]},
        "AlterTableDropColumns": {"id": table, "columns": ["vector"]},
        "GetTableStats": {"id": table},
        "InsertIntoTable": {"id": table},
        "MergeInsertIntoTable": {
            "id": table,
            "on": "id",
            "when_matched_update_all": True,
            "when_not_matched_insert_all": True,
        },
        "UpdateTable": {"id": table, "updates": [["id", "id + 1"]]},
        "DeleteFromTable": {"id": table, "predicate": "id >= 0"},
        "QueryTable": query,
        "CountTableRows": {"id": table},
        "CreateTable": {"id": table, "mode": "overwrite"},
        "ExplainTableQueryPlan": {"id": table, "query": query},
        "AnalyzeTableQueryPlan": query,
        "AlterTableAddColumns": {"id": table, "new_columns": [{"name": "z", "expression": "1"}]},
        "AlterTableBackfillColumns": {"id": table, "column": "z"},
        "RefreshMaterializedView": {"id": table},
        "CreateMaterializedView": {"id": [*namespace, "view"]},
        "CreateTableIndex": {"id": table, "column": "vector", "index_type": "IVF_FLAT"},
        "CreateTableScalarIndex": {"id": table, "column": "id", "index_type": "BITMAP"},
        "ListTableIndices": {"id": table},
        "DescribeTableIndexStats": {"id": table, "index_name": "id_idx"},
        "DropTableIndex": {"id": table, "index_name": "id_idx"},
        "ListTableTags": {"id": table},
        "GetTableTagVersion": {"id": table, "tag": "v1"},
        "CreateTableTag": {"id": table, "tag": "v2", "version": 1},
        "DeleteTableTag": {"id": table, "tag": "v1"},
        "UpdateTableTag": {"id": table, "tag": "v1", "version": 2},
        "ListTableBranches": {"id": table},
        "CreateTableBranch": {"id": table, "name": "dev", "from_version": 1},
        "DeleteTableBranch": {"id": table, "name": "dev"},
        "DescribeTransaction": {"id": [*table, "1"]},
        "AlterTransaction": {
            "id": [*table, "1"],
            "actions": [{"setPropertyAction": {"key": "k", "value": "v"}}],
        },
        # run last: they change the catalog (never the canary's storage)
        "RenameTable": {"id": table, "new_table_name": "renamed"},
        "DeregisterTable": {"id": [*namespace, "renamed"]},
        "DropTable": {"id": [*namespace, "second"]},
    }
    rows = sample_table(2) if operation.takes_data else None
    return fields[operation.operation_id], None if rows is None else ipc_stream(rows)


def send(
    client: httpx.Client, operation: Operation, fields: dict[str, Any], data: bytes | None
) -> httpx.Response:
    """``operation`` as a REST client sends it: path parameters, query, body."""
    fields = dict(fields)
    path = operation.path
    for name in operation.path_params:
        value = fields.pop(name)
        text = "$".join(value) if isinstance(value, list) else str(value)
        path = path.replace("{" + name + "}", quote(text if text else "$", safe=""))
    query = {q.name: fields.pop(q.name) for q in operation.query_params if q.name in fields}
    params = {k: json.dumps(v) if not isinstance(v, str) else v for k, v in query.items()}
    params = {k: v.lower() if v in ("True", "False") else v for k, v in params.items()}
    if operation.request_body == "arrow":
        headers = {"content-type": "application/vnd.apache.arrow.stream"}
        return client.request(
            operation.http_method, path, params=params, content=data, headers=headers
        )
    if operation.request_body == "none":
        return client.request(operation.http_method, path, params=params)
    body: Any = fields
    if operation.request_body == "object":
        body = fields.get(operation.request_field or "")
    return client.request(operation.http_method, path, params=params, json=body)


#: operations that keep working on an outside table: they answer from the catalog only
#: (or address no table), so any answer but a server error is theirs to give
CATALOG_ONLY = frozenset(
    {
        "CreateNamespace",
        "ListNamespaces",
        "DescribeNamespace",
        "DropNamespace",
        "NamespaceExists",
        "ListTables",
        "ListAllTables",
        "DescribeTable",
        "TableExists",
        "RenameTable",
        "DeregisterTable",
        "DropTable",
        # pylance's dir answers TableNotFound for an outside table (touching nothing);
        # the catalogs refuse them (asserted in the catalog test below)
        "DescribeTransaction",
        "AlterTransaction",
        "RefreshMaterializedView",
        "CreateMaterializedView",
    }
)


#: run after every other operation, in this order: they change the catalog
_LAST = ("RenameTable", "DeregisterTable", "DropTable")


@pytest.fixture
def outside_catalog(tmp_path: Path) -> tuple[Path, Path]:
    """A dir catalog whose tables ns.canary and ns.second live outside its root,
    registered with the library unconfined (its default)."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    write_canary(outside / "canary")
    write_canary(outside / "second")
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        ns.create_namespace({"id": ["ns"]})
        ns.register_table({"id": CANARY, "location": str(outside / "canary")})
        ns.register_table({"id": ["ns", "second"], "location": str(outside / "second")})
    return root, outside


def answered(response: httpx.Response) -> tuple[int, int | None]:
    code = response.json().get("code") if response.status_code >= 400 else None
    return response.status_code, code


def attack_every_operation(
    served: ServeProcess,
    namespace: list[str],
    outside: Path,
    *,
    unsupported: bool = False,
    listed: Collection[str] | None = None,
) -> dict[str, tuple[int, int | None]]:
    """Every operation against the canary of ``namespace`` (and its neighbour ``second``)
    over HTTP: refused with 403/15 unless catalog-only (or, with ``unsupported``, not
    implemented by the backend: 406/0), the tree below ``outside`` unchanged after each
    one, the server alive and answering afterwards."""
    before = tree_digest(outside)
    ordered = sorted(
        OPERATIONS, key=lambda op: _LAST.index(op.operation_id) if op.operation_id in _LAST else -1
    )
    outcomes: dict[str, tuple[int, int | None]] = {}
    with httpx.Client(base_url=served.uri, timeout=60) as client:
        for operation in ordered:
            fields, data = request_for(operation, namespace, outside)
            outcomes[operation.operation_id] = answered(send(client, operation, fields, data))
            assert tree_digest(outside) == before, operation.operation_id
        assert served.process.poll() is None
        alive = client.post(f"/v1/namespace/{'$'.join(namespace)}/exists", json={"id": namespace})
        assert alive.status_code == 200
    assert len(outcomes) == len(OPERATIONS) == 54
    refused = {op: got for op, got in outcomes.items() if op not in CATALOG_ONLY}
    # what the backend does not implement touches nothing: 406/0 (or 400/13 for a
    # request the server refuses before any backend sees it)
    missing = {
        op.operation_id for op in OPERATIONS if listed is not None and op.method not in listed
    }
    unlisted = {op: outcomes[op] for op in missing}
    assert set(unlisted.values()) <= {(406, 0), (400, 13)}, unlisted
    refused = {op: got for op, got in refused.items() if op not in missing}
    if unsupported:
        refused = {op: got for op, got in refused.items() if got != (406, 0)}
        assert len(refused) >= 30  # the storage operations the backend implements
    assert refused == dict.fromkeys(refused, (403, 15))
    served_catalog = {op: got for op, got in outcomes.items() if op in CATALOG_ONLY}
    assert all(status < 500 for status, _ in served_catalog.values()), served_catalog
    # the catalog-only operations did what they do
    assert outcomes["DescribeTable"] == (200, None)
    assert outcomes["TableExists"] == (200, None)
    assert outcomes["RenameTable"] == (200, None)
    assert outcomes["DeregisterTable"] == (200, None)
    assert outcomes["DropTable"] == (200, None)
    return outcomes


def test_no_operation_touches_a_table_registered_outside_the_root(
    outside_catalog: tuple[Path, Path],
) -> None:
    root, outside = outside_catalog
    with lance_ns_serve({"root": str(root)}, "--log-level", "error") as served:
        with lna.connect_sync("dir", {"root": str(root)}) as ns:
            listed = ns.list_operations()
        attack_every_operation(served, ["ns"], outside, listed=listed)
        with httpx.Client(base_url=served.uri, timeout=60) as client:
            detailed = client.post(
                "/v1/table/ns%24canary2/describe",
                params={"load_detailed_metadata": "true"},
                json={"id": ["ns", "canary2"]},
            )
            assert detailed.status_code == 404  # renamed away by the attack: not a 403
    assert lance.dataset(str(outside / "canary")).count_rows() == 60


def test_a_table_reached_through_a_link_out_of_the_root_counts_as_outside(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    write_canary(outside / "root-table")
    write_canary(outside / "linked" / "t")
    (root / "linked.lance").symlink_to(outside / "root-table")  # a root table, linked out
    (root / "links").symlink_to(outside / "linked")  # a manifest row through a link
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        ns.create_namespace({"id": ["ns"]})
        ns.register_table({"id": ["ns", "via"], "location": str(root / "links" / "t")})
        stored = ns.describe_table({"id": ["ns", "via"]}).location
    assert stored == f"file://{root}/links/t"  # stored inside the root, relative
    before = tree_digest(outside)
    rows = ipc_stream(sample_table(2))
    with (
        lance_ns_serve({"root": str(root)}, "--log-level", "error") as served,
        httpx.Client(base_url=served.uri, timeout=60) as client,
    ):
        for path in ("linked", "ns%24via"):
            table = {"id": path.replace("%24", "$").split("$")}
            attempts = [
                client.post(f"/v1/table/{path}/count_rows", json=table),
                client.post(f"/v1/table/{path}/query", json={**table, "k": 1, "vector": {}}),
                client.post(
                    f"/v1/table/{path}/insert",
                    content=rows,
                    headers={"content-type": "application/vnd.apache.arrow.stream"},
                ),
                client.post(f"/v1/table/{path}/restore", json={**table, "version": 1}),
                client.post(f"/v1/table/{path}/version/list", json=table),
                client.post(
                    f"/v1/table/{path}/describe",
                    params={"load_detailed_metadata": "true"},
                    json=table,
                ),
            ]
            assert [answered(a) for a in attempts] == [(403, 15)] * len(attempts), path
            assert client.post(f"/v1/table/{path}/describe", json=table).status_code == 200
    assert tree_digest(outside) == before


def test_registering_outside_the_root_is_refused_before_storage_is_contacted(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    write_canary(outside / "canary")
    allowed = tmp_path / "shared"
    write_canary(allowed / "t")
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        ns.create_namespace({"id": ["ns"]})
    with (
        Listener() as s3,
        lance_ns_serve(
            {
                "root": str(root),
                "storage.aws_endpoint": f"http://127.0.0.1:{s3.port}",
                "storage.aws_access_key_id": "AKIDEXAMPLE",
                "storage.aws_secret_access_key": "secret-example",
                "storage.aws_region": "us-east-1",
                "storage.allow_http": "true",
            },
            "--allow-location",
            str(allowed),
            "--log-level",
            "error",
        ) as served,
        httpx.Client(base_url=served.uri, timeout=60) as client,
    ):
        for location in (str(outside / "canary"), "s3://someone-elses-bucket/t", f"{root}/../x"):
            response = client.post(
                "/v1/table/ns%24t/register", json={"id": ["ns", "t"], "location": location}
            )
            assert answered(response) == (403, 15), location
        assert s3.connections == 0
        registered = client.post(
            "/v1/table/ns%24shared/register",
            json={"id": ["ns", "shared"], "location": str(allowed / "t")},
        )
        assert registered.status_code == 200
        detailed = client.post(
            "/v1/table/ns%24shared/describe",
            params={"load_detailed_metadata": "true"},
            json={"id": ["ns", "shared"]},
        )
        assert detailed.status_code == 200
        assert detailed.json()["version"] == 4  # read: the allowed prefix is usable


# -- a catalog backend: the same attack over Iceberg -------------------------------------------


def test_no_operation_of_a_catalog_backend_touches_a_table_outside_its_root(
    tmp_path: Path,
) -> None:
    from iceberg_rest_server import iceberg_catalog

    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    write_canary(outside / "canary")
    write_canary(outside / "second")
    namespace = ["wh", "ns"]
    with iceberg_catalog(tmp_path / "iceberg") as catalog:
        properties = {"endpoint": catalog.uri, "root": str(root), "retry_backoff_ms": "1"}
        with lna.connect_sync("iceberg", properties) as ns:
            ns.create_namespace({"id": namespace})
            for name in ("canary", "second"):
                ns.register_table({"id": [*namespace, name], "location": str(outside / name)})
        with lance_ns_serve(properties, "--log-level", "error", impl="iceberg") as served:
            outcomes = attack_every_operation(served, namespace, outside, unsupported=True)
    # a transaction's alterations are kept beside the table: never outside the root
    assert outcomes["DescribeTransaction"] == (403, 15)
    assert outcomes["AlterTransaction"] == (403, 15)


async def test_a_refused_batch_puts_back_the_outside_table_it_deregistered(
    outside_catalog: tuple[Path, Path],
) -> None:
    """All or none: a batch of a confined backend that deregistered an outside table and
    then met a refused step registers the table again (its undo is no new registration)."""
    root, outside = outside_catalog
    before = tree_digest(outside)
    async with lna.connect("dir", {"root": str(root), "confine_storage": "true"}) as ns:
        versions = {"id": CANARY, "ranges": [{"start_version": 0, "end_version": -1}]}
        batch = {
            "operations": [
                {"deregister_table": {"id": ["ns", "second"]}},
                {"delete_table_versions": versions},
            ]
        }
        with pytest.raises(errors.PermissionDeniedError):
            await ns.batch_commit_tables(batch)
        await ns.table_exists({"id": ["ns", "second"]})
        described = await ns.describe_table({"id": ["ns", "second"]})
        assert described.location == f"file://{outside}/second"
        with pytest.raises(errors.PermissionDeniedError):  # and it stays confined
            await ns.register_table({"id": ["ns", "third"], "location": str(outside / "second")})
    assert tree_digest(outside) == before


def test_serve_refuses_an_allow_location_it_cannot_apply(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Usage errors, before anything is served: a relative prefix, or a prefix for a
    backend without storage of its own."""
    from lance_namespace_async._cli import main

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])

    def run(*argv: str) -> tuple[int, str]:
        try:
            code = main(["serve", *argv, "--port", port])
        except SystemExit as exited:
            code = int(exited.code or 0)
        return code, capsys.readouterr().err

    code, err = run("--impl", "dir", "--prop", f"root={tmp_path}", "--allow-location", "rel")
    assert code == 2
    assert "'allowed_locations'" in err
    assert "not an absolute path or URI" in err
    code, err = run("--impl", "rest", "--prop", "uri=http://127.0.0.1:9", "--allow-location", "/x")
    assert code == 2
    assert "--allow-location applies to backends that store tables" in err


def test_serve_given_an_impl_name_confines_its_backend(tmp_path: Path) -> None:
    """``serve("dir", properties)`` (the library's entry point, here in its own process)
    builds the backend with ``confine_storage=true``."""
    import subprocess
    import sys
    import time

    root = tmp_path / "root"
    root.mkdir()
    write_canary(tmp_path / "outside" / "t")
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        ns.create_namespace({"id": ["ns"]})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = (
        "from lance_namespace_async.server import serve; "
        f"serve('dir', {{'root': {str(root)!r}}}, port={port}, log_level='error')"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline
                time.sleep(0.05)
        response = httpx.post(
            f"http://127.0.0.1:{port}/v1/table/ns%24t/register",
            json={"id": ["ns", "t"], "location": str(tmp_path / "outside" / "t")},
        )
        assert answered(response) == (403, 15)
    finally:
        process.terminate()
        process.communicate(timeout=20)
