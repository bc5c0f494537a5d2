"""Our REST adapter in front of each catalog backend, driven by pylance's Rust client.

Servers: the Iceberg project's REST reference server (conftest ``iceberg_reference``), the
Unity Catalog look-alike (tests/unity_server.py, or the real server of
``LANCE_NS_UNITY_URI``), moto's Glue server (tests/glue_fixtures.py) and real Hive
Metastores 2.3 and 4 (conftest ``hive_metastores``), each behind ``create_app`` served by
uvicorn in a thread (tests/uvicorn_thread.py); everything on 127.0.0.1, started and
stopped by module fixtures (test_kit.py's ``running``). Tables live in a temporary
storage root.

The client is pylance's own ``lance.namespace.RestNamespace`` (Rust), the independent
peer: every data, version, tag, index and schema operation goes through it as Lance
REST (Arrow IPC both ways), and what it did is read back with pylance from storage.
Bad input (an unknown column, rows of another schema, a catalog table that is not a
Lance table) comes back as the peer's typed errors, with the catalog's listing and every
byte on storage as they were.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from glue_fixtures import glue_client
from hive_metastore import Metastore
from iceberg_real_server import ReferenceIcebergServer, unique_name
from lance_namespace_urllib3_client.models import (
    AddColumnsEntry,
    QueryTableRequestColumns,
    QueryTableRequestVector,
)
from test_hive import plant_table
from test_kit import running
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from lance_namespace_async._storage.places import local_path
from lance_namespace_async.server import create_app
from lance_namespace_async.testing import KitSettings

BACKENDS = ["iceberg", "unity", "glue-moto", "hive-2.3", "hive-4"]


@dataclass
class Served:
    """A catalog backend behind our adapter, and pylance's client of it."""

    name: str
    settings: KitSettings
    peer: Any
    data: Path
    iceberg: ReferenceIcebergServer | None
    metastore: Metastore | None

    def namespace(self, stem: str) -> list[str]:
        """A new namespace of a unique name, created through the peer."""
        namespace = [*self.settings.root, unique_name(stem)]
        self.peer.create_namespace(ln.CreateNamespaceRequest(id=namespace))
        return namespace

    def plant_foreign_table(self, namespace: list[str], name: str) -> None:
        """A table that is not a Lance table, made by the catalog's own client."""
        elsewhere = str(self.data.parent / "foreign" / name)
        os.makedirs(elsewhere, exist_ok=True)
        if self.settings.impl == "iceberg":
            assert self.iceberg is not None
            schema = pa.schema([pa.field("v", pa.int64())])
            self.iceberg.rest_client().create_table((*namespace[1:], name), schema=schema)
        elif self.settings.impl == "glue":
            glue_client(self.settings.properties["endpoint"]).create_table(
                DatabaseName=namespace[-1],
                TableInput={
                    "Name": name,
                    "TableType": "EXTERNAL_TABLE",
                    "Parameters": {"classification": "csv"},
                    "StorageDescriptor": {"Location": elsewhere},
                },
            )
        elif self.settings.impl == "hive":
            assert self.metastore is not None
            plant_table(self.metastore, namespace[-1], name, location=elsewhere)
        else:  # Unity's own REST API
            body = {
                "catalog_name": namespace[0],
                "schema_name": namespace[1],
                "name": name,
                "table_type": "EXTERNAL",
                "data_source_format": "DELTA",
                "storage_location": elsewhere,
                "columns": [],
            }
            request = urllib.request.Request(
                self.settings.properties["endpoint"] + "/api/2.1/unity-catalog/tables",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=30) as answer:
                answer.read()


