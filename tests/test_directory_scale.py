"""The ``dir`` backend's own manifest writes, on catalogs of 10,000 tables, with pylance.

At scale the backend adds and deletes the table rows of ``__manifest`` itself (one small
fragment per added row, a deletion file per dropped one, compaction now and then) rather
than through pylance's rewrite of the whole manifest, and answers from its copy of the
manifest, carried over its own commits. The directory must stay pylance's: pylance 14.0.2's
``DirectoryNamespace`` (the reference, no server) reads and writes a catalog our backend
maintained, and ours reads and writes one pylance maintained, at 10,000 tables each, and
writers racing each other lose nothing and duplicate nothing.

The catalogs are built as ``benchmarks/dir_scale.py`` builds them (pylance's manifest,
its rows written in one commit), in well under a second; nothing here builds 100,000.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as PylanceDirectoryNamespace

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.directory._manifest import COMPACT_AT_FRAGMENTS

SIZE = 10_000
NS = "big"


def _build(root: Path, size: int = SIZE) -> list[str]:
    """A catalog of ``size`` declared tables in namespace ``big``, in pylance's layout."""
    pylance = PylanceDirectoryNamespace(root=str(root))
    pylance.create_namespace(ln.CreateNamespaceRequest(id=[NS]))
    seed = pylance.declare_table(ln.DeclareTableRequest(id=[NS, "seed"]))
    uri = str(root / "__manifest")
    schema = lance.dataset(uri).schema
    names = [f"t{i:05d}" for i in range(size)]
    ids = [f"{NS}${name}" for name in names]
    locations = [f"{hashlib.sha256(x.encode()).hexdigest()[:8]}_{x}" for x in ids]
    rows = pa.table(
        {
            "object_id": [NS, *ids],
            "object_type": ["namespace"] + ["table"] * size,
            "location": [None, *locations],
            "metadata": pa.nulls(size + 1, pa.string()),
            "base_objects": pa.nulls(size + 1, schema.field("base_objects").type),
        },
        schema=schema,
    )
    lance.write_dataset(rows, uri, mode="overwrite")
    for location in locations:
        os.mkdir(root / location)
        (root / location / ".lance-reserved").touch()
    shutil.rmtree(str(seed.location).removeprefix("file://"))
    return names


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _rows(tag: str) -> pa.Table:
    return pa.table({"id": [1, 2, 3], "tag": [tag] * 3})


def _all_tables(pylance: PylanceDirectoryNamespace) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = pylance.list_tables(ln.ListTablesRequest(id=[NS], limit=1000, page_token=token))
        names.extend(page.tables)
        token = page.page_token
        if not token:
            return names


def _manifest_ids(root: Path) -> list[str]:
    return (
        lance.dataset(str(root / "__manifest"))
        .to_table(columns=["object_id"])["object_id"]
        .to_pylist()
    )


