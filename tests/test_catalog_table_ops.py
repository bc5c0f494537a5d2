"""Table operations on the catalog backends, run on storage through pylance.

Servers: the Iceberg project's REST reference server (conftest ``iceberg_reference``)
and the Iceberg REST look-alike (tests/iceberg_rest_server.py, pyiceberg's SqlCatalog
on sqlite), the Unity Catalog look-alike (tests/unity_server.py, or the
real server of LANCE_NS_UNITY_URI), moto's Glue server (tests/glue_fixtures.py) and
a real Hive Metastore 4 (conftest ``hive_metastores``); every one on 127.0.0.1,
started and stopped by the fixtures of test_kit.py's ``running``. Tables are real
Lance tables in a temporary storage root, checked with pylance.

Each backend runs the same life of a table: CreateTable with rows, insert, count,
query with a filter and by k-nearest neighbours, tags, versions and restore, an
index, added and dropped columns, drop; then bad input (an unknown column in a
filter, rows of another schema, a location without a Lance table), each answered
with its typed error and nothing changed in the catalog or on storage.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from hive_metastore import Metastore
from iceberg_rest_server import iceberg_catalog
from test_kit import running_param
from unity_server import unity_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._storage.places import local_path, place_of
from lance_namespace_async.testing import KitSettings

BACKENDS = ["iceberg", "iceberg-lookalike", "unity", "glue-moto", "hive-4"]


@pytest.fixture(scope="module", params=BACKENDS)
def settings(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[KitSettings]:
    with running_param(request, tmp_path_factory, hive_metastores, "ops") as found:
        yield found


def rows(count: int, start: int = 0) -> pa.Table:
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "vec": pa.array([[float(i), 0.0] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )


def local(location: str) -> str:
    """A local table location (a path, or a ``file://`` URI as Unity and Hive report
    them) as a path, for the checks of the filesystem."""
    path = local_path(location)
    assert path is not None, location
    return path


def files_under(location: str) -> dict[str, int]:
    """Every file below ``location`` with its size: storage's state, compared whole."""
    found: dict[str, int] = {}
    for folder, _, names in os.walk(location):
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, location)] = os.path.getsize(path)
    return found


async def stored_columns(ns: Any, settings: KitSettings, table: list[str]) -> list[str] | None:
    """The columns the catalog stores for ``table`` (Hive's ``sd.cols``, Glue's
    ``StorageDescriptor.Columns``); None for catalogs that keep none current."""
    if settings.impl == "hive":
        stored = await ns._get_lance_table(table[-2], table[-1], "read the columns")
        return [column.name for column in stored.sd.cols]
    if settings.impl == "glue":
        database, name = await ns._table_ref({"id": table})
        stored = await ns._get_lance_table(database, name, "read the columns")
        return [column["Name"] for column in stored["StorageDescriptor"].get("Columns", [])]
    return None


async def fresh_namespace(ns: Any, settings: KitSettings, name: str) -> list[str]:
    namespace = [*settings.root, name]
    await ns.create_namespace({"id": namespace})
    return namespace


