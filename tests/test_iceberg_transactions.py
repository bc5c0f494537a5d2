"""BatchCommitTables of ``managed_by=impl`` Iceberg tables: one catalog CommitTransaction
(``POST /v1/{prefix}/transactions/commit``), all tables or none.

Servers: the Iceberg project's own REST catalog server (conftest ``iceberg_reference``,
shared by the session; each test works in a namespace of its own), which serves
CommitTransaction and checks every table's ``assert-ref-snapshot-id`` before it changes
any; and the suite's Iceberg look-alike (tests/iceberg_rest_server.py), which does not
serve the route (it answers 404 or 501, as told), for the fallback. Tables are real
Lance tables in the test's temporary directory; a table's next version is written by
pylance and its manifest moved to a staging name, as a managed-versioning writer stages
it. pyiceberg's RestCatalog is the independent reader of the catalog.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from fault_proxy import fault_proxy
from iceberg_real_server import ReferenceIcebergServer, unique_name
from iceberg_rest_server import iceberg_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.iceberg import IcebergNamespace

WH = "wh"


def rows(*values: int) -> pa.Table:
    return pa.table({"x": pa.array(values, pa.int64())})


def staged_version(location: str, value: int) -> tuple[int, str]:
    """Write the table's next version with pylance, then give its manifest a staging
    name (``<final>.manifest-<suffix>``): (the version, the staged path in the table)."""
    version = lance.write_dataset(rows(value), location, mode="append").version
    versions = os.path.join(location, "_versions")
    final = f"{2**64 - 1 - version:020d}.manifest"
    staged = f"{final}-{secrets.token_hex(4)}"
    os.rename(os.path.join(versions, final), os.path.join(versions, staged))
    return version, f"_versions/{staged}"


def record(table: list[str], version: int, path: str) -> dict[str, Any]:
    return {"create_table_version": {"id": table, "version": version, "manifest_path": path}}


async def managed_table(ns: IcebergNamespace, table: list[str], location: str) -> None:
    """A Lance table at version 1, registered managed_by=impl (the catalog at 1)."""
    lance.write_dataset(rows(0), location)
    await ns.register_table(
        {"id": table, "location": location, "properties": {"managed_by": "impl"}}
    )


async def xs(ns: IcebergNamespace, table: list[str]) -> list[int]:
    """The rows of the catalog's version of the table."""
    described = await ns.describe_table({"id": table})
    dataset = lance.dataset(described.location, version=described.version)
    return sorted(dataset.to_table().column("x").to_pylist())


@pytest.fixture
async def reference_ns(
    iceberg_reference: ReferenceIcebergServer, tmp_path: Path
) -> AsyncIterator[tuple[IcebergNamespace, str]]:
    """Our backend on the reference server, and a namespace of this test's own."""
    place = unique_name("itxn")
    iceberg_reference.rest_client().create_namespace(place)
    properties = iceberg_reference.properties(root=str(tmp_path / "root"))
    async with lna.connect("iceberg", properties) as ns:
        assert isinstance(ns, IcebergNamespace)
        yield ns, place


