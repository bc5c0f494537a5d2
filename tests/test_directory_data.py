"""CountTableRows and InsertIntoTable of the directory backend on the table itself
(``directory/_data``): the same answers and errors as pylance's operations, every commit of
another writer seen at once, and nothing written where pylance would refuse.

No server: the directory backend over real pylance on real temporary directories; a
second backend on the same root, or pylance's ``lance`` API on a table's location, stands
for another process. ``SETTLED_NS`` is 0 (as in test_manifest_snapshot) so the manifest
copy that locates tables is used at once; calls that reached pylance's operation are
counted by wrapping the function that hands them over (it still runs). The namespace's
``lance.Session`` (pylance's caches) serves every call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import lance
import pyarrow as pa
import pytest
from conftest import disk_state, sample_table

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.directory import DirectoryNamespace, _manifest_snapshot


@pytest.fixture(autouse=True)
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_manifest_snapshot, "SETTLED_NS", 0)


@pytest.fixture
async def writer(root: Path) -> AsyncIterator[DirectoryNamespace]:
    """A second backend on the same root: another process writing to the catalog."""
    async with lna.connect("dir", {"root": str(root)}) as namespace:
        assert isinstance(namespace, DirectoryNamespace)
        yield namespace


async def make_table(ns: DirectoryNamespace, rows: int = 3) -> str:
    await ns.create_namespace({"id": ["a"], "mode": "exist_ok"})
    created = await ns.create_table({"id": ["a", "t"]}, sample_table(rows))
    assert created.location is not None
    return created.location


async def outcome(call: Any) -> Any:
    try:
        return (await call).to_dict()
    except errors.LanceNamespaceError as exc:
        return (type(exc).__name__, exc.code)


async def test_counts_are_pylances_without_its_manifest_scan(
    ns: DirectoryNamespace, plain: DirectoryNamespace, handed_to_pylance: list[str]
) -> None:
    await make_table(ns, rows=5)
    await ns.insert_into_table({"id": ["a", "t"]}, sample_table(2))
    await ns.declare_table({"id": ["a", "declared"]})
    await ns.create_table({"id": ["rooted"]}, sample_table(1))
    requests: list[dict[str, Any]] = [
        {"id": ["a", "t"]},
        {"id": ["a", "t"], "version": 1},
        {"id": ["a", "t"], "predicate": "id >= 3"},
        {"id": ["a", "t"], "version": 99},
        {"id": ["a", "t"], "predicate": "no_such_column > 1"},
        {"id": ["a", "declared"]},
        {"id": ["a", "missing"]},
        {"id": ["ghost", "t"]},
        {"id": ["rooted"]},
    ]
    direct = [await outcome(ns.count_table_rows(request)) for request in requests]
    handed = len(handed_to_pylance)
    assert direct == [await outcome(plain.count_table_rows(request)) for request in requests]
    assert direct[:3] == [{"count": 7}, {"count": 5}, {"count": 2}]
    # the first three were counted on the table; the others are pylance's to answer
    assert handed == len(requests) - 3


async def test_a_count_sees_every_commit_of_another_writer_at_once(
    ns: DirectoryNamespace, writer: DirectoryNamespace, handed_to_pylance: list[str]
) -> None:
    location = await make_table(ns, rows=3)
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 3

    await writer.insert_into_table({"id": ["a", "t"]}, sample_table(4))
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 7
    lance.write_dataset(sample_table(2), location, mode="append")  # not through a namespace
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 9
    lance.dataset(location).delete("id = 0")
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 6

    # dropped and created again by the other writer: the new table, at its new place
    await writer.drop_table({"id": ["a", "t"]})
    with pytest.raises(errors.TableNotFoundError):
        await ns.count_table_rows({"id": ["a", "t"]})
    await writer.create_table({"id": ["a", "t"]}, sample_table(1))
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 1
    assert handed_to_pylance == ["CountTableRows"]  # only the missing table's


async def test_inserts_answer_as_pylance_and_land_in_the_table(
    ns: DirectoryNamespace, plain: DirectoryNamespace, handed_to_pylance: list[str]
) -> None:
    location = await make_table(ns, rows=3)
    first = await ns.insert_into_table({"id": ["a", "t"]}, sample_table(2))
    second = await ns.insert_into_table({"id": ["a", "t"], "mode": "append"}, sample_table(4))
    assert handed_to_pylance == []
    assert (first.num_inserted_rows, first.version) == (2, 2)
    assert (second.num_inserted_rows, second.version) == (4, 3)
    # pylance answers an insert in the same form
    third = await plain.insert_into_table({"id": ["a", "t"]}, sample_table(1))
    assert third.to_dict() == {"num_inserted_rows": 1, "version": 4}
    dataset = lance.dataset(location)
    assert dataset.count_rows() == 10
    assert dataset.to_table().schema.equals(sample_table().schema)


async def test_inserts_pylance_must_decide_go_to_it_before_anything_is_written(
    ns: DirectoryNamespace, plain: DirectoryNamespace, root: Path, handed_to_pylance: list[str]
) -> None:
    await make_table(ns, rows=3)
    other_schema = pa.table({"x": [1.5]})
    refused = [
        ({"id": ["a", "t"]}, other_schema),
        ({"id": ["a", "t"], "mode": "bogus"}, sample_table(1)),
        ({"id": ["a", "missing"]}, sample_table(1)),
        ({"id": ["ghost", "t"]}, sample_table(1)),
    ]
    before = disk_state(root)
    direct = [await outcome(ns.insert_into_table(request, rows)) for request, rows in refused]
    assert disk_state(root) == before
    assert handed_to_pylance == ["InsertIntoTable"] * len(refused)
    assert direct == [
        await outcome(plain.insert_into_table(request, rows)) for request, rows in refused
    ]
    assert all(isinstance(answer, tuple) for answer in direct)

    # pylance writes what it accepts: the first rows of a declared table, an empty stream,
    # an overwrite
    handed_to_pylance.clear()
    declared = await ns.declare_table({"id": ["a", "declared"]})
    await ns.insert_into_table({"id": ["a", "declared"]}, sample_table(2))
    assert lance.dataset(declared.location).count_rows() == 2
    empty = await ns.insert_into_table({"id": ["a", "t"]}, sample_table(1).slice(0, 0))
    assert empty.num_inserted_rows == 0
    await ns.insert_into_table({"id": ["a", "t"], "mode": "overwrite"}, sample_table(1))
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 1
    assert handed_to_pylance == ["InsertIntoTable"] * 3


async def test_an_insert_after_another_writer_deregistered_the_table_writes_nothing(
    ns: DirectoryNamespace, writer: DirectoryNamespace, handed_to_pylance: list[str]
) -> None:
    location = await make_table(ns, rows=3)
    await ns.insert_into_table({"id": ["a", "t"]}, sample_table(1))
    await writer.deregister_table({"id": ["a", "t"]})  # the data stays where it was
    with pytest.raises(errors.TableNotFoundError):
        await ns.insert_into_table({"id": ["a", "t"]}, sample_table(1))
    assert lance.dataset(location).count_rows() == 4
    assert handed_to_pylance == ["InsertIntoTable"]


async def test_concurrent_inserts_of_two_writers_all_land(
    ns: DirectoryNamespace, writer: DirectoryNamespace
) -> None:
    location = await make_table(ns, rows=1)

    async def insert(namespace: DirectoryNamespace, times: int) -> None:
        for _ in range(times):
            await namespace.insert_into_table({"id": ["a", "t"]}, sample_table(3))

    async with anyio.create_task_group() as group:
        group.start_soon(insert, ns, 6)
        group.start_soon(insert, writer, 6)
    assert lance.dataset(location).count_rows() == 37
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 37


async def test_tracked_versions_keep_inserts_with_pylance(
    root: Path, handed_to_pylance: list[str]
) -> None:
    properties = {"root": str(root), "table_version_tracking_enabled": "true"}
    async with lna.connect("dir", properties) as tracked:
        assert isinstance(tracked, DirectoryNamespace)
        await make_table(tracked, rows=1)
        await tracked.insert_into_table({"id": ["a", "t"]}, sample_table(2))
        assert handed_to_pylance == ["InsertIntoTable"]
        assert (await tracked.count_table_rows({"id": ["a", "t"]})).count == 3


async def test_queries_through_the_shared_caches_see_another_writers_commits(
    ns: DirectoryNamespace, writer: DirectoryNamespace
) -> None:
    # pylance's caches (the namespace's lance.Session) serve every call; a commit by
    # anyone else is read at once, a table dropped and created again is the new one
    location = await make_table(ns, rows=3)
    query = {"id": ["a", "t"], "k": 100, "vector": None, "filter": "id >= 0"}
    assert (await ns.query_table(query)).num_rows == 3
    lance.write_dataset(sample_table(2), location, mode="append")
    assert (await ns.query_table(query)).num_rows == 5
    lance.dataset(location).delete("id = 1")
    assert sorted((await ns.query_table(query)).column("id").to_pylist()) == [0, 0, 2]

    await writer.drop_table({"id": ["a", "t"]})
    await writer.create_table({"id": ["a", "t"]}, sample_table(1))
    assert (await ns.query_table(query)).column("name").to_pylist() == ["row-0"]
    assert (await ns.count_table_rows({"id": ["a", "t"]})).count == 1