@pytest.fixture
def catalog(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "catalog"
    return root, _build(root)


def test_pylance_reads_and_writes_a_catalog_ours_maintained(
    catalog: tuple[Path, list[str]],
) -> None:
    root, names = catalog
    ours = lna.connect_sync("dir", {"root": str(root)})
    try:
        declared = [f"d{i}" for i in range(COMPACT_AT_FRAGMENTS + 8)]  # past a compaction
        for name in declared:
            ours.declare_table(ln.DeclareTableRequest(id=[NS, name]))
        for name in ("c0", "c1", "c2"):
            ours.create_table(ln.CreateTableRequest(id=[NS, name]), _ipc(_rows(name)))
        lance.write_dataset(_rows("outside"), str(root / "elsewhere" / "r.lance"))
        ours.register_table(
            ln.RegisterTableRequest(id=[NS, "registered"], location="elsewhere/r.lance")
        )
        for name in ("c2", names[5], "d0"):
            ours.drop_table(ln.DropTableRequest(id=[NS, name]))
        # manifest: one row per object, never a duplicate
        ids = _manifest_ids(root)
        assert len(ids) == len(set(ids))
        assert len(lance.dataset(str(root / "__manifest")).get_fragments()) <= (
            COMPACT_AT_FRAGMENTS + 1
        )
    finally:
        ours.close()

    pylance = PylanceDirectoryNamespace(root=str(root))
    expected = (set(names) - {names[5]}) | set(declared[1:]) | {"c0", "c1", "registered"}
    assert set(_all_tables(pylance)) == expected
    for name in ("c0", "c1"):
        dataset = lance.dataset(namespace_client=pylance, table_id=[NS, name])
        assert dataset.to_table().column("tag").to_pylist() == [name] * 3
    described = pylance.describe_table(ln.DescribeTableRequest(id=[NS, "d5"]))
    assert Path(str(described.location).removeprefix("file://"), ".lance-reserved").exists()
    registered = lance.dataset(namespace_client=pylance, table_id=[NS, "registered"])
    assert registered.to_table().column("tag").to_pylist() == ["outside"] * 3
    for gone in ("c2", names[5], "d0"):
        with pytest.raises(Exception, match=r"not found|does not exist"):
            pylance.describe_table(ln.DescribeTableRequest(id=[NS, gone]))
    assert not any(p.name.endswith(f"{NS}$c2") for p in root.iterdir())  # its data went

    # pylance writes on top: its rewrite of the manifest keeps every row of ours
    pylance.declare_table(ln.DeclareTableRequest(id=[NS, "by_pylance"]))
    pylance.create_table(ln.CreateTableRequest(id=[NS, "p_data"]), _ipc(_rows("p")))
    pylance.drop_table(ln.DropTableRequest(id=[NS, "d1"]))
    assert set(_all_tables(pylance)) == (expected - {"d1"}) | {"by_pylance", "p_data"}


def test_ours_reads_and_writes_a_catalog_pylance_maintained(
    catalog: tuple[Path, list[str]],
) -> None:
    root, names = catalog
    pylance = PylanceDirectoryNamespace(root=str(root))
    pylance.declare_table(ln.DeclareTableRequest(id=[NS, "p0"]))
    pylance.create_table(ln.CreateTableRequest(id=[NS, "p1"]), _ipc(_rows("p1")))
    pylance.drop_table(ln.DropTableRequest(id=[NS, names[0]]))

    ours = lna.connect_sync("dir", {"root": str(root)})
    try:
        listed = _all_tables_of(ours)
        assert set(listed) == (set(names) - {names[0]}) | {"p0", "p1"}
        assert listed == sorted(listed)
        ours.table_exists(ln.TableExistsRequest(id=[NS, names[-1]]))
        with pytest.raises(errors.TableNotFoundError):
            ours.table_exists(ln.TableExistsRequest(id=[NS, names[0]]))
        data = lance.dataset(namespace_client=ours, table_id=[NS, "p1"])
        assert data.to_table().column("tag").to_pylist() == ["p1"] * 3

        # ours writes after pylance, pylance after ours, turn by turn: each sees all
        for turn in range(3):
            ours.declare_table(ln.DeclareTableRequest(id=[NS, f"o{turn}"]))
            pylance.declare_table(ln.DeclareTableRequest(id=[NS, f"q{turn}"]))
            ours.describe_table(ln.DescribeTableRequest(id=[NS, f"q{turn}"]))
            pylance.describe_table(ln.DescribeTableRequest(id=[NS, f"o{turn}"]))
        ours.drop_table(ln.DropTableRequest(id=[NS, "p1"]))
        with pytest.raises(errors.TableAlreadyExistsError):
            ours.declare_table(ln.DeclareTableRequest(id=[NS, "q1"]))  # pylance's row
    finally:
        ours.close()
    final = set(_all_tables(pylance))
    assert {"o0", "o1", "o2", "q0", "q1", "q2", "p0"} <= final
    assert "p1" not in final
    assert len(final) == SIZE - 1 + 7
    ids = _manifest_ids(root)
    assert len(ids) == len(set(ids))


def _all_tables_of(ours: lna.SyncLanceNamespace) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = ours.list_tables(ln.ListTablesRequest(id=[NS], limit=1000, page_token=token))
        names.extend(page.tables)
        token = page.page_token
        if not token:
            return names


def test_racing_writers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    """Ours and pylance declaring and dropping at once, and two of our namespaces (two
    processes' worth of copies) declaring the very same names at once."""
    root = tmp_path / "catalog"
    names = _build(root, 2_000)
    ours = lna.connect_sync("dir", {"root": str(root)})
    twin = lna.connect_sync("dir", {"root": str(root)})
    pylance = PylanceDirectoryNamespace(root=str(root))
    start = threading.Barrier(3)
    won: dict[str, list[str]] = {"ours": [], "twin": []}

    def pylance_writes() -> None:
        start.wait()
        for i in range(12):
            pylance.declare_table(ln.DeclareTableRequest(id=[NS, f"p{i}"]))
        pylance.drop_table(ln.DropTableRequest(id=[NS, names[1]]))

    def ours_writes(ns: lna.SyncLanceNamespace, who: str) -> None:
        start.wait()
        for i in range(12):
            try:
                ns.declare_table(ln.DeclareTableRequest(id=[NS, f"same{i}"]))
                won[who].append(f"same{i}")
            except (errors.TableAlreadyExistsError, errors.ConcurrentModificationError):
                pass
        if who == "ours":
            ns.drop_table(ln.DropTableRequest(id=[NS, names[2]]))

    failures: list[BaseException] = []

    def recorded(target: Callable[..., None], *args: object) -> threading.Thread:
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:  # reported by the assertion below
                failures.append(exc)

        return threading.Thread(target=run)

    threads = [
        recorded(pylance_writes),
        recorded(ours_writes, ours, "ours"),
        recorded(ours_writes, twin, "twin"),
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert failures == []
        # every name declared exactly once, by one of the two
        assert sorted(won["ours"] + won["twin"]) == sorted(f"same{i}" for i in range(12))
        ids = _manifest_ids(root)
        assert len(ids) == len(set(ids))
        expected = (
            (set(names) - {names[1], names[2]})
            | {f"p{i}" for i in range(12)}
            | {f"same{i}" for i in range(12)}
        )
        assert set(_all_tables(pylance)) == expected
        assert set(_all_tables_of(ours)) == expected
        assert set(_all_tables_of(twin)) == expected
    finally:
        ours.close()
        twin.close()


def test_a_symlinked_table_directory_still_claims_its_place(tmp_path: Path) -> None:
    """The index of places answers only while no table directory is a link: with one, the
    check falls back to every row's real path, and a place a link points at is refused."""
    root = tmp_path / "catalog"
    _build(root, 200)
    ours = lna.connect_sync("dir", {"root": str(root)})
    try:
        lance.write_dataset(_rows("first"), str(root / "first.data"))
        ours.register_table(ln.RegisterTableRequest(id=[NS, "first"], location="first.data"))
        lance.write_dataset(_rows("real"), str(root / "data" / "real.lance"))
        os.symlink(root / "data" / "real.lance", root / "alias")
        ours.register_table(ln.RegisterTableRequest(id=[NS, "aliased"], location="alias"))
        with pytest.raises(errors.InvalidInputError, match=r"'big\.aliased' is stored there"):
            ours.register_table(
                ln.RegisterTableRequest(id=[NS, "real"], location="data/real.lance")
            )
    finally:
        ours.close()


def test_the_root_listing_is_pylances_without_its_scan(tmp_path: Path) -> None:
    """The root's tables come from the manifest copy and one listing of the root (pylance
    looks into every table directory of every namespace: a minute at 100,000 tables):
    the same names as pylance's, for every state a root table can be in."""
    root = tmp_path / "catalog"
    _build(root, 300)
    pylance = PylanceDirectoryNamespace(root=str(root))
    pylance.create_table(ln.CreateTableRequest(id=["with_data"]), _ipc(_rows("x")))
    pylance.declare_table(ln.DeclareTableRequest(id=["declared"]))
    pylance.create_table(ln.CreateTableRequest(id=["deregistered"]), _ipc(_rows("x")))
    pylance.deregister_table(ln.DeregisterTableRequest(id=["deregistered"]))
    lance.write_dataset(_rows("v1"), str(root / "only_a_dir.lance"))
    (root / "empty.lance").mkdir()
    (root / "marked.lance").mkdir()
    (root / "marked.lance" / ".lance-deregistered").touch()
    (root / "not_a_table").mkdir()
    ours = lna.connect_sync("dir", {"root": str(root)})
    try:
        for include_declared in (None, True, False):
            request = ln.ListTablesRequest(id=[], include_declared=include_declared)
            expected = pylance.list_tables(request).tables
            assert ours.list_tables(request).tables == expected, include_declared
            paged = ln.ListTablesRequest(id=[], include_declared=include_declared, limit=2)
            assert ours.list_tables(paged).tables == expected[:2]
    finally:
        ours.close()


def test_an_append_racing_an_unlocked_writer_keeps_the_first_row(tmp_path: Path) -> None:
    """A writer that takes no lock (another tool appending to the manifest) and ours add
    the same id on top of the same version: Lance rebases one append over the other, the
    later fragment is taken back, and its writer is told the table exists."""
    from lance_namespace_async.directory._manifest import Manifest

    root = tmp_path / "catalog"
    _build(root, 50)
    manifest = Manifest(str(root), None, True)
    version = lance.dataset(str(root / "__manifest")).version
    manifest.append_table(f"{NS}$twice", "aaaa0000_big$twice", version)
    with pytest.raises(errors.TableAlreadyExistsError):
        manifest.append_table(f"{NS}$twice", "bbbb0000_big$twice", version)
    rows = lance.dataset(str(root / "__manifest")).to_table(filter=f"object_id = '{NS}$twice'")
    assert rows["location"].to_pylist() == ["aaaa0000_big$twice"]


def test_a_crawl_never_waits_for_pylances_listing(tmp_path: Path) -> None:
    """The first listings of a crawl arrive together while the copy of the manifest is
    being read: they wait for that copy rather than ask pylance, whose root listing looks
    into every table directory (77 s at 100,000 tables) and whose namespace listing
    scans the manifest page by page."""
    import asyncio
    from contextlib import aclosing
    from typing import Any

    root = tmp_path / "catalog"
    names = _build(root, 3_000)

    async def crawl() -> tuple[list[str], list[str]]:
        ns = lna.connect("dir", {"root": str(root)})
        asked: list[str] = []
        call = ns._call

        async def recorded(method: str, body: dict[str, Any]) -> dict[str, Any]:
            asked.append(method)
            return await call(method, body)

        ns._call = recorded  # type: ignore[method-assign]
        try:
            async with aclosing(lna.crawl(ns, page_size=100)) as tables:
                found = [table.id[-1] async for table in tables]
        finally:
            await ns.aclose()
        return found, asked

    found, asked = asyncio.run(crawl())
    assert sorted(found) == names
    assert "list_tables" not in asked
    assert "list_namespaces" not in asked


def test_a_lock_file_planted_as_a_link_is_never_followed(tmp_path: Path) -> None:
    """An attacker who can write into the catalog plants ``__manifest/.lna-write.lock``
    as a link to a file elsewhere: our writers refuse to open it through the link (a
    typed error), the file it points at is untouched, and nothing is declared."""
    from lance_namespace_async.directory._manifest import LOCK_FILE

    root = tmp_path / "catalog"
    _build(root, 20)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (root / "__manifest" / LOCK_FILE).symlink_to(victim)
    ours = lna.connect_sync("dir", {"root": str(root)})
    try:
        with pytest.raises(errors.LanceNamespaceError):
            ours.declare_table(ln.DeclareTableRequest(id=[NS, "planted"]))
        with pytest.raises(errors.TableNotFoundError):
            ours.table_exists(ln.TableExistsRequest(id=[NS, "planted"]))
    finally:
        ours.close()
    assert victim.read_text() == "keep me"
    assert not any(p.name.endswith(f"{NS}$planted") for p in root.iterdir())