async def test_two_managed_tables_advance_in_one_catalog_transaction(
    reference_ns: tuple[IcebergNamespace, str],
    iceberg_reference: ReferenceIcebergServer,
    tmp_path: Path,
) -> None:
    ns, place = reference_ns
    tables = [[WH, place, "a"], [WH, place, "b"]]
    locations = [str(tmp_path / "a"), str(tmp_path / "b")]
    for table, location in zip(tables, locations, strict=True):
        await managed_table(ns, table, location)
    (va, pa_), (vb, pb) = staged_version(locations[0], 1), staged_version(locations[1], 2)
    assert (va, vb) == (2, 2)

    answer = await ns.batch_commit_tables(
        {"operations": [record(tables[0], va, pa_), record(tables[1], vb, pb)]}
    )

    results = [result.to_dict()["create_table_version"]["version"] for result in answer.results]
    assert [r["version"] for r in results] == [2, 2]
    assert all(r["manifest_path"].endswith(f"{2**64 - 3:020d}.manifest") for r in results)
    # through the namespace: the catalog's versions and the rows they hold
    assert [(await ns.describe_table({"id": t})).version for t in tables] == [2, 2]
    assert await xs(ns, tables[0]) == [0, 1]
    assert await xs(ns, tables[1]) == [0, 2]
    # on storage: the staged manifests have their final names, as pylance reads them
    assert [lance.dataset(location).version for location in locations] == [2, 2]
    # pyiceberg, the independent reader, sees the snapshots the transaction wrote
    pyiceberg = iceberg_reference.rest_client()
    for name in ("a", "b"):
        metadata = pyiceberg.load_table((place, name)).metadata
        assert metadata.current_snapshot_id == 2
        assert metadata.refs["main"].snapshot_id == 2
        snapshot = metadata.snapshot_by_id(2)
        assert snapshot is not None
        assert snapshot.parent_snapshot_id is None
        assert snapshot.summary is not None
        assert snapshot.summary["lance-version"] == "2"
        assert snapshot.summary["lance-manifest"] == f"_versions/{2**64 - 3:020d}.manifest"
        assert [entry.snapshot_id for entry in metadata.snapshot_log] == [1, 2]
    # the transaction route was served: no fallback was noted
    assert ns._without_transactions is None


async def test_a_conflict_on_one_table_leaves_every_table_unchanged_and_answers_14(
    reference_ns: tuple[IcebergNamespace, str],
    iceberg_reference: ReferenceIcebergServer,
    tmp_path: Path,
) -> None:
    ns, place = reference_ns
    tables = [[WH, place, "a"], [WH, place, "b"]]
    locations = [str(tmp_path / "a"), str(tmp_path / "b")]
    for table, location in zip(tables, locations, strict=True):
        await managed_table(ns, table, location)
    (va, pa_), (vb, pb) = staged_version(locations[0], 1), staged_version(locations[1], 2)
    # another writer advances b to version 2 before the batch commits
    with lna.connect_sync("iceberg", iceberg_reference.properties(root=str(tmp_path))) as other:
        written = lance.write_dataset(
            rows(7), namespace_client=other, table_id=tables[1], mode="append"
        )
    assert written.version == 2
    a_files = sorted(os.listdir(os.path.join(locations[0], "_versions")))

    with pytest.raises(errors.ConcurrentModificationError) as caught:
        await ns.batch_commit_tables(
            {"operations": [record(tables[0], va, pa_), record(tables[1], vb, pb)]}
        )

    assert caught.value.code == 14
    pyiceberg = iceberg_reference.rest_client()
    a_meta = pyiceberg.load_table((place, "a")).metadata
    b_meta = pyiceberg.load_table((place, "b")).metadata
    assert (a_meta.current_snapshot_id, b_meta.current_snapshot_id) == (1, 2)
    assert [s.snapshot_id for s in a_meta.snapshots] == [1]
    # a: the catalog's version, its rows, and storage exactly as before (no final
    # manifest of version 2: pylance on storage still reads version 1)
    assert (await ns.describe_table({"id": tables[0]})).version == 1
    assert await xs(ns, tables[0]) == [0]
    assert sorted(os.listdir(os.path.join(locations[0], "_versions"))) == a_files
    assert lance.dataset(locations[0]).version == 1
    # b: the other writer's version, not the batch's
    assert await xs(ns, tables[1]) == [0, 7]
    # the same batch without the lost table commits a
    answer = await ns.batch_commit_tables({"operations": [record(tables[0], va, pa_)]})
    assert answer.results[0].to_dict()["create_table_version"]["version"]["version"] == 2
    assert await xs(ns, tables[0]) == [0, 1]


