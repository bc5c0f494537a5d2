"""pylance's RestNamespace gets from ``lance-ns serve`` over each catalog every operation
it gets from pylance's own RestAdapter over a directory.

Servers: pylance's Rust ``RestAdapter`` over its DirectoryNamespace (the reference), and
``lance-ns serve`` as a real process (tests/serve_process.py) over ``dir``, ``iceberg``
on the Iceberg project's REST reference server (conftest ``iceberg_reference``),
``glue`` on moto's server, ``hive`` on a real Hive Metastore 4 (conftest
``hive_metastores``) and ``unity`` on the Unity look-alike: the backends as test_kit.py's
``running`` starts them, tables in a temporary storage root.

The same client (pylance's ``lance.namespace.RestNamespace``) runs the same sequence of
every operation of the spec against each, each step building on the ones before (a
table is created, written, tagged, indexed, altered, versioned, then dropped); a step
that raises is recorded and the sequence goes on. What succeeds against pylance's own
server must succeed against ours, over every catalog.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from hive_metastore import Metastore
from iceberg_real_server import unique_name
from lance.namespace import RestAdapter, RestNamespace
from lance_namespace_urllib3_client.models import (
    AddColumnsEntry,
    QueryTableRequestColumns,
    QueryTableRequestVector,
)
from serve_process import lance_ns_serve
from test_kit import running

import lance_namespace_async as lna
from lance_namespace_async._storage.places import local_path

#: what ``lance-ns serve`` runs over (test_kit.py's ``running`` names)
OURS = ["dir", "iceberg", "glue-moto", "hive-4", "unity"]


def rows(count: int, start: int = 0) -> bytes:
    ids = range(start, start + count)
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "vec": pa.array([[float(i), 0.0] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def staged(location: str) -> tuple[int, str]:
    """Write the table's next version with pylance and un-record it, as a writer with
    managed versioning stages it: (its number, its manifest's path relative to the table)."""
    path = local_path(location) or location
    lance.write_dataset(pa.ipc.open_stream(rows(2, 1000)).read_all(), path, mode="append")
    version = int(lance.dataset(path).version)
    versions = os.path.join(path, "_versions")
    for name in os.listdir(versions):
        number = name.removesuffix(".manifest")
        if number.isdigit() and version in (int(number), 2**64 - 1 - int(number)):
            relative = f"_versions/{version}.manifest-{secrets.token_hex(4)}"
            os.rename(os.path.join(versions, name), os.path.join(path, relative))
            return version, relative
    raise AssertionError(f"no manifest of version {version} at {location}")


class Run:
    """One pass of the sequence against one server: which operations answered."""

    def __init__(self, peer: Any, root: tuple[str, ...], storage: Path) -> None:
        self.peer = peer
        #: the server's storage root on this machine
        self.root = str(storage)
        self.namespace = [*root, unique_name("parity")]
        self.table = [*self.namespace, "t"]
        self.answered: set[str] = set()
        self.failed: dict[str, str] = {}
        self.location = ""
        self.transaction = "2"

    def step(self, operation: str, call: Callable[[], Any]) -> Any:
        try:
            result = call()
        except Exception as exc:  # recorded: the comparison says what it means
            self.failed.setdefault(operation, f"{type(exc).__name__}: {exc}"[:300])
            return None
        self.answered.add(operation)
        return result


def sequence(run: Run) -> None:
    """Every operation of the spec, in an order where each has what it needs."""
    p, ns, t = run.peer, run.namespace, run.table
    s = run.step
    s("create_namespace", lambda: p.create_namespace(ln.CreateNamespaceRequest(id=ns)))
    s("describe_namespace", lambda: p.describe_namespace(ln.DescribeNamespaceRequest(id=ns)))
    s("namespace_exists", lambda: p.namespace_exists(ln.NamespaceExistsRequest(id=ns)))
    s("list_namespaces", lambda: p.list_namespaces(ln.ListNamespacesRequest(id=ns[:-1])))
    created = s("create_table", lambda: p.create_table(ln.CreateTableRequest(id=t), rows(300)))
    run.location = getattr(created, "location", "") or ""
    declared = [*ns, "declared"]
    s("declare_table", lambda: p.declare_table(ln.DeclareTableRequest(id=declared)))
    s("list_tables", lambda: p.list_tables(ln.ListTablesRequest(id=ns)))
    s("list_all_tables", lambda: p.list_all_tables(ln.ListTablesRequest()))
    s("table_exists", lambda: p.table_exists(ln.TableExistsRequest(id=t)))
    s("describe_table", lambda: p.describe_table(ln.DescribeTableRequest(id=t)))
    insert = ln.InsertIntoTableRequest(id=t)
    s("insert_into_table", lambda: p.insert_into_table(insert, rows(20, 300)))
    s("count_table_rows", lambda: p.count_table_rows(ln.CountTableRowsRequest(id=t)))
    query = ln.QueryTableRequest(
        id=t,
        k=5,
        vector=QueryTableRequestVector(),
        filter="id > 250",
        columns=QueryTableRequestColumns(column_names=["id"]),
    )
    s("query_table", lambda: p.query_table(query))
    explain = ln.ExplainTableQueryPlanRequest(id=t, query=query)
    s("explain_table_query_plan", lambda: p.explain_table_query_plan(explain))
    analyze = ln.AnalyzeTableQueryPlanRequest(id=t, k=5, vector=QueryTableRequestVector())
    s("analyze_table_query_plan", lambda: p.analyze_table_query_plan(analyze))
    s("get_table_stats", lambda: p.get_table_stats(ln.GetTableStatsRequest(id=t)))
    merge = ln.MergeInsertIntoTableRequest(
        id=t, on=["id"], when_matched_update_all=True, when_not_matched_insert_all=True
    )
    s("merge_insert_into_table", lambda: p.merge_insert_into_table(merge, rows(3, 318)))
    update = ln.UpdateTableRequest(id=t, updates=[["id", "id + 1000"]], predicate="id < 2")
    s("update_table", lambda: p.update_table(update))
    delete = ln.DeleteFromTableRequest(id=t, predicate="id = 5")
    s("delete_from_table", lambda: p.delete_from_table(delete))

    versions = ln.ListTableVersionsRequest(id=t)
    s("list_table_versions", lambda: p.list_table_versions(versions))
    # pylance's client takes these three requests as dicts
    version = {"id": t, "version": 1}
    s("describe_table_version", lambda: p.describe_table_version(version))
    tag = ln.CreateTableTagRequest(id=t, tag="first", version=1)
    s("create_table_tag", lambda: p.create_table_tag(tag))
    s("list_table_tags", lambda: p.list_table_tags(ln.ListTableTagsRequest(id=t)))
    get_tag = ln.GetTableTagVersionRequest(id=t, tag="first")
    s("get_table_tag_version", lambda: p.get_table_tag_version(get_tag))
    move = ln.UpdateTableTagRequest(id=t, tag="first", version=2)
    s("update_table_tag", lambda: p.update_table_tag(move))
    drop_tag = ln.DeleteTableTagRequest(id=t, tag="first")
    s("delete_table_tag", lambda: p.delete_table_tag(drop_tag))
    branch = ln.CreateTableBranchRequest(id=t, name="dev")
    s("create_table_branch", lambda: p.create_table_branch(branch))
    branches = ln.ListTableBranchesRequest(id=t)
    s("list_table_branches", lambda: p.list_table_branches(branches))
    drop_branch = ln.DeleteTableBranchRequest(id=t, name="dev")
    s("delete_table_branch", lambda: p.delete_table_branch(drop_branch))

    scalar = ln.CreateTableIndexRequest(id=t, column="id", index_type="BTREE", name="by_id")
    s("create_table_scalar_index", lambda: p.create_table_scalar_index(scalar))
    vector = ln.CreateTableIndexRequest(
        id=t, column="vec", index_type="IVF_FLAT", name="by_vec", num_partitions=2
    )
    s("create_table_index", lambda: p.create_table_index(vector))
    s("list_table_indices", lambda: p.list_table_indices(ln.ListTableIndicesRequest(id=t)))
    stats = ln.DescribeTableIndexStatsRequest(id=t, index_name="by_vec")
    s("describe_table_index_stats", lambda: p.describe_table_index_stats(stats))
    drop_index = ln.DropTableIndexRequest(id=t, index_name="by_id")
    s("drop_table_index", lambda: p.drop_table_index(drop_index))

    add = ln.AlterTableAddColumnsRequest(
        id=t, new_columns=[AddColumnsEntry(name="twice", expression="id * 2")]
    )
    s("alter_table_add_columns", lambda: p.alter_table_add_columns(add))
    rename = ln.AlterTableAlterColumnsRequest(
        id=t, alterations=[{"path": "twice", "rename": "double"}]
    )
    s("alter_table_alter_columns", lambda: p.alter_table_alter_columns(rename))
    drop = ln.AlterTableDropColumnsRequest(id=t, columns=["double"])
    s("alter_table_drop_columns", lambda: p.alter_table_drop_columns(drop))
    metadata = ln.UpdateTableSchemaMetadataRequest(id=t, metadata={"owner": "parity"})
    answered = s("update_table_schema_metadata", lambda: p.update_table_schema_metadata(metadata))
    given = getattr(answered, "transaction_id", None)
    transaction = [*t, given if isinstance(given, str) and given else "2"]
    field = ln.UpdateFieldMetadataRequest(id=t, updates=[{"path": "id", "metadata": {"u": "n"}}])
    s("update_field_metadata", lambda: p.update_field_metadata(field))
    describe_txn = ln.DescribeTransactionRequest(id=transaction)
    s("describe_transaction", lambda: p.describe_transaction(describe_txn))
    alter_txn = ln.AlterTransactionRequest(
        id=transaction, actions=[{"setPropertyAction": {"key": "k", "value": "v"}}]
    )
    s("alter_transaction", lambda: p.alter_transaction(alter_txn))

    _versions(run)
    s("restore_table", lambda: p.restore_table(ln.RestoreTableRequest(id=t, version=1)))

    moved = [*ns, "moved"]
    s("create_table", lambda: p.create_table(ln.CreateTableRequest(id=moved), rows(3)))
    rename_table = ln.RenameTableRequest(id=moved, new_table_name="renamed")
    if s("rename_table", lambda: p.rename_table(rename_table)) is not None:
        moved = [*ns, "renamed"]
    deregistered = s(
        "deregister_table", lambda: p.deregister_table(ln.DeregisterTableRequest(id=moved))
    )
    where = getattr(deregistered, "location", None) or ""
    # as answered, else relative to the storage root (pylance's dir takes only those)
    for location in (where, os.path.relpath(local_path(where) or where, run.root)):
        register = ln.RegisterTableRequest(id=[*ns, "again"], location=location)
        if s("register_table", lambda register=register: p.register_table(register)):
            break
    for name in ("again", "declared", "t"):
        drop_table = ln.DropTableRequest(id=[*ns, name])
        s("drop_table", lambda drop_table=drop_table: p.drop_table(drop_table))
    s("drop_namespace", lambda: p.drop_namespace(ln.DropNamespaceRequest(id=ns)))


def _versions(run: Run) -> None:
    """The version records and the batches, on versions staged as a writer stages them."""
    p, t, s = run.peer, run.table, run.step
    if not run.location:
        return
    version, relative = staged(run.location)
    spelled = os.path.join(local_path(run.location) or "", relative).lstrip("/")
    record = {"id": t, "version": version, "manifest_path": spelled}
    s("create_table_version", lambda: p.create_table_version(record))
    version, relative = staged(run.location)
    batch = ln.BatchCreateTableVersionsRequest(
        entries=[{"id": t, "version": version, "manifest_path": relative}]
    )
    s("batch_create_table_versions", lambda: p.batch_create_table_versions(batch))
    version, relative = staged(run.location)
    commit = ln.BatchCommitTablesRequest(
        operations=[
            {"create_table_version": {"id": t, "version": version, "manifest_path": relative}}
        ]
    )
    s("batch_commit_tables", lambda: p.batch_commit_tables(commit))
    delete = {"id": t, "ranges": [{"start_version": 2, "end_version": 3}]}
    s("batch_delete_table_versions", lambda: p.batch_delete_table_versions(delete))


@contextlib.contextmanager
def pylance_server(root: Path) -> Iterator[str]:
    adapter = RestAdapter("dir", {"root": str(root)}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        yield f"http://127.0.0.1:{adapter.port}"
    finally:
        adapter.stop()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The sequence against pylance's own RestAdapter over a directory."""
    root = tmp_path_factory.mktemp("parity-pylance")
    with pylance_server(root) as uri:
        run = Run(RestNamespace(uri=uri), (), root)
        sequence(run)
    return run


def test_the_reference_runs_most_operations(reference: Run) -> None:
    """A guard on the comparison: pylance's own server answers the bulk of the sequence
    (pylance 14.0.2: 47 of the 51 it is asked; not UpdateFieldMetadata, which its client
    lacks, nor the two version batches or RenameTable), so "everything it does" is no
    empty claim."""
    assert len(reference.answered) >= 47, reference.failed
    assert {"create_table", "create_table_tag", "create_table_index"} <= reference.answered


@pytest.mark.parametrize("name", OURS)
def test_lance_ns_serve_answers_what_pylances_server_answers(
    name: str,
    reference: Run,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> None:
    iceberg = request.getfixturevalue("iceberg_reference") if name == "iceberg" else None
    place = tmp_path_factory.mktemp(f"parity-{name}")
    with (
        running(name, place, hive_metastores, iceberg) as settings,
        lance_ns_serve(dict(settings.properties), impl=settings.impl) as served,
    ):
        storage = Path(settings.properties["root"])
        run = Run(RestNamespace(uri=served.uri), settings.root, storage)
        sequence(run)
    missing = {
        operation: run.failed.get(operation, "never answered")
        for operation in sorted(reference.answered - run.answered)
    }
    assert not missing, f"pylance's server over dir answers these, ours over {name} not"
    # the comparison covers every operation the spec has
    assert {op.method for op in lna.OPERATIONS} >= reference.answered | run.answered
