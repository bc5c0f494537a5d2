"""Implementation-managed Iceberg tables (seed 003, ``managed_by=impl``): every commit
through the catalog.

Server: the Iceberg project's own REST catalog server, ``RESTCatalogServer`` 1.11 from
Maven Central (conftest ``iceberg_reference``, shared by the session: each test works in
a namespace of its own), which checks UpdateTable's ``assert-ref-snapshot-id`` and
answers a commit that lost with 409 CommitFailed. Tables are real Lance tables in the
test's temporary directory, written by real pylance, through our sync facade as its
``namespace_client`` or through our own data operations; pyiceberg's RestCatalog is the
independent reader of the catalog.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import lance
import lance_namespace
import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from iceberg_real_server import ReferenceIcebergServer, unique_name
from lance.commit import CommitConflictError

import lance_namespace_async as lna
from lance_namespace_async import errors

WH = "wh"


def rows(*values: int) -> pa.Table:
    return pa.table({"x": pa.array(values, pa.int64())})


def xs(facade: lna.SyncLanceNamespace, table: list[str]) -> list[int]:
    """The table's rows as pylance reads them through the namespace."""
    dataset = lance.dataset(namespace_client=facade, table_id=table)
    return sorted(dataset.to_table().column("x").to_pylist())


@pytest.fixture
def place(iceberg_reference: ReferenceIcebergServer) -> str:
    """A namespace of this test's own on the shared server."""
    name = unique_name("managed")
    iceberg_reference.rest_client().create_namespace(name)
    return name


@pytest.fixture
def facade(
    iceberg_reference: ReferenceIcebergServer, tmp_path: Path
) -> Iterator[lna.SyncLanceNamespace]:
    """Our sync facade on the server: new tables managed_by=impl, Iceberg tooling on."""
    properties = iceberg_reference.properties(
        root=str(tmp_path / "root"), managed_by="impl", iceberg_tooling="true"
    )
    with lna.connect_sync("iceberg", properties) as namespace:
        yield namespace


class Recording(lance_namespace.LanceNamespace):
    """The facade as pylance's namespace client, keeping what CreateTableVersion raised."""

    def __init__(
        self, facade: lna.SyncLanceNamespace, gate: threading.Barrier | None = None
    ) -> None:
        self.facade = facade
        self.refused: list[BaseException] = []
        self.gate = gate  # CreateTableVersion waits here for the other writer(s)

    def namespace_id(self) -> str:
        return self.facade.namespace_id()

    def describe_table(self, request: Any) -> Any:
        return self.facade.describe_table(request)

    def list_table_versions(self, request: Any) -> Any:
        return self.facade.list_table_versions(request)

    def describe_table_version(self, request: Any) -> Any:
        return self.facade.describe_table_version(request)

    def create_table_version(self, request: Any) -> Any:
        if self.gate is not None:
            self.gate.wait(timeout=120)
        try:
            return self.facade.create_table_version(request)
        except Exception as exc:
            self.refused.append(exc)
            raise


def test_pylance_writes_through_the_facade_advance_the_catalog(
    facade: lna.SyncLanceNamespace, iceberg_reference: ReferenceIcebergServer, place: str
) -> None:
    table = [WH, place, "t"]
    created = lance.write_dataset(rows(1, 2), namespace_client=facade, table_id=table)
    pyiceberg = iceberg_reference.rest_client()
    loaded = pyiceberg.load_table((place, "t"))
    assert (created.version, loaded.metadata.current_snapshot_id) == (1, 1)
    assert loaded.metadata.current_schema_id == 1
    assert [f.name for f in loaded.schema().fields] == ["x"]
    described = facade.describe_table({"id": table})
    assert described.managed_versioning is True
    assert described.version == 1

    appended = lance.write_dataset(rows(3), namespace_client=facade, table_id=table, mode="append")
    assert appended.version == 2
    assert pyiceberg.load_table((place, "t")).metadata.current_snapshot_id == 2

    dataset = lance.dataset(namespace_client=facade, table_id=table)
    dataset.add_columns({"doubled": "x * 2"})
    loaded = pyiceberg.load_table((place, "t"))
    assert loaded.metadata.current_snapshot_id == dataset.version == 3
    assert [f.name for f in loaded.schema().fields] == ["x", "doubled"]
    assert [entry.snapshot_id for entry in loaded.metadata.snapshot_log] == [1, 2, 3]
    versions = facade.list_table_versions({"id": table}).versions
    assert [v.version for v in versions] == [1, 2, 3]
    assert xs(facade, table) == [1, 2, 3]


