"""Branches of the catalog backends' tables (issue 31), one implementation on storage.

Servers: moto's server on 127.0.0.1 (tests/glue_fixtures.py ``moto_glue``: its Glue is
the catalog) behind the real ``lance-ns serve --impl glue`` process (tests/serve_process.py),
driven by pylance's own Rust ``RestNamespace``; the Iceberg REST look-alike
(tests/iceberg_rest_server.py, pyiceberg's SqlCatalog on sqlite) behind our iceberg
backend in process, for every operation of the spec that takes ``branch``; the Iceberg
project's REST reference server (conftest ``iceberg_reference``) for ``managed_by=impl``
tables. Tables are real Lance tables in temporary directories, read back with pylance.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import lance_namespace.errors as peer_errors
import pyarrow as pa
import pytest
from glue_fixtures import FAKE_AWS_ENV, REGION, moto_glue
from iceberg_real_server import ReferenceIcebergServer, unique_name
from iceberg_rest_server import iceberg_catalog
from serve_process import ServeProcess, lance_ns_serve
from test_branches_writes import PLAUSIBLE, tree_digest
from test_kit import aws_environment

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.glue import GlueNamespace

pytest.importorskip("uvicorn", reason="the server extra is not installed")


def rows(count: int, start: int = 0) -> pa.Table:
    ids = range(start, start + count)
    return pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array([f"s{i}" for i in ids])})


def ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def main_digest(location: str) -> str:
    """A hash of main's files: all of the table's but its branches (``tree``) and its
    tags (``_refs``, which name versions of any branch)."""
    import hashlib

    digest = hashlib.sha256()
    path = location.removeprefix("file://")
    for folder, folders, names in os.walk(path):
        if folder == path:
            folders[:] = [f for f in folders if f not in ("tree", "_refs")]
        for name in sorted(names):
            full = os.path.join(folder, name)
            digest.update(full.encode())
            with open(full, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()


# -- pylance's RestNamespace through lance-ns serve over Glue -------------------------------------


@pytest.fixture(scope="module")
def glue_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    root = tmp_path_factory.mktemp("glue-branches") / "root"
    root.mkdir()
    env = {k: v for k, v in FAKE_AWS_ENV.items() if v is not None}
    with aws_environment(), moto_glue() as endpoint:
        properties = {
            "endpoint": endpoint,
            "region": REGION,
            "child_catalogs": "false",
            "root": str(root),
        }
        with lance_ns_serve(properties, "--log-level", "error", impl="glue", env=env) as served:
            yield served


def test_pylance_creates_lists_writes_and_deletes_branches_through_serve_over_glue(
    glue_served: ServeProcess,
) -> None:
    from lance.namespace import RestNamespace

    peer = RestNamespace(uri=glue_served.uri)
    assert {"create_table_branch", "list_table_branches", "delete_table_branch"} <= set(
        GlueNamespace.list_operations()
    )
    peer.create_namespace(ln.CreateNamespaceRequest(id=["br"]))
    table = ["br", "t"]
    location = peer.create_table(ln.CreateTableRequest(id=table), ipc(rows(10))).location
    peer.create_table_branch(ln.CreateTableBranchRequest(id=table, name="dev"))
    listed = peer.list_table_branches(ln.ListTableBranchesRequest(id=table)).branches
    assert list(listed) == ["dev"]
    assert listed["dev"].parent_version == 1
    main_before = main_digest(location)
    inserted = peer.insert_into_table(
        ln.InsertIntoTableRequest(id=table, branch="dev"), ipc(rows(5, 10))
    )
    assert inserted.version == 2
    assert peer.count_table_rows(ln.CountTableRowsRequest(id=table, branch="dev")).count == 15
    assert peer.count_table_rows(ln.CountTableRowsRequest(id=table)).count == 10
    assert main_digest(location) == main_before
    assert lance.dataset(location).checkout_version(("dev", None)).count_rows() == 15
    with pytest.raises(peer_errors.TableBranchAlreadyExistsError):
        peer.create_table_branch(ln.CreateTableBranchRequest(id=table, name="dev"))
    peer.delete_table_branch(ln.DeleteTableBranchRequest(id=table, name="dev"))
    assert peer.list_table_branches(ln.ListTableBranchesRequest(id=table)).branches == {}
    with pytest.raises(peer_errors.TableBranchNotFoundError):
        peer.count_table_rows(ln.CountTableRowsRequest(id=table, branch="dev"))
    assert main_digest(location) == main_before
    # a table with branches is dropped whole: its branches are its own, not other tables
    peer.create_table_branch(ln.CreateTableBranchRequest(id=table, name="keep"))
    peer.drop_table(ln.DropTableRequest(id=table))
    assert not os.path.exists(location.removeprefix("file://"))


# -- every operation that takes a branch, on a catalog backend ------------------------------------

#: operations that take ``branch`` but cannot act on one on storage: refused (code 0)
REFUSED_ON_A_BRANCH = frozenset(
    {
        "CreateTableVersion",  # a staged manifest is recorded on main's version line
        "BatchDeleteTableVersions",
        "AlterTableBackfillColumns",  # not an operation of the catalog backends at all
    }
)


async def test_every_operation_with_a_branch_acts_on_it_on_a_catalog_never_main(
    tmp_path: Path,
) -> None:
    """Every operation of the spec whose request has ``branch``, on the iceberg backend
    (a storage-managed table), each on a branch of its own (with an index ``id_idx``):
    main's files are the same after it; it succeeds, but for
    :data:`REFUSED_ON_A_BRANCH`, which answer UnsupportedOperation (code 0)."""
    import attrs

    from lance_namespace_async import models
    from lance_namespace_async._core.operations import OPERATIONS

    with_branch = [
        operation
        for operation in OPERATIONS
        if "branch" in attrs.fields_dict(getattr(models, operation.request_model))
    ]
    assert len(with_branch) >= 28
    data = tmp_path / "root"
    data.mkdir()
    with iceberg_catalog(tmp_path / "iceberg") as catalog:
        properties = {"endpoint": catalog.uri, "root": str(data), "retry_backoff_ms": "1"}
        async with lna.connect("iceberg", properties) as ns:
            await ns.create_namespace({"id": ["wh", "b"]})
            table = ["wh", "b", "t"]
            created = await ns.create_table({"id": table}, rows(10))
            await ns.create_table_tag({"id": table, "tag": "t1", "version": 1})
            before = main_digest(created.location)
            outcomes: dict[str, str] = {}
            for number, operation in enumerate(with_branch):
                branch = f"b{number}"
                await ns.create_table_branch({"id": table, "name": branch})
                await ns.create_table_scalar_index(
                    {"id": table, "branch": branch, "column": "id", "index_type": "BTREE"}
                )
                body: dict[str, Any] = {
                    "id": table,
                    "branch": branch,
                    **PLAUSIBLE.get(operation.operation_id, {}),
                }
                if operation.operation_id == "ExplainTableQueryPlan":
                    body["query"] = {**body["query"], "id": table, "branch": branch}
                if operation.operation_id == "CreateTableTag":
                    body["tag"] = "new_tag"
                call = getattr(ns, operation.method)
                try:
                    if operation.takes_data:
                        await call(body, rows(2, 20))
                    else:
                        await call(body)
                    outcomes[operation.operation_id] = "acted"
                except errors.UnsupportedOperationError as exc:
                    outcomes[operation.operation_id] = f"refused, code {exc.code}"
                assert main_digest(created.location) == before, operation.operation_id
            expected = {
                op.operation_id: (
                    "refused, code 0" if op.operation_id in REFUSED_ON_A_BRANCH else "acted"
                )
                for op in with_branch
            }
            assert outcomes == expected
            assert (await ns.count_table_rows({"id": table})).count == 10
            main = await ns.describe_table({"id": table, "load_detailed_metadata": True})
            assert main.version == 1
            assert lance.dataset(created.location).schema.names == ["id", "s"]
            tags = lance.dataset(created.location).tags.list()
            assert tags["new_tag"]["branch"] is not None


async def test_describe_and_versions_of_a_branch_on_a_catalog(tmp_path: Path) -> None:
    """DescribeTable with ``branch`` answers the branch's version, schema and stats;
    ListTableVersions lists the branch's versions with their manifests inside the
    branch; an unknown branch is TableBranchNotFound (22)."""
    data = tmp_path / "root"
    data.mkdir()
    with iceberg_catalog(tmp_path / "iceberg") as catalog:
        properties = {"endpoint": catalog.uri, "root": str(data), "retry_backoff_ms": "1"}
        async with lna.connect("iceberg", properties) as ns:
            await ns.create_namespace({"id": ["wh", "b"]})
            table = ["wh", "b", "t"]
            created = await ns.create_table({"id": table}, rows(10))
            await ns.create_table_branch({"id": table, "name": "dev"})
            await ns.insert_into_table({"id": table, "branch": "dev"}, rows(3, 10))
            await ns.alter_table_add_columns(
                {"id": table, "branch": "dev", "new_columns": [{"name": "c", "expression": "id"}]}
            )
            described = await ns.describe_table(
                {"id": table, "branch": "dev", "load_detailed_metadata": True}
            )
            assert described.location == created.location
            assert described.version == 3
            assert [f.name for f in described.schema.fields] == ["id", "s", "c"]
            main = await ns.describe_table({"id": table, "load_detailed_metadata": True})
            assert main.version == 1
            assert [f.name for f in main.schema.fields] == ["id", "s"]
            old = await ns.describe_table({"id": table, "branch": "dev", "version": 2})
            assert old.version == 2
            listed = await ns.list_table_versions({"id": table, "branch": "dev"})
            assert sorted(v.version for v in listed.versions) == [1, 2, 3]
            for version in listed.versions:
                path = os.path.join(created.location.removeprefix("file://"), version.manifest_path)
                assert "/tree/dev/_versions/" in path, path
                assert os.path.exists(path), path
            await ns.create_table_branch(
                {"id": table, "name": "old", "from_branch": "dev", "from_version": 2}
            )
            assert (await ns.count_table_rows({"id": table, "branch": "old"})).count == 13
            branches = (await ns.list_table_branches({"id": table})).branches.to_dict()
            assert branches["old"]["parentBranch"] == "dev"
            assert branches["old"]["parentVersion"] == 2
            with pytest.raises(errors.TableVersionNotFoundError):
                await ns.create_table_branch({"id": table, "name": "x", "from_version": 7})
            with pytest.raises(errors.TableBranchNotFoundError):
                await ns.describe_table({"id": table, "branch": "nope"})
            with pytest.raises(errors.TableVersionNotFoundError):
                await ns.describe_table({"id": table, "branch": "dev", "version": 9})
            with pytest.raises(errors.InvalidInputError):
                await ns.count_table_rows({"id": table, "branch": "a//b"})


# -- managed_by=impl: the catalog holds main's version, and refuses branches ----------------------


async def test_a_managed_by_impl_table_refuses_branches_with_the_reason(
    iceberg_reference: ReferenceIcebergServer, tmp_path: Path
) -> None:
    """On an Iceberg ``managed_by=impl`` table every branch operation, and every
    operation addressed to a branch, answers UnsupportedOperation (0) naming
    ``managed_by=impl``, and changes nothing; a ``managed_by=storage`` table on the same
    catalog has branches."""
    space = unique_name("branches")
    iceberg_reference.rest_client().create_namespace(space)
    properties = iceberg_reference.properties(root=str(tmp_path / "root"), warehouses="wh")
    async with lna.connect("iceberg", properties) as ns:
        managed = ["wh", space, "managed"]
        created = await ns.create_table(
            {"id": managed, "properties": {"managed_by": "impl"}}, rows(5)
        )
        before = tree_digest(created.location, skip="")
        for call, body in (
            (ns.create_table_branch, {"id": managed, "name": "dev"}),
            (ns.list_table_branches, {"id": managed}),
            (ns.delete_table_branch, {"id": managed, "name": "dev"}),
            (ns.count_table_rows, {"id": managed, "branch": "dev"}),
            (ns.describe_table, {"id": managed, "branch": "dev"}),
            (ns.delete_from_table, {"id": managed, "branch": "dev", "predicate": "id < 2"}),
        ):
            with pytest.raises(errors.UnsupportedOperationError) as refused:
                await call(body)
            assert refused.value.code == 0
            assert "managed_by=impl" in str(refused.value), str(refused.value)
        assert tree_digest(created.location, skip="") == before
        plain = ["wh", space, "plain"]
        await ns.create_table({"id": plain, "properties": {"managed_by": "storage"}}, rows(5))
        await ns.create_table_branch({"id": plain, "name": "dev"})
        await ns.delete_from_table({"id": plain, "branch": "dev", "predicate": "id < 2"})
        assert (await ns.count_table_rows({"id": plain, "branch": "dev"})).count == 3
        assert (await ns.count_table_rows({"id": plain})).count == 5


async def test_explain_takes_the_branch_of_its_query_too(tmp_path: Path) -> None:
    """ExplainTableQueryPlan reads the branch its query names when the request names
    none, a missing one is TableBranchNotFound, and two different ones are InvalidInput."""
    data = tmp_path / "root"
    data.mkdir()
    with iceberg_catalog(tmp_path / "iceberg") as catalog:
        properties = {"endpoint": catalog.uri, "root": str(data), "retry_backoff_ms": "1"}
        async with lna.connect("iceberg", properties) as ns:
            await ns.create_namespace({"id": ["wh", "b"]})
            table = ["wh", "b", "t"]
            await ns.create_table({"id": table}, rows(10))
            query = {"id": table, "k": 5, "vector": {}, "branch": "nope"}
            with pytest.raises(errors.TableBranchNotFoundError):
                await ns.explain_table_query_plan({"id": table, "query": query})
            await ns.create_table_branch({"id": table, "name": "dev"})
            with pytest.raises(errors.InvalidInputError):
                await ns.explain_table_query_plan({"id": table, "branch": "dev", "query": query})
            query["branch"] = "dev"
            plan = await ns.explain_table_query_plan({"id": table, "query": query})
            assert "/tree/dev/data" in plan.plan, plan.plan  # the branch's files are read