async def test_bad_entries_are_refused_before_anything_changes(
    reference_ns: tuple[IcebergNamespace, str],
    iceberg_reference: ReferenceIcebergServer,
    tmp_path: Path,
) -> None:
    ns, place = reference_ns
    managed, plain = [WH, place, "m"], [WH, place, "s"]
    location = str(tmp_path / "m")
    await managed_table(ns, managed, location)
    lance.write_dataset(rows(0), str(tmp_path / "s"))
    await ns.register_table({"id": plain, "location": str(tmp_path / "s")})
    version, path = staged_version(location, 1)

    refusals: list[tuple[type[errors.LanceNamespaceError], str | None, list[dict[str, Any]]]] = [
        # the catalog's transaction comes last: no other operation may name its tables
        (
            errors.InvalidInputError,
            "names a managed_by=impl table",
            [
                {"deregister_table": {"id": plain}},
                {"deregister_table": {"id": managed}},
                record(managed, version, path),
            ],
        ),
        (
            errors.InvalidInputError,
            "one version per batch",
            [record(managed, version, path), record(managed, version + 1, path)],
        ),
        (errors.InvalidInputError, "is not version", [record(managed, version + 1, path)]),
        (errors.InvalidInputError, "not a staged", [record(managed, version, "_versions/x")]),
        (errors.TableNotFoundError, None, [record([WH, place, "missing"], 2, path)]),
        (  # a storage table's bad record, checked before the declare is applied
            errors.InvalidInputError,
            None,
            [
                {"declare_table": {"id": [WH, place, "c"]}},
                record(managed, version, path),
                record(plain, 2, "_versions/nothing-here"),
            ],
        ),
    ]
    for expected, reason, operations in refusals:
        with pytest.raises(expected, match=reason):
            await ns.batch_commit_tables({"operations": operations})
    metadata = iceberg_reference.rest_client().load_table((place, "m")).metadata
    assert metadata.current_snapshot_id == 1
    assert (await ns.describe_table({"id": managed})).version == 1
    assert os.path.isfile(os.path.join(location, path))  # the writer's staged file is kept
    await ns.table_exists({"id": plain})  # not deregistered
    assert (await ns.list_tables({"id": [WH, place]})).tables == ["m", "s"]


async def versions(ns: IcebergNamespace, table: list[str]) -> list[int]:
    return sorted(v.version for v in (await ns.list_table_versions({"id": table})).versions)


