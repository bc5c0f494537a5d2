"""The directory backend's copy of the manifest (``_manifest_snapshot``): reads answer from
it only while it is the manifest's current state, and answer exactly what pylance does.

No server: the directory backend over real pylance on real temporary directories. Two
backends on one root stand for two processes sharing a catalog. ``SETTLED_NS`` (how long
the manifest must have been still before its state proves a copy current) is set to 0
where a test writes and reads at once, and to an hour where a test needs the manifest
to count as still changing.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import lance
import pytest
from conftest import sample_table

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.directory import DirectoryNamespace, _manifest_snapshot


@pytest.fixture
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_manifest_snapshot, "SETTLED_NS", 0)


@pytest.fixture
async def writer(root: Path) -> AsyncIterator[DirectoryNamespace]:
    """A second backend on the same root: another process writing to the catalog."""
    async with lna.connect("dir", {"root": str(root)}) as namespace:
        assert isinstance(namespace, DirectoryNamespace)
        yield namespace


async def build_catalog(ns: DirectoryNamespace, root: Path) -> None:
    await ns.create_namespace({"id": ["a"]})
    await ns.create_namespace({"id": ["a", "b"]})
    await ns.create_namespace({"id": ["empty"]})
    for name in ("zz", "Mm", "aa", "m1"):
        await ns.declare_table({"id": ["a", name]})
    await ns.declare_table({"id": ["a", "b", "deep"]})
    declared = await ns.declare_table({"id": ["a", "made"]})
    lance.write_dataset(sample_table(2), declared.location, mode="overwrite")
    await ns.declare_table({"id": ["a", "with_props"], "properties": {"owner": "ana"}})
    lance.write_dataset(sample_table(1), str(root / "loose"))
    await ns.register_table({"id": ["a", "loose"], "location": "loose"})
    outside = root.parent / f"{root.name}-outside"
    lance.write_dataset(sample_table(1), str(outside))
    await ns.register_table({"id": ["a", "abs"], "location": str(outside)})
    await ns.declare_table({"id": ["rooted"]})


READS: list[tuple[str, list[str]]] = [
    (method, table)
    for table in (
        ["a", "zz"],
        ["a", "Mm"],
        ["a", "made"],
        ["a", "with_props"],
        ["a", "loose"],
        ["a", "abs"],
        ["a", "b", "deep"],
        ["rooted"],
        ["a", "missing"],
        ["a", "b"],
        ["ghost", "t"],
        ["a", "ghost", "t"],
    )
    for method in ("describe_table", "table_exists")
] + [
    ("list_tables", namespace)
    for namespace in (["a"], ["a", "b"], ["empty"], [], ["ghost"], ["a", "zz"])
]


async def answers(ns: DirectoryNamespace) -> list[Any]:
    found: list[Any] = []
    for method, identifier in READS:
        try:
            found.append(
                (method, identifier, (await getattr(ns, method)({"id": identifier})).to_dict())
            )
        except errors.LanceNamespaceError as exc:
            found.append((method, identifier, type(exc).__name__, exc.code, str(exc)))
    return found


async def test_answers_from_the_copy_are_pylances(
    ns: DirectoryNamespace, root: Path, settled_at_once: None
) -> None:
    await build_catalog(ns, root)
    copied = await answers(ns)
    snapshots = ns._snapshots
    assert snapshots is not None
    assert snapshots.confirmed  # the copy answered
    assert await ns._snapshot() is not None
    async with lna.connect("dir", {"root": str(root)}) as plain:
        assert isinstance(plain, DirectoryNamespace)
        plain._snapshots = None  # every read a pylance call, as before the copy
        assert await answers(plain) == copied


async def test_another_writers_commit_shows_at_once(
    ns: DirectoryNamespace, writer: DirectoryNamespace, root: Path, settled_at_once: None
) -> None:
    await build_catalog(ns, root)
    await answers(ns)  # the copy is in use
    before = await ns._snapshot()
    assert before is not None

    await writer.declare_table({"id": ["a", "new"]})
    assert (await ns.describe_table({"id": ["a", "new"]})).table == "new"
    assert "new" in (await ns.list_tables({"id": ["a"]})).tables

    await writer.drop_table({"id": ["a", "zz"]})
    with pytest.raises(errors.TableNotFoundError):
        await ns.describe_table({"id": ["a", "zz"]})
    with pytest.raises(errors.TableNotFoundError):
        await ns.table_exists({"id": ["a", "zz"]})
    assert "zz" not in (await ns.list_tables({"id": ["a"]})).tables

    await writer.rename_table({"id": ["a", "Mm"], "new_table_name": "renamed"})
    with pytest.raises(errors.TableNotFoundError):
        await ns.describe_table({"id": ["a", "Mm"]})
    described = await ns.describe_table({"id": ["a", "renamed"]})
    assert described.location == (await writer.describe_table({"id": ["a", "renamed"]})).location

    await writer.drop_namespace({"id": ["empty"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.list_tables({"id": ["empty"]})
    after = await ns._snapshot()
    assert after is not None
    assert after.state != before.state


async def test_a_manifest_that_just_changed_is_copied_at_its_latest_version(
    ns: DirectoryNamespace,
    writer: DirectoryNamespace,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_manifest_snapshot, "RECHECK_NS", 0)
    monkeypatch.setattr(_manifest_snapshot, "SETTLED_NS", 3600 * 10**9)  # never still here
    await ns.create_namespace({"id": ["a"]})
    await ns.declare_table({"id": ["a", "t"]})
    # a commit a moment ago: another could follow within the same clock tick, unseen by
    # the directory's times, so the copy is of an exact version, checked by version
    first = await ns._snapshot()
    assert first is not None
    assert not first.settled
    assert "a$t" in first.table_ids
    assert first.version == lance.dataset(str(root / "__manifest")).version

    await writer.declare_table({"id": ["a", "u"]})  # at once: maybe within the same tick
    second = await ns._snapshot()
    assert second is not None
    assert first.version is not None
    assert second.version == first.version + 1
    assert {"a$t", "a$u"} <= second.table_ids
    assert (await ns.describe_table({"id": ["a", "u"]})).table == "u"

    # once the directory is still, the copy is proven current by its state again
    monkeypatch.setattr(_manifest_snapshot, "SETTLED_NS", 0)
    settled = await ns._snapshot()
    assert settled is not None
    assert settled.settled
    assert settled.table_ids == second.table_ids


async def test_a_manifest_changing_all_the_time_is_left_to_pylance_for_a_while(
    ns: DirectoryNamespace, writer: DirectoryNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_manifest_snapshot, "RECHECK_NS", 3600 * 10**9)  # "a while": long
    monkeypatch.setattr(_manifest_snapshot, "SETTLED_NS", 3600 * 10**9)
    await ns.create_namespace({"id": ["a"]})
    snapshots = ns._snapshots
    assert snapshots is not None
    assert await ns._run(snapshots.current) is not None  # copied at its version
    await writer.declare_table({"id": ["a", "t"]})
    # a newer version again within RECHECK_NS: not copied again so soon
    assert await ns._run(snapshots.current) is None
    assert not snapshots.worth_checking()  # reads go to pylance without a look for a while
    assert (await ns.describe_table({"id": ["a", "t"]})).table == "t"


async def test_a_copy_whose_directory_moved_on_is_not_used(
    ns: DirectoryNamespace, root: Path, settled_at_once: None
) -> None:
    await ns.create_namespace({"id": ["a"]})
    await ns.declare_table({"id": ["a", "t"]})
    first = await ns._snapshot()
    assert first is not None
    assert "a$t" in first.table_ids
    # any change of _versions (a commit's file, a cleanup) makes the copy stale
    versions = root / "__manifest" / "_versions"
    (versions / "stray").write_bytes(b"")
    os.remove(versions / "stray")
    second = await ns._snapshot()
    assert second is not None
    assert second is not first


async def test_only_local_roots_without_storage_settings_are_copied(root: Path) -> None:
    async with lna.connect("dir", {"root": str(root), "storage.region": "x"}) as configured:
        assert isinstance(configured, DirectoryNamespace)
        assert configured._snapshots is None
    async with lna.connect("dir", {"root": str(root), "manifest_enabled": "false"}) as listing:
        assert isinstance(listing, DirectoryNamespace)
        assert listing._snapshots is None
    async with lna.connect("dir", {"root": "memory://catalog"}) as remote:
        assert isinstance(remote, DirectoryNamespace)
        assert remote._snapshots is None


async def test_our_own_declare_carries_the_copy_to_its_version(
    ns: DirectoryNamespace, root: Path
) -> None:
    """Right after our DeclareTable the copy is at the commit's version, with the new row:
    the next declare's checks (parent namespace, no namespace of that name) and reads
    need no pylance scan, and answer what pylance answers."""
    await build_catalog(ns, root)
    snapshots = ns._snapshots
    assert snapshots is not None
    # a manifest that just changed: copied at its exact version once RECHECK_NS passed
    await anyio.sleep(_manifest_snapshot.RECHECK_NS / 1e9 + 0.05)
    assert await ns._snapshot() is not None  # a copy to carry
    declared = await ns.declare_table({"id": ["a", "fresh"]})
    carried = snapshots._snapshot
    assert carried is not None
    assert carried.version == lance.dataset(str(root / "__manifest")).version
    assert "a$fresh" in carried.table_ids
    assert "a$fresh" in carried.children["a"]
    assert carried.children["a"] == sorted(carried.children["a"])
    assert snapshots.described(("a", "fresh"), carried.tables["a$fresh"])["location"] == (
        declared.location
    )
    assert await ns._snapshot() is carried  # proven current by the latest version
    async with lna.connect("dir", {"root": str(root)}) as plain:
        assert isinstance(plain, DirectoryNamespace)
        plain._snapshots = None
        assert await answers(plain) == await answers(ns)
        assert (await plain.list_tables({"id": ["a"]})).to_dict() == (
            await ns.list_tables({"id": ["a"]})
        ).to_dict()
    # the checks still hold from the carried copy
    await ns.create_namespace({"id": ["a", "sub"]})
    with pytest.raises(errors.TableAlreadyExistsError, match=r"namespace 'a\.sub'"):
        await ns.declare_table({"id": ["a", "sub"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.declare_table({"id": ["a", "nowhere", "t"]})


async def test_another_writers_commit_during_our_declare_is_not_hidden(
    ns: DirectoryNamespace,
    writer: DirectoryNamespace,
    root: Path,
    settled_at_once: None,
) -> None:
    """Another writer commits between our checks and our commit: the copy is not carried
    (two versions came after it), and both tables show.

    The other writer is pylance's own DirectoryNamespace on the same root (another
    process would be the same), committing its rewrite of the manifest just before our
    append of the row: Lance refuses ours over it, and pylance declares ours instead."""
    from lance.lance import PyDirectoryNamespace  # type: ignore[attr-defined]

    await build_catalog(ns, root)
    assert await ns._snapshot() is not None
    other = PyDirectoryNamespace(root=str(root), manifest_enabled="true")
    append = ns.manifest.append_table

    def other_writer_first(object_id: str, location: str, read_version: int) -> Any:
        other.declare_table({"id": ["a", "theirs"]})
        return append(object_id, location, read_version)

    ns.manifest.append_table = other_writer_first  # type: ignore[method-assign]
    try:
        await ns.declare_table({"id": ["a", "ours"]})
    finally:
        ns.manifest.append_table = append  # type: ignore[method-assign]
    kept = ns._snapshots._snapshot if ns._snapshots else None
    assert kept is None or "a$ours" not in kept.table_ids  # not carried over theirs
    tables = (await ns.list_tables({"id": ["a"]})).tables
    assert {"ours", "theirs"} <= set(tables)
    assert (await ns.describe_table({"id": ["a", "theirs"]})).location == (
        await writer.describe_table({"id": ["a", "theirs"]})
    ).location
    assert (await ns.table_exists({"id": ["a", "theirs"]})) is not None


async def test_another_writers_namespace_blocks_our_declare(
    ns: DirectoryNamespace, writer: DirectoryNamespace, root: Path, settled_at_once: None
) -> None:
    """A namespace another writer created right after our last write: our declare of a
    table with its name is refused (the copy is not stale)."""
    await build_catalog(ns, root)
    await ns.declare_table({"id": ["a", "one"]})
    carried = ns._snapshots._snapshot if ns._snapshots else None
    assert carried is not None
    assert "a$one" in carried.table_ids  # the copy was carried
    await writer.create_namespace({"id": ["a", "clash"]})
    with pytest.raises(errors.TableAlreadyExistsError):
        await ns.declare_table({"id": ["a", "clash"]})
    await writer.drop_namespace({"id": ["empty"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.declare_table({"id": ["empty", "t"]})