async def test_a_table_lives_its_whole_life_through_the_catalog(
    settings: KitSettings,
) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        namespace = await fresh_namespace(ns, settings, "life")
        table = [*namespace, "points"]
        created = await ns.create_table({"id": table}, rows(8))
        location = local(created.location)
        assert created.version == 1
        assert await stored_columns(ns, settings, table) in (None, ["id", "vec"])
        assert lance.dataset(location).count_rows() == 8
        assert (await ns.list_tables({"id": namespace})).tables == ["points"]

        inserted = await ns.insert_into_table({"id": table}, rows(2, 8))
        assert (inserted.num_inserted_rows, inserted.version) == (2, 2)
        assert (await ns.count_table_rows({"id": table})).count == 10
        assert (await ns.count_table_rows({"id": table, "predicate": "id >= 7"})).count == 3

        selected = await ns.query_table(
            {
                "id": table,
                "k": 10,
                "vector": None,
                "filter": "id < 3",
                "columns": {"column_names": ["id"]},
            }
        )
        assert selected.column_names == ["id"]
        assert sorted(selected.column("id").to_pylist()) == [0, 1, 2]
        nearest = await ns.query_table(
            {"id": table, "k": 3, "vector": {"single_vector": [4.2, 0.0]}, "vector_column": "vec"}
        )
        assert nearest.column("id").to_pylist() == [4, 5, 3]

        await ns.create_table_tag({"id": table, "tag": "first", "version": 1})
        assert (await ns.get_table_tag_version({"id": table, "tag": "first"})).version == 1
        assert list((await ns.list_table_tags({"id": table})).tags.to_dict()) == ["first"]
        versions = (await ns.list_table_versions({"id": table})).versions
        assert [v.version for v in versions] == [1, 2]
        await ns.restore_table({"id": table, "version": 1})
        assert (await ns.count_table_rows({"id": table})).count == 8
        assert lance.dataset(location).version == 3  # restore commits version 3

        await ns.create_table_scalar_index(
            {"id": table, "column": "id", "index_type": "BTREE", "name": "by_id"}
        )
        listed = (await ns.list_table_indices({"id": table})).indexes
        assert [(i.index_name, i.columns) for i in listed] == [("by_id", ["id"])]
        stats = await ns.describe_table_index_stats({"id": table, "index_name": "by_id"})
        assert stats.num_indexed_rows == 8

        await ns.alter_table_add_columns(
            {"id": table, "new_columns": [{"name": "twice", "expression": "id * 2"}]}
        )
        assert lance.dataset(location).to_table(columns=["twice"]).column(0).to_pylist()[:3] == [
            0,
            2,
            4,
        ]
        assert await stored_columns(ns, settings, table) in (None, ["id", "vec", "twice"])
        await ns.alter_table_drop_columns({"id": table, "columns": ["twice"]})
        assert lance.dataset(location).schema.names == ["id", "vec"]
        assert await stored_columns(ns, settings, table) in (None, ["id", "vec"])

        await ns.drop_table({"id": table})
        assert not os.path.exists(location)
        assert (await ns.list_tables({"id": namespace})).tables == []


async def test_bad_input_is_refused_and_changes_nothing(
    settings: KitSettings, tmp_path: Path
) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        namespace = await fresh_namespace(ns, settings, "bad")
        table = [*namespace, "t"]
        location = local((await ns.create_table({"id": table}, rows(3))).location)
        before = files_under(location)

        with pytest.raises(errors.InvalidInputError):
            await ns.count_table_rows({"id": table, "predicate": "nope > 1"})
        with pytest.raises(errors.InvalidInputError):
            await ns.query_table({"id": table, "k": 5, "vector": None, "filter": "nope = 1"})
        with pytest.raises(errors.InvalidInputError):
            await ns.delete_from_table({"id": table, "predicate": "nope = 1"})
        with pytest.raises(errors.TableSchemaValidationError):
            await ns.insert_into_table({"id": table}, pa.table({"other": [1]}))
        with pytest.raises(errors.TableTagNotFoundError):
            await ns.get_table_tag_version({"id": table, "tag": "never"})
        with pytest.raises(errors.TableVersionNotFoundError):
            await ns.restore_table({"id": table, "version": 99})
        with pytest.raises(errors.TableIndexNotFoundError):
            await ns.describe_table_index_stats({"id": table, "index_name": "never"})
        assert files_under(location) == before

        # a catalog entry whose location no longer holds a Lance table (its versions and
        # data removed behind the catalog's back; Iceberg keeps its own metadata there)
        other = [*namespace, "gone"]
        place = str(tmp_path / "gone")
        lance.write_dataset(rows(1), place)
        await ns.register_table({"id": other, "location": place})
        for lance_part in ("_versions", "data", "_transactions"):
            shutil.rmtree(os.path.join(place, lance_part), ignore_errors=True)
        Path(place, "notes.txt").write_text("not a table")
        left = files_under(place)
        with pytest.raises(errors.InvalidInputError, match="no Lance table"):
            await ns.insert_into_table({"id": other}, rows(1))
        with pytest.raises(errors.InvalidInputError, match="no Lance table"):
            await ns.count_table_rows({"id": other})
        assert files_under(place) == left
        assert sorted((await ns.list_tables({"id": namespace})).tables) == ["gone", "t"]