async def test_a_mixed_batch_lands_whole_or_not_at_all(
    reference_ns: tuple[IcebergNamespace, str],
    iceberg_reference: ReferenceIcebergServer,
    tmp_path: Path,
) -> None:
    # a managed table's version (the catalog's transaction, last) with a storage-managed
    # table's version record and a declare (on storage, undone if the transaction fails)
    ns, place = reference_ns
    managed, plain, declared = [WH, place, "m"], [WH, place, "s"], [WH, place, "c"]
    m_location, s_location = str(tmp_path / "m"), str(tmp_path / "s")
    await managed_table(ns, managed, m_location)
    lance.write_dataset(rows(0), s_location)
    await ns.register_table({"id": plain, "location": s_location})
    (mv, mp), (sv, sp) = staged_version(m_location, 1), staged_version(s_location, 2)
    operations = [
        {"declare_table": {"id": declared}},
        record(plain, sv, sp),
        record(managed, mv, mp),
    ]
    pyiceberg = iceberg_reference.rest_client()

    # 1. the catalog refuses (another writer advanced the managed table): nothing lands
    with lna.connect_sync("iceberg", iceberg_reference.properties(root=str(tmp_path))) as other:
        lance.write_dataset(rows(7), namespace_client=other, table_id=managed, mode="append")
    with pytest.raises(errors.ConcurrentModificationError):
        await ns.batch_commit_tables({"operations": operations})
    assert await versions(ns, plain) == [1]
    assert lance.dataset(s_location).version == 1
    assert (await ns.list_tables({"id": [WH, place]})).tables == ["m", "s"]
    assert pyiceberg.load_table((place, "m")).metadata.current_snapshot_id == 2

    # 2. a storage operation fails (its version exists): the catalog is never asked
    mv, mp = staged_version(m_location, 1)  # version 3, on the other writer's 2
    taken = record(plain, 1, sp)
    with pytest.raises(errors.ConcurrentModificationError):
        await ns.batch_commit_tables(
            {"operations": [*operations[:2], record(managed, mv, mp), taken]}
        )
    assert pyiceberg.load_table((place, "m")).metadata.current_snapshot_id == 2
    assert await versions(ns, plain) == [1]
    assert (await ns.list_tables({"id": [WH, place]})).tables == ["m", "s"]

    # 3. all of it
    answer = await ns.batch_commit_tables(
        {"operations": [*operations[:2], record(managed, mv, mp)]}
    )
    results = [result.to_dict() for result in answer.results]
    assert [next(iter(r)) for r in results] == [
        "declare_table",
        "create_table_version",
        "create_table_version",
    ]
    assert results[1]["create_table_version"]["version"]["version"] == 2
    assert results[2]["create_table_version"]["version"]["version"] == 3
    assert pyiceberg.load_table((place, "m")).metadata.current_snapshot_id == 3
    assert await xs(ns, managed) == [0, 1, 7]
    assert await versions(ns, plain) == [1, 2]
    assert sorted(lance.dataset(s_location).to_table().column("x").to_pylist()) == [0, 2]
    assert (await ns.list_tables({"id": [WH, place]})).tables == ["c", "m", "s"]