@pytest.fixture(scope="module", params=BACKENDS)
def served(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[Served]:
    from lance.namespace import RestNamespace

    name = str(request.param)
    iceberg = request.getfixturevalue("iceberg_reference") if name == "iceberg" else None
    metastore = hive_metastores(name.removeprefix("hive-")) if name.startswith("hive-") else None
    place = tmp_path_factory.mktemp(f"peers-{name}")
    with running(name, place, hive_metastores, iceberg) as settings:
        backend = lna.connect(settings.impl, settings.properties)  # ours to close
        server = UvicornThread(
            create_app(backend),
            name=f"peers-{name}",
            description=f"our REST adapter over {name}",
        )
        uri = server.start()
        try:
            peer = RestNamespace(uri=uri)
            yield Served(name, settings, peer, place / "lance-root", iceberg, metastore)
        finally:
            server.stop()
            anyio.run(backend.aclose)


def rows(count: int, start: int = 0) -> pa.Table:
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "vec": pa.array([[float(i), 0.0] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )


def ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def answer_rows(response: Any) -> pa.Table:
    """The rows of a QueryTable answer (an Arrow IPC file)."""
    return pa.ipc.open_file(pa.BufferReader(response.data)).read_all()


def files_under(root: Path) -> dict[str, int]:
    """Every file below ``root`` with its size: storage's state, compared whole."""
    found: dict[str, int] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = os.path.getsize(path)
    return found


def test_pylance_runs_every_table_operation_through_the_adapter(served: Served) -> None:
    peer = served.peer
    namespace = served.namespace("ops")
    table = [*namespace, "points"]

    created = peer.create_table(ln.CreateTableRequest(id=table), ipc(rows(300)))
    location = created.location
    assert lance.dataset(location).count_rows() == 300
    inserted = peer.insert_into_table(ln.InsertIntoTableRequest(id=table), ipc(rows(20, 300)))
    assert inserted.version == 2
    assert peer.count_table_rows(ln.CountTableRowsRequest(id=table)).count == 320
    counted = peer.count_table_rows(ln.CountTableRowsRequest(id=table, predicate="id >= 310"))
    assert counted.count == 10
    assert peer.list_tables(ln.ListTablesRequest(id=namespace)).tables == ["points"]

    selected = peer.query_table(
        ln.QueryTableRequest(
            id=table,
            k=50,
            vector=QueryTableRequestVector(),
            filter="id BETWEEN 5 AND 7",
            columns=QueryTableRequestColumns(column_names=["id"]),
        )
    )
    assert sorted(answer_rows(selected).column("id").to_pylist()) == [5, 6, 7]
    nearest = peer.query_table(
        ln.QueryTableRequest(
            id=table, k=3, vector=QueryTableRequestVector(single_vector=[42.2, 0.0])
        )
    )
    assert answer_rows(nearest).column("id").to_pylist() == [42, 43, 41]
    # pylance reads the table through the adapter too
    assert lance.dataset(namespace_client=peer, table_id=table).count_rows() == 320

    versions = peer.list_table_versions(ln.ListTableVersionsRequest(id=table)).versions
    assert sorted(v.version for v in versions) == [1, 2]
    peer.create_table_tag(ln.CreateTableTagRequest(id=table, tag="first", version=1))
    assert peer.list_table_tags(ln.ListTableTagsRequest(id=table)).tags["first"].version == 1
    tagged = peer.get_table_tag_version(ln.GetTableTagVersionRequest(id=table, tag="first"))
    assert tagged.version == 1
    peer.restore_table(ln.RestoreTableRequest(id=table, version=1))
    assert peer.count_table_rows(ln.CountTableRowsRequest(id=table)).count == 300
    assert lance.dataset(location).version == 3  # restore commits version 3
    assert lance.dataset(location).tags.list()["first"]["version"] == 1

    peer.create_table_scalar_index(
        ln.CreateTableIndexRequest(id=table, column="id", index_type="BTREE", name="by_id")
    )
    peer.create_table_index(
        ln.CreateTableIndexRequest(
            id=table,
            column="vec",
            index_type="IVF_FLAT",
            name="by_vec",
            num_partitions=2,
            distance_type="l2",
        )
    )
    indices = peer.list_table_indices(ln.ListTableIndicesRequest(id=table)).indexes
    assert sorted(i.index_name for i in indices) == ["by_id", "by_vec"]
    stats = peer.describe_table_index_stats(
        ln.DescribeTableIndexStatsRequest(id=table, index_name="by_vec")
    )
    assert stats.num_indexed_rows == 300
    assert sorted(i.name for i in lance.dataset(location).describe_indices()) == [
        "by_id",
        "by_vec",
    ]

    peer.alter_table_add_columns(
        ln.AlterTableAddColumnsRequest(
            id=table, new_columns=[AddColumnsEntry(name="twice", expression="id * 2")]
        )
    )
    stored = lance.dataset(location)
    assert stored.schema.names == ["id", "vec", "twice"]
    assert stored.to_table(columns=["twice"], filter="id = 21").column(0).to_pylist() == [42]
    peer.alter_table_drop_columns(ln.AlterTableDropColumnsRequest(id=table, columns=["twice"]))
    assert lance.dataset(location).schema.names == ["id", "vec"]

    described = peer.describe_table(ln.DescribeTableRequest(id=table))
    assert described.location == location
    peer.drop_table(ln.DropTableRequest(id=table))
    assert not os.path.exists(local_path(location) or location)
    assert peer.list_tables(ln.ListTablesRequest(id=namespace)).tables == []


def test_bad_input_through_the_adapter_changes_nothing(served: Served) -> None:
    peer = served.peer
    namespace = served.namespace("bad")
    table = [*namespace, "t"]
    peer.create_table(ln.CreateTableRequest(id=table), ipc(rows(5)))
    served.plant_foreign_table(namespace, "foreign")
    foreign = [*namespace, "foreign"]

    def catalog_state() -> tuple[list[str], int]:
        listed = sorted(peer.list_tables(ln.ListTablesRequest(id=namespace)).tables)
        described = peer.describe_table(
            ln.DescribeTableRequest(id=table, load_detailed_metadata=True)
        )
        return listed, described.version

    catalog_before = catalog_state()
    assert catalog_before == (["t"], 1)  # the foreign table is not listed as a Lance table
    stored_before = files_under(served.data.parent)

    unknown_column: list[Callable[[], Any]] = [
        lambda: peer.count_table_rows(ln.CountTableRowsRequest(id=table, predicate="nope > 1")),
        lambda: peer.query_table(
            ln.QueryTableRequest(id=table, k=5, vector=QueryTableRequestVector(), filter="nope = 1")
        ),
        lambda: peer.delete_from_table(ln.DeleteFromTableRequest(id=table, predicate="nope = 1")),
    ]
    for call in unknown_column:
        with pytest.raises(ln.InvalidInputError):
            call()
    with pytest.raises(ln.TableColumnNotFoundError):
        peer.create_table_scalar_index(
            ln.CreateTableIndexRequest(id=table, column="nope", index_type="BTREE")
        )
    for other_schema in (pa.table({"other": [1]}), pa.table({"id": ["x"], "vec": [[1.0, 2.0]]})):
        with pytest.raises(ln.TableSchemaValidationError):
            peer.insert_into_table(ln.InsertIntoTableRequest(id=table), ipc(other_schema))

    not_lance: list[Callable[[], Any]] = [
        lambda: peer.insert_into_table(ln.InsertIntoTableRequest(id=foreign), ipc(rows(1))),
        lambda: peer.count_table_rows(ln.CountTableRowsRequest(id=foreign)),
        lambda: peer.query_table(
            ln.QueryTableRequest(id=foreign, k=1, vector=QueryTableRequestVector())
        ),
        lambda: peer.create_table_tag(ln.CreateTableTagRequest(id=foreign, tag="x", version=1)),
        lambda: peer.drop_table(ln.DropTableRequest(id=foreign)),
    ]
    for call in not_lance:
        with pytest.raises(ln.InvalidInputError):
            call()

    assert files_under(served.data.parent) == stored_before
    assert catalog_state() == catalog_before


def test_pylance_changes_rows_and_metadata_through_the_adapter(served: Served) -> None:
    """The row-changing and metadata operations, by the same peer: update, delete, merge
    insert, stats, a query plan, tag moves, index drops, renamed columns, schema metadata."""
    peer = served.peer
    table = [*served.namespace("rows"), "t"]
    location = peer.create_table(ln.CreateTableRequest(id=table), ipc(rows(10))).location

    peer.update_table(
        ln.UpdateTableRequest(id=table, updates=[["id", "id + 100"]], predicate="id < 2")
    )
    peer.delete_from_table(ln.DeleteFromTableRequest(id=table, predicate="id >= 8 AND id < 100"))
    peer.merge_insert_into_table(
        ln.MergeInsertIntoTableRequest(
            id=table, on=["id"], when_matched_update_all=True, when_not_matched_insert_all=True
        ),
        ipc(rows(3, 7)),  # 7 is updated, 8 and 9 come back
    )
    ids = sorted(lance.dataset(location).to_table(columns=["id"]).column("id").to_pylist())
    assert ids == [2, 3, 4, 5, 6, 7, 8, 9, 100, 101]
    stats = peer.get_table_stats(ln.GetTableStatsRequest(id=table))
    assert stats.num_rows == 10
    query = ln.QueryTableRequest(id=table, k=5, vector=QueryTableRequestVector(), filter="id > 50")
    plan = peer.explain_table_query_plan(ln.ExplainTableQueryPlanRequest(id=table, query=query))
    assert "id > Int64(50)" in plan

    newest = lance.dataset(location).version
    peer.create_table_tag(ln.CreateTableTagRequest(id=table, tag="v", version=1))
    peer.update_table_tag(ln.UpdateTableTagRequest(id=table, tag="v", version=newest))
    assert lance.dataset(location).tags.list()["v"]["version"] == newest
    peer.delete_table_tag(ln.DeleteTableTagRequest(id=table, tag="v"))
    assert lance.dataset(location).tags.list() == {}

    peer.create_table_scalar_index(
        ln.CreateTableIndexRequest(id=table, column="id", index_type="BTREE", name="by_id")
    )
    peer.drop_table_index(ln.DropTableIndexRequest(id=table, index_name="by_id"))
    assert lance.dataset(location).describe_indices() == []
    with pytest.raises(ln.TableIndexNotFoundError):
        peer.drop_table_index(ln.DropTableIndexRequest(id=table, index_name="by_id"))

    peer.alter_table_alter_columns(
        ln.AlterTableAlterColumnsRequest(id=table, alterations=[{"path": "id", "rename": "key"}])
    )
    peer.update_table_schema_metadata(
        ln.UpdateTableSchemaMetadataRequest(id=table, metadata={"owner": "peers"})
    )
    schema = lance.dataset(location).schema
    assert schema.names == ["key", "vec"]
    assert schema.metadata == {b"owner": b"peers"}
    peer.drop_table(ln.DropTableRequest(id=table))