async def test_create_table_modes_and_failures_leave_nothing_behind(
    settings: KitSettings,
) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        namespace = await fresh_namespace(ns, settings, "modes")
        table = [*namespace, "t"]
        location = local((await ns.create_table({"id": table}, rows(3))).location)

        with pytest.raises(errors.TableAlreadyExistsError):
            await ns.create_table({"id": table}, rows(9))
        kept = await ns.create_table({"id": table, "mode": "ExistOk"}, rows(9))
        assert place_of(kept.location) == place_of(location)
        assert lance.dataset(location).count_rows() == 3
        replaced = await ns.create_table({"id": table, "mode": "Overwrite"}, rows(5))
        assert (place_of(replaced.location), replaced.version) == (place_of(location), 2)
        assert lance.dataset(location).count_rows() == 5

        # rows pylance refuses to write: nothing in the catalog, nothing on storage
        bad = pa.table({"a": [1], "b": [2]}).rename_columns(["a", "a"])
        with pytest.raises(errors.InvalidInputError):
            await ns.create_table({"id": [*namespace, "broken"]}, bad)
        assert sorted((await ns.list_tables({"id": namespace})).tables) == ["t"]
        assert not os.path.exists(os.path.join(os.path.dirname(location), "broken"))

        # files of someone else where the table would go: refused, kept, not registered
        occupied = os.path.join(os.path.dirname(location), "occupied")
        os.makedirs(occupied)
        Path(occupied, "theirs.csv").write_text("a,b\n")
        with pytest.raises(errors.InvalidInputError, match="not empty"):
            await ns.create_table({"id": [*namespace, "occupied"]}, rows(2))
        assert files_under(occupied) == {"theirs.csv": 4}
        assert sorted((await ns.list_tables({"id": namespace})).tables) == ["t"]

        # a declared table (in the catalog, no data): CreateTable fills the declaration
        # and InsertIntoTable writes its first version, as on the directory backend
        declared = await ns.declare_table({"id": [*namespace, "reserved"]})
        filled = await ns.create_table({"id": [*namespace, "reserved"]}, rows(2))
        assert (place_of(filled.location), filled.version) == (place_of(declared.location), 1)
        assert lance.dataset(filled.location).count_rows() == 2
        await ns.declare_table({"id": [*namespace, "first"]})
        assert (await ns.insert_into_table({"id": [*namespace, "first"]}, rows(1))).version == 1
        assert (await ns.count_table_rows({"id": [*namespace, "first"]})).count == 1

        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.create_table({"id": [*settings.root, "missing", "t"]}, rows(1))


async def test_a_catalog_refusing_the_registration_leaves_no_data(tmp_path: Path) -> None:
    """Unity look-alike: its createTable fails after the rows were written; the rows go."""
    with unity_catalog() as server:
        server.add_catalog("main")
        properties = {"endpoint": server.uri, "root": str(tmp_path), "retry_backoff_ms": "1"}
        async with lna.connect("unity", properties) as ns:
            await ns.create_namespace({"id": ["main", "s"]})
            server.fail_next(409, operations=("createTable",))
            with pytest.raises(errors.TableAlreadyExistsError):
                await ns.create_table({"id": ["main", "s", "t"]}, rows(3))
            assert (await ns.list_tables({"id": ["main", "s"]})).tables == []
            assert files_under(str(tmp_path)) == {}


async def test_an_implementation_managed_iceberg_table_commits_every_operation_through_the_catalog(
    tmp_path: Path,
) -> None:
    """Iceberg look-alike: every operation that commits a Lance version of a
    ``managed_by=impl`` table (seed 003) advances the catalog's snapshot through
    UpdateTable, and storage holds no version the catalog did not take."""
    with iceberg_catalog(tmp_path / "iceberg") as catalog:
        properties = {"endpoint": catalog.uri, "root": str(tmp_path / "data")}
        async with lna.connect("iceberg", properties) as ns:
            await ns.create_namespace({"id": ["wh", "s"]})
            table = ["wh", "s", "managed"]
            created = await ns.create_table(
                {"id": table, "properties": {"managed_by": "impl"}}, rows(4)
            )
            committing = [
                ns.insert_into_table({"id": table}, rows(1, 4)),
                ns.delete_from_table({"id": table, "predicate": "id = 0"}),
                ns.alter_table_add_columns(
                    {"id": table, "new_columns": [{"name": "x", "expression": "id"}]}
                ),
                ns.create_table_scalar_index({"id": table, "column": "id", "index_type": "BTREE"}),
                ns.restore_table({"id": table, "version": 1}),
                ns.create_table({"id": table, "mode": "Overwrite"}, rows(1)),
            ]
            pyiceberg = catalog.rest_client("wh")
            for expected, call in enumerate(committing, start=created.version + 1):
                await call
                assert (await ns.describe_table({"id": table})).version == expected
                snapshot = pyiceberg.load_table(("s", "managed")).metadata.current_snapshot_id
                assert snapshot == expected
            assert lance.dataset(created.location).version == len(committing) + 1
            assert (await ns.count_table_rows({"id": table})).count == 1
            versions = (await ns.list_table_versions({"id": table})).versions
            assert [v.version for v in versions] == list(range(1, len(committing) + 2))