@pytest.mark.parametrize("status", [404, 501])
async def test_a_catalog_without_the_route_commits_one_table_and_refuses_several(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    with iceberg_catalog(tmp_path / "iceberg") as lookalike:
        lookalike.transactions_status = status
        properties = {"endpoint": lookalike.uri, "root": str(tmp_path / "root")}
        async with lna.connect("iceberg", properties) as ns:
            assert isinstance(ns, IcebergNamespace)
            await ns.create_namespace({"id": [WH, "db"]})
            tables = [[WH, "db", "a"], [WH, "db", "b"]]
            locations = [str(tmp_path / "a"), str(tmp_path / "b")]
            for table, location in zip(tables, locations, strict=True):
                await managed_table(ns, table, location)
            staged = [staged_version(location, 1) for location in locations]
            both = [record(t, v, p) for t, (v, p) in zip(tables, staged, strict=True)]
            with caplog.at_level(logging.WARNING, logger="lance_namespace_async.iceberg"):
                for _ in range(2):
                    with pytest.raises(errors.UnsupportedOperationError) as caught:
                        await ns.batch_commit_tables({"operations": both})
                    assert caught.value.code == 0
                    assert "CommitTransaction" in caught.value.message
                # known now: refused before the batch's storage operations are applied
                declare = {"declare_table": {"id": [WH, "db", "c"]}}
                asked_before = list(lookalike.requests)
                with pytest.raises(errors.UnsupportedOperationError):
                    await ns.batch_commit_tables({"operations": [declare, *both]})
                assert [m for m, _ in lookalike.requests[len(asked_before) :]] == ["GET"] * 2
                assert (await ns.list_tables({"id": [WH, "db"]})).tables == ["a", "b"]
                # one table: UpdateTable, atomic by itself
                answer = await ns.batch_commit_tables({"operations": both[:1]})
            assert answer.results[0].to_dict()["create_table_version"]["version"]["version"] == 2
            warnings = [r for r in caplog.records if "CommitTransaction" in r.getMessage()]
            assert len(warnings) == 1  # one per backend object, not one per call
            assert f"HTTP {status}" in warnings[0].getMessage()
            asked = [t for m, t in lookalike.requests if t.endswith("/transactions/commit")]
            assert len(asked) == 1  # the missing route is remembered, not asked again
            assert [(await ns.describe_table({"id": t})).version for t in tables] == [2, 1]
            assert await xs(ns, tables[0]) == [0, 1]
            assert await xs(ns, tables[1]) == [0]
            metadata = lookalike.rest_client(WH).load_table(("db", "b")).metadata
            assert metadata.current_snapshot_id == 1


async def test_a_transaction_whose_answer_was_lost_is_finished_by_the_next_reader(
    iceberg_reference: ReferenceIcebergServer, tmp_path: Path
) -> None:
    # the catalog committed, the answer never came (the connection reset after the
    # request was forwarded): the staged manifests are kept, and reading each table
    # through the namespace gives the catalog's version its final manifest
    place = unique_name("itxn_lost")
    iceberg_reference.rest_client().create_namespace(place)
    with fault_proxy(iceberg_reference.uri) as proxy:
        properties = {
            **iceberg_reference.properties(root=str(tmp_path / "root")),
            "endpoint": proxy.uri,
        }
        async with lna.connect("iceberg", properties) as ns:
            assert isinstance(ns, IcebergNamespace)
            tables = [[WH, place, "a"], [WH, place, "b"]]
            locations = [str(tmp_path / "a"), str(tmp_path / "b")]
            for table, location in zip(tables, locations, strict=True):
                await managed_table(ns, table, location)
            staged = [staged_version(location, 1) for location in locations]
            proxy.reset_next(
                1, after_forwarding=True, match=lambda seen: "transactions" in seen.target
            )
            operations = [record(t, v, p) for t, (v, p) in zip(tables, staged, strict=True)]
            with pytest.raises(errors.LanceNamespaceError) as caught:
                await ns.batch_commit_tables({"operations": operations})
            assert not isinstance(caught.value, errors.ConcurrentModificationError)
            assert len(proxy.forwarded(lambda seen: "transactions" in seen.target)) == 1
            # storage still at version 1: nothing renamed while the outcome was unknown
            assert [lance.dataset(location).version for location in locations] == [1, 1]
            for table, location in zip(tables, locations, strict=True):
                assert (await ns.describe_table({"id": table})).version == 2
                assert lance.dataset(location).version == 2
            assert await xs(ns, tables[0]) == [0, 1]
            assert await xs(ns, tables[1]) == [0, 1]


async def test_tooling_mode_shows_each_tables_new_columns_after_the_transaction(
    iceberg_reference: ReferenceIcebergServer, tmp_path: Path
) -> None:
    place = unique_name("itxn_tool")
    iceberg_reference.rest_client().create_namespace(place)
    properties = iceberg_reference.properties(root=str(tmp_path / "r"), iceberg_tooling="true")
    async with lna.connect("iceberg", properties) as ns:
        assert isinstance(ns, IcebergNamespace)
        tables = [[WH, place, "a"], [WH, place, "b"]]
        locations = [str(tmp_path / "a"), str(tmp_path / "b")]
        operations = []
        for table, location in zip(tables, locations, strict=True):
            await managed_table(ns, table, location)
            dataset = lance.dataset(location)
            dataset.add_columns({"doubled": "x * 2"})  # version 2, on storage
            final = f"{2**64 - 3:020d}.manifest"
            staged = f"{final}-{secrets.token_hex(4)}"
            versions = os.path.join(location, "_versions")
            os.rename(os.path.join(versions, final), os.path.join(versions, staged))
            operations.append(record(table, 2, f"_versions/{staged}"))
        await ns.batch_commit_tables({"operations": operations})
    pyiceberg = iceberg_reference.rest_client()
    for name in ("a", "b"):
        loaded = pyiceberg.load_table((place, name))
        assert loaded.metadata.current_snapshot_id == 2
        assert [field.name for field in loaded.schema().fields] == ["x", "doubled"]