def test_two_writers_racing_exactly_one_commit_wins_the_other_gets_14(
    facade: lna.SyncLanceNamespace, iceberg_reference: ReferenceIcebergServer, place: str
) -> None:
    table = [WH, place, "race"]
    lance.write_dataset(rows(0), namespace_client=facade, table_id=table)
    location = facade.describe_table({"id": table}).location
    # both writers have staged version 2 before either asks the catalog: a real race, on a
    # machine of any speed
    both_staged = threading.Barrier(2)
    writers = [Recording(facade, both_staged), Recording(facade, both_staged)]
    fragments = [lance.fragment.write_fragments(rows(value), location) for value in (1, 2)]
    outcomes: list[tuple[int, Any]] = []
    start = threading.Barrier(2)

    def commit(index: int) -> None:
        start.wait()
        try:
            committed = lance.LanceDataset.commit(
                location,
                lance.LanceOperation.Append(fragments[index]),
                read_version=1,
                max_retries=0,  # a lost race is reported, not rebased and retried
                namespace_client=writers[index],
                table_id=table,
                namespace_client_managed_versioning=True,
            )
            outcomes.append((index, committed.version))
        except CommitConflictError as exc:
            outcomes.append((index, exc))

    threads = [threading.Thread(target=commit, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    won = [(i, v) for i, v in outcomes if isinstance(v, int)]
    lost = [(i, v) for i, v in outcomes if isinstance(v, CommitConflictError)]
    assert len(won) == 1
    assert len(lost) == 1
    winner, loser = won[0][0], lost[0][0]
    assert won[0][1] == 2
    refused = writers[loser].refused[0]
    assert isinstance(refused, errors.ConcurrentModificationError)
    assert refused.code == 14
    assert writers[winner].refused == []
    # nothing the catalog did not accept is visible through the namespace
    loaded = iceberg_reference.rest_client().load_table((place, "race"))
    assert loaded.metadata.current_snapshot_id == 2
    assert facade.describe_table({"id": table}).version == 2
    assert xs(facade, table) == [0, winner + 1]
    assert [v.version for v in facade.list_table_versions({"id": table}).versions] == [1, 2]


def test_racing_appends_that_retry_both_land_one_after_the_other(
    facade: lna.SyncLanceNamespace, iceberg_reference: ReferenceIcebergServer, place: str
) -> None:
    # pylance rebases an append that lost the race onto the winner and commits again
    table = [WH, place, "retried"]
    lance.write_dataset(rows(0), namespace_client=facade, table_id=table)
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def append(value: int) -> None:
        start.wait()
        try:
            lance.write_dataset(rows(value), namespace_client=facade, table_id=table, mode="append")
        except Exception as exc:
            failures.append(exc)

    threads = [threading.Thread(target=append, args=(v,)) for v in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    loaded = iceberg_reference.rest_client().load_table((place, "retried"))
    assert loaded.metadata.current_snapshot_id == 3
    assert xs(facade, table) == [0, 1, 2]


def test_a_commit_written_around_the_catalog_is_never_visible_through_the_namespace(
    facade: lna.SyncLanceNamespace, iceberg_reference: ReferenceIcebergServer, place: str
) -> None:
    table = [WH, place, "around"]
    lance.write_dataset(rows(1), namespace_client=facade, table_id=table)
    location = facade.describe_table({"id": table}).location
    lance.write_dataset(rows(99), location, mode="append")  # straight to storage

    assert facade.describe_table({"id": table}).version == 1
    assert xs(facade, table) == [1]
    assert facade.count_table_rows({"id": table}).count == 1
    with pytest.raises(errors.TableVersionNotFoundError):
        facade.describe_table({"id": table, "version": 2})

    # the next writer through the namespace takes version 2; the other one stays unseen
    appended = lance.write_dataset(rows(2), namespace_client=facade, table_id=table, mode="append")
    assert appended.version == 2
    loaded = iceberg_reference.rest_client().load_table((place, "around"))
    assert loaded.metadata.current_snapshot_id == 2
    assert xs(facade, table) == [1, 2]
    assert lance.dataset(location).count_rows() == 2  # storage's newest is the catalog's
    versions_dir = Path(location.removeprefix("file://")) / "_versions"
    assert any("-unaccepted-" in name for name in map(str, versions_dir.iterdir()))


async def test_our_data_operations_on_a_managed_table_commit_through_the_catalog(
    iceberg_reference: ReferenceIcebergServer, place: str, tmp_path: Path
) -> None:
    # one worker thread: pylance, holding it, calls the backend back for versions and commits
    properties = iceberg_reference.properties(
        root=str(tmp_path / "root"), iceberg_tooling="true", worker_threads="1"
    )
    pyiceberg = iceberg_reference.rest_client()
    async with lna.connect("iceberg", properties) as ns:
        table = [WH, place, "ops"]
        await ns.create_table({"id": table, "properties": {"managed_by": "impl"}}, rows(1, 2, 3))

        operations = [
            ns.insert_into_table({"id": table}, rows(4)),
            ns.delete_from_table({"id": table, "predicate": "x = 1"}),
            ns.update_table({"id": table, "updates": [["x", "x + 10"]], "predicate": "x = 4"}),
            ns.merge_insert_into_table(
                {"id": table, "on": "x", "when_not_matched_insert_all": True}, rows(20)
            ),
            ns.alter_table_add_columns(
                {"id": table, "new_columns": [{"name": "y", "expression": "x * 2"}]}
            ),
            ns.alter_table_alter_columns(
                {"id": table, "alterations": [{"path": "y", "rename": "z"}]}
            ),
            ns.create_table_scalar_index({"id": table, "column": "x", "index_type": "BTREE"}),
            ns.alter_table_drop_columns({"id": table, "columns": ["z"]}),
            ns.restore_table({"id": table, "version": 2}),
            ns.insert_into_table({"id": table, "mode": "overwrite"}, rows(7)),
        ]
        seen = [1]
        for operation in operations:
            await operation
            version = (await ns.describe_table({"id": table})).version
            assert version == seen[-1] + 1
            seen.append(version)
            loaded = pyiceberg.load_table((place, "ops"))
            assert loaded.metadata.current_snapshot_id == version
        location = (await ns.describe_table({"id": table})).location
        assert lance.dataset(location).version == seen[-1]  # storage holds no other commit
        assert (await ns.count_table_rows({"id": table})).count == 1
        loaded = pyiceberg.load_table((place, "ops"))
        assert [f.name for f in loaded.schema().fields] == ["x"]
        assert [e.snapshot_id for e in loaded.metadata.snapshot_log] == seen


async def test_create_table_version_refuses_a_manifest_that_is_not_the_tables(
    iceberg_reference: ReferenceIcebergServer, place: str, tmp_path: Path
) -> None:
    properties = iceberg_reference.properties(root=str(tmp_path / "root"), managed_by="impl")
    async with lna.connect("iceberg", properties) as ns:
        table = [WH, place, "strict"]
        created = await ns.create_table({"id": table}, rows(1))
        elsewhere = tmp_path / "elsewhere" / "_versions" / "1.manifest-abc"
        elsewhere.parent.mkdir(parents=True)
        elsewhere.write_bytes(b"not a manifest")
        bad = [
            {"version": 2, "manifest_path": str(elsewhere).lstrip("/")},
            {"version": 2, "manifest_path": "_versions/../../x/_versions/2.manifest-abc"},
            {"version": 2, "manifest_path": "_versions/7.manifest-abc"},  # another version
            {"version": 2, "manifest_path": "_versions/2.manifest"},  # not staged
            {"version": 2, "manifest_path": "_versions/2.manifest-missing"},
        ]
        for body in bad:
            with pytest.raises(errors.InvalidInputError):
                await ns.create_table_version({"id": table, **body})
        loaded = iceberg_reference.rest_client().load_table((place, "strict"))
        assert loaded.metadata.current_snapshot_id == created.version == 1

        plain = [WH, place, "plain"]
        await ns.create_table({"id": plain, "properties": {"managed_by": "storage"}}, rows(1))
        # a managed_by=storage table records versions on storage, as every catalog does
        # (the shared CreateTableVersion): a staged manifest that is not there is bad input
        with pytest.raises(errors.InvalidInputError, match="no staged manifest"):
            await ns.create_table_version(
                {"id": plain, "version": 2, "manifest_path": "_versions/2.manifest-a"}
            )


def test_pylance_through_our_rest_adapter_commits_through_the_catalog(
    iceberg_reference: ReferenceIcebergServer, place: str, tmp_path: Path
) -> None:
    """pylance -> the rest backend's facade -> our REST adapter (create_app, on a free
    loopback port) -> the iceberg backend: CreateTableVersion travels as Lance REST."""
    from uvicorn_thread import UvicornThread

    from lance_namespace_async.server import create_app

    properties = iceberg_reference.properties(root=str(tmp_path / "root"), managed_by="impl")
    backend = lna.connect("iceberg", properties)  # ours to close, not the app's
    server = UvicornThread(
        create_app(backend),
        name="managed-adapter",
        description="our REST adapter over the iceberg backend",
    )
    uri = server.start()
    try:
        with lna.connect_sync("rest", {"uri": uri}) as facade:
            table = [WH, place, "served"]
            lance.write_dataset(rows(1), namespace_client=facade, table_id=table)
            appended = lance.write_dataset(
                rows(2), namespace_client=facade, table_id=table, mode="append"
            )
            assert facade.describe_table({"id": table}).managed_versioning is True
            assert xs(facade, table) == [1, 2]
    finally:
        server.stop()
        anyio.run(backend.aclose)
    loaded = iceberg_reference.rest_client().load_table((place, "served"))
    assert loaded.metadata.current_snapshot_id == appended.version == 2


def test_a_commit_whose_rename_never_happened_is_finished_by_the_next_reader(
    facade: lna.SyncLanceNamespace, iceberg_reference: ReferenceIcebergServer, place: str
) -> None:
    # the catalog took version 2 and the writer stopped before the manifest got its name
    table = [WH, place, "lost"]
    lance.write_dataset(rows(1), namespace_client=facade, table_id=table)
    lance.write_dataset(rows(2), namespace_client=facade, table_id=table, mode="append")
    snapshot = iceberg_reference.rest_client().load_table((place, "lost")).current_snapshot()
    assert snapshot is not None
    staged, final = snapshot.summary["lance-staged"], snapshot.summary["lance-manifest"]
    location = Path(facade.describe_table({"id": table}).location.removeprefix("file://"))
    (location / final).rename(location / "_versions" / staged)

    assert xs(facade, table) == [1, 2]
    assert (location / final).is_file()
    assert not (location / "_versions" / staged).exists()
