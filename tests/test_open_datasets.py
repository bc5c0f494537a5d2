"""Datasets the directory backend keeps open between its direct reads
(``directory/_open_datasets``): reused while their manifest is the one wanted, never
past another writer's commit.

The directory backend over real pylance on real temporary directories; "another writer"
is pylance writing to the table's location directly (another process would do the
same). The last test runs ``lance-ns serve --impl dir`` as a real process with one
storage worker (``serve_process.lance_ns_serve``), so both requests of a pair reach the
worker holding the kept dataset.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from serve_process import lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async.directory import DirectoryNamespace, _manifest_snapshot
from lance_namespace_async.directory._manifest_snapshot import ManifestSnapshots
from lance_namespace_async.directory._open_datasets import manifest_identity

TABLE = ["a", "t"]


def numbers(start: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64())})


@pytest.fixture
async def dir_ns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[DirectoryNamespace]:
    # the manifest copy (which proves the table's location) trusted at once
    monkeypatch.setattr(_manifest_snapshot, "SETTLED_NS", 0)
    async with lna.connect("dir", {"root": str(tmp_path / "root")}) as namespace:
        assert isinstance(namespace, DirectoryNamespace)
        await namespace.create_namespace({"id": ["a"]})
        await namespace.create_table({"id": TABLE}, numbers(0, 10))
        await namespace.describe_table({"id": TABLE})  # the copy's answer confirmed
        yield namespace


async def count(ns: lna.AsyncLanceNamespace, version: int | None = None) -> int:
    request = {"id": TABLE} if version is None else {"id": TABLE, "version": version}
    return (await ns.count_table_rows(request)).count


async def ids(ns: lna.AsyncLanceNamespace) -> list[int]:
    answer = await ns.query_table(
        {
            "id": TABLE,
            "k": 1000,
            "vector": None,
            "filter": "id >= 0",
            "columns": {"column_names": ["id"]},
        }
    )
    table = answer if isinstance(answer, pa.Table) else pa.ipc.open_file(bytes(answer)).read_all()
    return sorted(table.column("id").to_pylist())


def kept(ns: DirectoryNamespace) -> list[object]:
    snapshots = ns._snapshots
    assert isinstance(snapshots, ManifestSnapshots)
    return [dataset for _, dataset in snapshots.datasets._open.values()]


async def test_a_kept_dataset_answers_again_until_another_writer_commits(
    dir_ns: DirectoryNamespace,
) -> None:
    location = (await dir_ns.describe_table({"id": TABLE})).location
    assert await count(dir_ns) == 10
    first = kept(dir_ns)
    assert len(first) == 1  # the direct read kept it
    assert await ids(dir_ns) == list(range(10))
    assert kept(dir_ns)[0] is first[0]  # reused: no commit since

    lance.write_dataset(numbers(10, 5), location, mode="append")  # another writer
    assert await count(dir_ns) == 15
    assert await ids(dir_ns) == list(range(15))
    assert first[0] not in kept(dir_ns)

    lance.write_dataset(numbers(100, 2), location, mode="overwrite")
    assert await ids(dir_ns) == [100, 101]
    assert await count(dir_ns, version=1) == 10  # an old version: its own kept dataset
    assert await count(dir_ns, version=2) == 15
    assert await count(dir_ns) == 2


async def test_a_table_made_again_at_its_location_is_not_answered_by_the_old_one(
    dir_ns: DirectoryNamespace,
) -> None:
    """Same location, same version number, other data: the manifest file's identity
    differs, so the kept dataset is not reused."""
    location = (await dir_ns.describe_table({"id": TABLE})).location
    assert await count(dir_ns) == 10
    path = location.removeprefix("file://")
    before = manifest_identity(f"{path}/_versions", None)
    shutil.rmtree(path)
    lance.write_dataset(numbers(50, 3), location)
    after = manifest_identity(f"{path}/_versions", None)
    assert before is not None
    assert after is not None
    assert before[0] == after[0] == 1
    assert await count(dir_ns) == 3
    assert await ids(dir_ns) == [50, 51, 52]


def test_lance_ns_serve_sees_another_writers_commit_on_the_next_request(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    with lna.connect_sync("dir", {"root": str(root)}) as setup:
        setup.create_namespace({"id": ["a"]})
        setup.create_table({"id": TABLE}, numbers(0, 10))
        location = setup.describe_table({"id": TABLE}).location
    options = ("--log-level", "error", "--storage-workers", "1")
    with (
        lance_ns_serve({"root": str(root)}, *options) as served,
        lna.connect_sync("rest", {"uri": served.uri}) as client,
    ):
        for expected in (10, 10):  # the second answered by the kept dataset
            assert client.count_table_rows({"id": TABLE}).count == expected
        lance.write_dataset(numbers(10, 7), location, mode="append")
        assert client.count_table_rows({"id": TABLE}).count == 17
        lance.write_dataset(numbers(0, 1), location, mode="overwrite")
        assert client.count_table_rows({"id": TABLE}).count == 1
        answer = client.query_table(
            {
                "id": TABLE,
                "k": 1000,
                "vector": None,
                "filter": "id >= 0",
                "columns": {"column_names": ["id"]},
            }
        )
        table = (
            answer if isinstance(answer, pa.Table) else pa.ipc.open_file(bytes(answer)).read_all()
        )
        assert table.column("id").to_pylist() == [0]
