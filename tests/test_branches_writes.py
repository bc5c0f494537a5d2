"""Writes addressed to a branch, and racing upserts (issue 27).

Servers: the real ``lance-ns serve --impl dir`` process (tests/serve_process.py) on a free
127.0.0.1 port over a temporary root, and ``lance-ns serve --impl iceberg`` over the
Iceberg REST look-alike (tests/iceberg_rest_server.py, pyiceberg's SqlCatalog on sqlite)
for the catalog half (whose branches act on storage: tests/test_catalog_branches.py has
the rest of them). Tables are real Lance tables, read back with pylance.

Each operation that takes ``branch`` either acts on that branch (main unchanged, the branch
changed: CountTableRows with and without ``branch``) or is refused with a typed error
(UnsupportedOperation, code 0, naming the operation), never acting on main. Eight
concurrent MergeInsertIntoTable of the same new keys leave each key once.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest
from iceberg_rest_server import iceberg_catalog
from serve_process import ServeProcess, lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async import errors

pytest.importorskip("uvicorn", reason="the server extra is not installed")

ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}


def rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "s": pa.array([f"s{i}" for i in ids])})


def ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def tree_digest(location: str, skip: str = "tree") -> str:
    """A hash of every file of the table but those under ``<table>/<skip>`` (``tree``:
    its branches, so the hash is main's)."""
    digest = hashlib.sha256()
    path = location.removeprefix("file://")
    found = []
    for folder, _, names in os.walk(path):
        relative = os.path.relpath(folder, path)
        if skip and (relative == skip or relative.startswith(skip + os.sep)):
            continue
        found += [os.path.join(folder, name) for name in names]
    for full in sorted(found):
        digest.update(full.encode())
        with open(full, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    root = tmp_path_factory.mktemp("branches") / "root"
    root.mkdir()
    with lance_ns_serve({"root": str(root)}, "--log-level", "error") as s:
        yield s


def fresh_table(http: httpx.Client, name: str, count: int = 10) -> str:
    http.post("/v1/namespace/b/create", json={})
    created = http.post(
        f"/v1/table/b${name}/create", content=ipc(rows(range(count))), headers=ARROW
    )
    assert created.status_code == 200, created.text
    return str(created.json()["location"])


def count(http: httpx.Client, name: str, branch: str | None = None, prefix: str = "b$") -> int:
    body = {"branch": branch} if branch else {}
    answer = http.post(f"/v1/table/{prefix}{name}/count_rows", json=body)
    assert answer.status_code == 200, answer.text
    return int(answer.json())


#: (operation, path, JSON body or None for Arrow rows, query parameters, rows on dev after)
WRITES: list[tuple[str, str, dict[str, Any] | None, dict[str, str], int]] = [
    ("InsertIntoTable", "insert", None, {}, 16),
    (
        "MergeInsertIntoTable",
        "merge_insert",
        None,
        {"on": "id", "when_matched_update_all": "true", "when_not_matched_insert_all": "true"},
        13,
    ),
    ("UpdateTable", "update", {"predicate": "id < 5", "updates": [["s", "'dev'"]]}, {}, 10),
    ("DeleteFromTable", "delete", {"predicate": "id < 4"}, {}, 6),
]


@pytest.mark.parametrize(
    ("path", "body", "params", "on_dev"), [w[1:] for w in WRITES], ids=[w[0] for w in WRITES]
)
def test_a_write_to_a_branch_lands_on_the_branch_and_main_is_unchanged(
    served: ServeProcess,
    path: str,
    body: dict[str, Any] | None,
    params: dict[str, str],
    on_dev: int,
) -> None:
    name = f"w_{path}"
    with httpx.Client(base_url=served.uri, timeout=60) as http:
        location = fresh_table(http, name)
        made = http.post(f"/v1/table/b${name}/branches/create", json={"name": "dev"})
        assert made.status_code == 200, made.text
        main_before = tree_digest(location)
        url = f"/v1/table/b${name}/{path}"
        if body is None:
            answer = http.post(
                url,
                params={**params, "branch": "dev"},
                content=ipc(rows(range(7, 13))),
                headers=ARROW,
            )
        else:
            answer = http.post(url, json={**body, "branch": "dev"})
        assert answer.status_code == 200, answer.text
        assert count(http, name) == 10
        assert count(http, name, "dev") == on_dev
        assert tree_digest(location) == main_before
        dev = lance.dataset(location).checkout_version(("dev", None)).to_table()
        if path == "update":
            assert sorted(dev.filter(pa.compute.equal(dev["s"], "dev"))["id"].to_pylist()) == [
                0,
                1,
                2,
                3,
                4,
            ]
        assert "dev" not in lance.dataset(location).to_table()["s"].to_pylist()


def test_schema_metadata_and_queries_on_a_branch(served: ServeProcess) -> None:
    with httpx.Client(base_url=served.uri, timeout=60) as http:
        location = fresh_table(http, "meta")
        http.post("/v1/table/b$meta/branches/create", json={"name": "dev"})
        answer = http.post(
            "/v1/table/b$meta/schema_metadata/update",
            params={"branch": "dev"},
            json={"owner": "dev-team"},
        )
        assert answer.status_code == 200, answer.text
        assert not lance.dataset(location).schema.metadata
        dev = lance.dataset(location).checkout_version(("dev", None))
        assert dev.schema.metadata == {b"owner": b"dev-team"}
        http.post(
            "/v1/table/b$meta/insert",
            params={"branch": "dev"},
            content=ipc(rows(range(100, 103))),
            headers=ARROW,
        )
        queried = http.post(
            "/v1/table/b$meta/query", json={"branch": "dev", "k": 100, "vector": {}}
        )
        assert queried.status_code == 200, queried.text
        assert pa.ipc.open_file(queried.content).read_all().num_rows == 13
        on_main = http.post("/v1/table/b$meta/query", json={"k": 100, "vector": {}})
        assert pa.ipc.open_file(on_main.content).read_all().num_rows == 10


#: operations pylance would run on main whatever the branch: refused (code 0); those
#: whose branch is a query parameter of the route take it there
REFUSED: list[tuple[str, str, dict[str, Any]]] = [
    ("AlterTableAddColumns", "add_columns", {"new_columns": [{"name": "c", "expression": "id"}]}),
    ("AlterTableDropColumns", "drop_columns", {"columns": ["s"]}),
    ("AlterTableAlterColumns", "alter_columns", {"alterations": [{"path": "s", "rename": "t"}]}),
    ("CreateTableIndex", "create_index", {"column": "id", "index_type": "BTREE"}),
    ("CreateTableScalarIndex", "create_scalar_index", {"column": "id", "index_type": "BTREE"}),
    ("CreateTableTag", "tags/create", {"tag": "t1", "version": 1}),
    ("RestoreTable", "restore", {"version": 1}),
    ("UpdateFieldMetadata", "update_field_metadata", {"updates": []}),
    ("DescribeTable", "describe", {}),
    ("ListTableVersions", "version/list", {}),
    ("ListTableIndices", "index/list", {}),
    ("DropTableIndex", "index/id_idx/drop", {}),
    ("DescribeTableIndexStats", "index/id_idx/stats", {}),
    ("ExplainTableQueryPlan", "explain_plan", {"query": {"k": 1, "vector": {}}}),
    ("AnalyzeTableQueryPlan", "analyze_plan", {"k": 1, "vector": {}}),
]


QUERY_BRANCH = frozenset({"version/list", "index/id_idx/drop"})


def test_operations_that_cannot_act_on_a_branch_refuse_it_and_change_nothing(
    served: ServeProcess,
) -> None:
    with httpx.Client(base_url=served.uri, timeout=60) as http:
        location = fresh_table(http, "refuse")
        http.post("/v1/table/b$refuse/branches/create", json={"name": "dev"})
        for operation, path, body in REFUSED:
            before = tree_digest(location, skip="")
            answer = http.post(
                f"/v1/table/b$refuse/{path}",
                params={"branch": "dev"} if path in QUERY_BRANCH else None,
                json={**body, "branch": "dev"} if path not in QUERY_BRANCH else body,
            )
            assert answer.status_code == 406, (operation, answer.text)
            assert answer.json()["code"] == 0
            assert operation in answer.json()["error"]
            assert tree_digest(location, skip="") == before, operation
        assert count(http, "refuse") == 10


def test_branch_names_pylance_cannot_hold_are_code_13(served: ServeProcess) -> None:
    with httpx.Client(base_url=served.uri, timeout=60) as http:
        fresh_table(http, "names")
        for body in ({"name": "."}, {"name": "a//b"}, {"name": "x" * 5000}, {"name": ".."}):
            answer = http.post("/v1/table/b$names/branches/create", json=body)
            assert answer.status_code == 400, answer.text
            assert answer.json()["code"] == 13
        tag = http.post("/v1/table/b$names/tags/create", json={"tag": "t" * 5000, "version": 1})
        assert tag.status_code == 400, tag.text
        assert tag.json()["code"] == 13


def test_racing_upserts_through_one_server_leave_each_key_once(served: ServeProcess) -> None:
    with httpx.Client(base_url=served.uri, timeout=60) as http:
        location = fresh_table(http, "race")
    new_keys = rows(range(100, 120))
    barrier = threading.Barrier(8)
    answers: list[int] = []

    def upsert() -> None:
        with httpx.Client(base_url=served.uri, timeout=120) as http:
            barrier.wait()
            answer = http.post(
                "/v1/table/b$race/merge_insert",
                params={
                    "on": "id",
                    "when_matched_update_all": "true",
                    "when_not_matched_insert_all": "true",
                },
                content=ipc(new_keys),
                headers=ARROW,
            )
            answers.append(answer.status_code)

    threads = [threading.Thread(target=upsert) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert answers == [200] * 8
    ids = lance.dataset(location).to_table(columns=["id"])["id"].to_pylist()
    assert sorted(ids) == list(range(10)) + list(range(100, 120))


# -- a catalog backend ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    place = tmp_path_factory.mktemp("branches-iceberg")
    data = place / "lance-root"
    data.mkdir()
    with iceberg_catalog(place / "iceberg") as catalog:
        properties = {"endpoint": catalog.uri, "root": str(data), "retry_backoff_ms": "1"}
        with lance_ns_serve(properties, "--log-level", "error", impl="iceberg") as s:
            yield s


def test_a_catalog_backend_writes_to_its_branches_bounds_requests_and_creates_empty_tables(
    catalog_served: ServeProcess,
) -> None:
    with httpx.Client(base_url=catalog_served.uri, timeout=60) as http:
        assert http.post("/v1/namespace/wh$b/create", json={}).status_code == 200
        created = http.post("/v1/table/wh$b$t/create", content=ipc(rows(range(10))), headers=ARROW)
        assert created.status_code == 200, created.text
        location = created.json()["location"]
        before = tree_digest(location, skip="")
        # a branch the table lacks: 404, code 22, nothing changed
        for path, body in (
            ("delete", {"predicate": "id < 4"}),
            ("update", {"updates": [["s", "'x'"]]}),
            ("describe", {}),
        ):
            answer = http.post(f"/v1/table/wh$b$t/{path}", json={**body, "branch": "dev"})
            assert answer.status_code == 404, answer.text
            assert answer.json()["code"] == 22
        for path, body in (("schema_metadata/update", {"a": "b"}), ("version/list", {})):
            answer = http.post(f"/v1/table/wh$b$t/{path}", params={"branch": "dev"}, json=body)
            assert answer.status_code == 404, answer.text
            assert answer.json()["code"] == 22
        assert tree_digest(location, skip="") == before
        made = http.post("/v1/table/wh$b$t/branches/create", json={"name": "dev"})
        assert made.status_code == 200, made.text
        main_before = tree_digest(location)
        inserted = http.post(
            "/v1/table/wh$b$t/insert",
            params={"branch": "dev"},
            content=ipc(rows(range(50, 52))),
            headers=ARROW,
        )
        assert inserted.status_code == 200, inserted.text
        deleted = http.post(
            "/v1/table/wh$b$t/delete", json={"predicate": "id < 4", "branch": "dev"}
        )
        assert deleted.status_code == 200, deleted.text
        assert count(http, "t", prefix="wh$b$") == 10
        assert count(http, "t", "dev", prefix="wh$b$") == 8
        assert tree_digest(location) == main_before
        attack = http.post(
            "/v1/table/wh$b$t/query", json={"filter": "id" + " + id" * 700 + " > 0", "k": 5}
        )
        assert attack.status_code == 400
        assert attack.json()["code"] == 13
        tag = http.post("/v1/table/wh$b$t/tags/create", json={"tag": "x" * 300, "version": 1})
        assert tag.status_code == 400
        assert tag.json()["code"] == 13
        empty = http.post("/v1/table/wh$b$empty/create", content=ipc(rows(range(0))), headers=ARROW)
        assert empty.status_code == 200, empty.text
        assert http.post("/v1/table/wh$b$empty/count_rows", json={}).json() == 0
        missing = http.post(
            "/v1/table/wh$nowhere$t/create", content=ipc(rows(range(3))), headers=ARROW
        )
        assert missing.status_code == 404, missing.text
        assert missing.json()["code"] == 1
    assert catalog_served.process.poll() is None


def test_the_library_writes_to_the_branch_too(tmp_path: Path) -> None:
    ns = lna.connect_sync("dir", {"root": str(tmp_path)})
    ns.create_table({"id": ["t"]}, rows(range(5)))
    ns.create_table_branch({"id": ["t"], "name": "dev"})
    ns.insert_into_table({"id": ["t"], "branch": "dev"}, rows(range(5, 7)))
    with pytest.raises(errors.TableBranchNotFoundError):
        ns.insert_into_table({"id": ["t"], "branch": "nope"}, rows(range(5, 7)))
    assert ns.count_table_rows({"id": ["t"]}).count == 5
    assert ns.count_table_rows({"id": ["t"], "branch": "dev"}).count == 7
    ns.close()


#: a plausible request for each operation that takes ``branch`` (its branch added below)
PLAUSIBLE: dict[str, dict[str, Any]] = {
    "RestoreTable": {"version": 1},
    "UpdateTableSchemaMetadata": {"metadata": {"a": "b"}},
    "CreateTableVersion": {"version": 99, "manifest_path": "_versions/99.manifest"},
    "DescribeTableVersion": {"version": 1},
    "BatchDeleteTableVersions": {"ranges": [{"start_version": 0, "end_version": -1}]},
    "AlterTableAlterColumns": {"alterations": [{"path": "s", "rename": "t"}]},
    "UpdateFieldMetadata": {"updates": [{"path": "s", "metadata": {"a": "b"}}]},
    "AlterTableDropColumns": {"columns": ["s"]},
    "MergeInsertIntoTable": {"on": "id", "when_not_matched_insert_all": True},
    "UpdateTable": {"updates": [["s", "'x'"]]},
    "DeleteFromTable": {"predicate": "id < 3"},
    "QueryTable": {"k": 100, "vector": {}},
    "ExplainTableQueryPlan": {"query": {"k": 1, "vector": {}}},
    "AnalyzeTableQueryPlan": {"k": 1, "vector": {}},
    "AlterTableAddColumns": {"new_columns": [{"name": "c", "expression": "id"}]},
    "AlterTableBackfillColumns": {"column": "s"},
    "CreateTableIndex": {"column": "id", "index_type": "BTREE"},
    "CreateTableScalarIndex": {"column": "id", "index_type": "BTREE"},
    "DescribeTableIndexStats": {"index_name": "id_idx"},
    "DropTableIndex": {"index_name": "id_idx"},
    "CreateTableTag": {"tag": "t1", "version": 1},
    "UpdateTableTag": {"tag": "t1", "version": 1},
}


async def test_every_operation_with_a_branch_acts_on_it_or_refuses_never_main(
    tmp_path: Path,
) -> None:
    """Every operation of the spec whose request has ``branch``, on the dir backend:
    main's files are the same after it, and it either succeeds (those that act on or read
    the branch) or raises a typed error that is not an internal one."""
    import attrs

    from lance_namespace_async import models
    from lance_namespace_async._core.operations import OPERATIONS
    from lance_namespace_async.directory._branches import (
        BRANCH_OPERATIONS,
        PYLANCE_READS_BRANCH,
    )

    with_branch = [
        operation
        for operation in OPERATIONS
        if "branch" in attrs.fields_dict(getattr(models, operation.request_model))
    ]
    assert len(with_branch) >= 28  # spec/rest.yaml as of this test
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        created = await ns.create_table({"id": ["t"]}, rows(range(10)))
        await ns.create_table_branch({"id": ["t"], "name": "dev"})
        acting = set(BRANCH_OPERATIONS) | PYLANCE_READS_BRANCH
        for operation in with_branch:
            body = {"id": ["t"], "branch": "dev", **PLAUSIBLE.get(operation.operation_id, {})}
            if operation.operation_id == "ExplainTableQueryPlan":
                body["query"] = {**body["query"], "id": ["t"], "branch": "dev"}
            before = tree_digest(created.location)
            call = getattr(ns, operation.method)
            try:
                if operation.takes_data:
                    await call(body, rows(range(20, 22)))
                else:
                    await call(body)
                outcome = "acted"
            except errors.LanceNamespaceError as exc:
                outcome = type(exc).__name__  # InternalError would fail below
            assert tree_digest(created.location) == before, operation.operation_id
            if operation.operation_id in acting:
                assert outcome == "acted", operation.operation_id
            else:
                assert outcome == "UnsupportedOperationError", (operation.operation_id, outcome)
        assert (await ns.count_table_rows({"id": ["t"]})).count == 10