async def test_the_adapter_serves_the_table_operations_of_a_catalog(
    settings: KitSettings,
) -> None:
    """Our REST adapter in front of the catalog backend, called through the rest backend:
    the table operations travel as Lance REST (Arrow IPC both ways) and land on storage."""
    from uvicorn_thread import UvicornThread

    from lance_namespace_async.server import create_app

    backend = lna.connect(settings.impl, settings.properties)  # ours to close, not the app's
    server = UvicornThread(
        create_app(backend),
        name="ops-adapter",
        description=f"our REST adapter over {settings.impl}",
    )
    uri = server.start()
    try:
        async with lna.connect("rest", {"uri": uri, "max_retries": "0"}) as ns:
            namespace = await fresh_namespace(ns, settings, "served")
            table = [*namespace, "t"]
            location = (await ns.create_table({"id": table}, rows(4))).location
            await ns.insert_into_table({"id": table}, rows(2, 4))
            nearest = await ns.query_table(
                {"id": table, "k": 2, "vector": {"single_vector": [5.1, 0.0]}}
            )
            assert nearest.column("id").to_pylist() == [5, 4]
            with pytest.raises(errors.TableSchemaValidationError):
                await ns.insert_into_table({"id": table}, pa.table({"other": [1]}))
            assert lance.dataset(location).count_rows() == 6
            await ns.drop_table({"id": table})
    finally:
        server.stop()
        await backend.aclose()


async def test_plans_stats_tags_versions_columns_and_indices_round_trip(
    settings: KitSettings,
) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        namespace = await fresh_namespace(ns, settings, "more")
        table = [*namespace, "t"]
        location = (await ns.create_table({"id": table}, rows(300))).location
        await ns.insert_into_table({"id": table}, rows(10, 300))

        query = {"id": table, "k": 5, "vector": None, "filter": "id > 250"}
        explained = await ns.explain_table_query_plan({"id": table, "query": query})
        assert "id > Int64(250)" in explained.plan
        assert "AnalyzeExec" in (await ns.analyze_table_query_plan(query)).analysis
        stats = await ns.get_table_stats({"id": table})
        assert (stats.num_rows, stats.fragment_stats.num_fragments) == (310, 2)
        assert (stats.fragment_stats.lengths.min_, stats.fragment_stats.lengths.max_) == (10, 300)

        await ns.create_table_tag({"id": table, "tag": "v", "version": 1})
        await ns.update_table_tag({"id": table, "tag": "v", "version": 2})
        assert (await ns.get_table_tag_version({"id": table, "tag": "v"})).version == 2
        await ns.delete_table_tag({"id": table, "tag": "v"})
        with pytest.raises(errors.TableTagNotFoundError):
            await ns.delete_table_tag({"id": table, "tag": "v"})

        first = await ns.list_table_versions({"id": table, "descending": True, "limit": 1})
        assert [v.version for v in first.versions] == [2]
        rest = await ns.list_table_versions(
            {"id": table, "descending": True, "limit": 1, "page_token": first.page_token}
        )
        assert ([v.version for v in rest.versions], rest.page_token) == ([1], None)
        described = (await ns.describe_table_version({"id": table, "version": 2})).version
        # relative to the table, under its name on storage (V2 names count down)
        assert described.manifest_path == f"_versions/{2**64 - 1 - 2:020d}.manifest"

        await ns.create_table_index(
            {
                "id": table,
                "column": "vec",
                "index_type": "IVF_FLAT",
                "name": "by_vec",
                "num_partitions": 2,
                "distance_type": "l2",
            }
        )
        index = await ns.describe_table_index_stats({"id": table, "index_name": "by_vec"})
        assert (index.num_indexed_rows, index.distance_type) == (310, "l2")
        await ns.drop_table_index({"id": table, "index_name": "by_vec"})
        assert (await ns.list_table_indices({"id": table})).indexes == []

        await ns.alter_table_alter_columns(
            {"id": table, "alterations": [{"path": "id", "rename": "key"}]}
        )
        await ns.update_table_schema_metadata({"id": table, "metadata": {"owner": "ops"}})
        await ns.update_field_metadata(
            {"id": table, "updates": [{"path": "key", "metadata": {"unit": "n"}}]}
        )
        schema = lance.dataset(location).schema
        assert schema.names == ["key", "vec"]
        assert schema.metadata == {b"owner": b"ops"}
        assert schema.field("key").metadata == {b"unit": b"n"}
        assert await stored_columns(ns, settings, table) in (None, ["key", "vec"])
        await ns.update_table(
            {"id": table, "updates": [["key", "key + 1000"]], "predicate": "key < 2"}
        )
        assert (await ns.count_table_rows({"id": table, "predicate": "key >= 1000"})).count == 2
