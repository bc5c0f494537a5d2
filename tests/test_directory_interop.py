"""On-disk interoperability of the ``dir`` backend with pylance's own DirectoryNamespace.

A catalog is a folder: Lance tables plus the ``__manifest`` table holding nested
namespaces, their properties and declared tables. Whichever implementation wrote
it, the other one must list, describe and read it identically, and see the
other's later mutations. pylance 14.0.2 (``lance.namespace.DirectoryNamespace``)
is the reference layout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as PylanceDirectoryNamespace

import lance_namespace_async as lna
from lance_namespace_async import errors

pytestmark = pytest.mark.interop


def _rows(tag: str, count: int, start: int = 0) -> pa.Table:
    """Rows that tell tables apart: ``id`` start.., ``tag`` naming the table."""
    return pa.table({"id": list(range(start, start + count)), "tag": [tag] * count})


def _read(namespace_client: object, table_id: list[str]) -> list[dict[str, object]]:
    """The rows of a table as pylance reads them through ``namespace_client``."""
    dataset = lance.dataset(namespace_client=namespace_client, table_id=table_id)
    return sorted(dataset.to_table().to_pylist(), key=lambda row: row["id"])


def _path_of(location: str) -> Path:
    """A local table location (plain path or file:// URI) as a resolved path."""
    return Path(urlparse(location).path if location.startswith("file:") else location).resolve()


def _file_uri(location: str) -> str:
    """A local location in the canonical ``file://`` form ours reports."""
    return location if "://" in location else Path(location).resolve().as_uri()


def _pylance(root: Path) -> PylanceDirectoryNamespace:
    return PylanceDirectoryNamespace(root=str(root))


def _pylance_tables(root: Path, namespace: list[str]) -> list[str]:
    return sorted(_pylance(root).list_tables(ln.ListTablesRequest(id=namespace)).tables)


def _pylance_has_table(root: Path, table_id: list[str]) -> bool:
    try:
        _pylance(root).describe_table(ln.DescribeTableRequest(id=table_id))
    except ln.TableNotFoundError:
        return False
    return True


@pytest.fixture
async def ours(root: Path) -> AsyncIterator[lna.AsyncLanceNamespace]:
    async with lna.connect("dir", {"root": str(root)}) as namespace:
        yield namespace


@pytest.fixture
def ours_sync(root: Path) -> Iterator[lna.SyncLanceNamespace]:
    with lna.connect_sync("dir", {"root": str(root)}) as namespace:
        yield namespace


# -- 1. a catalog written by pylance, used by ours ------------------------------------------


@dataclass
class PylanceCatalog:
    """What pylance wrote, as the expectations of the tests below."""

    root: Path
    #: table id -> rows written (None: declared only)
    tables: dict[tuple[str, ...], list[dict[str, object]] | None] = field(default_factory=dict)


PYLANCE_NAMESPACES = {
    ("a",): {"owner": "team-a", "tier": "gold"},
    ("a", "b"): {"purpose": "nested"},
}
PYLANCE_WRITTEN = [("root_t",), ("a", "t1"), ("a", "b", "t2")]
PYLANCE_DECLARED = ("a", "b", "declared")


@pytest.fixture
def pylance_catalog(root: Path) -> PylanceCatalog:
    """Nested namespaces with properties, tables at every level, one declared-only table.

    Everything is written by pylance alone: its DirectoryNamespace and
    ``lance.write_dataset(namespace_client=...)``; ``a.t1`` gets two versions.
    """
    pylance = _pylance(root)
    for namespace, properties in PYLANCE_NAMESPACES.items():
        pylance.create_namespace(
            ln.CreateNamespaceRequest(id=list(namespace), properties=properties)
        )
    catalog = PylanceCatalog(root=root)
    for count, table in enumerate(PYLANCE_WRITTEN, start=3):
        data = _rows("$".join(table), count)
        lance.write_dataset(data, namespace_client=pylance, table_id=list(table), mode="create")
        catalog.tables[table] = data.to_pylist()
    more = _rows("a$t1", 2, start=100)
    lance.write_dataset(more, namespace_client=pylance, table_id=["a", "t1"], mode="append")
    catalog.tables[("a", "t1")] = _rows("a$t1", 4).to_pylist() + more.to_pylist()
    pylance.declare_table(ln.DeclareTableRequest(id=list(PYLANCE_DECLARED)))
    catalog.tables[PYLANCE_DECLARED] = None
    return catalog


@pytest.mark.parametrize(
    ("namespace", "children"),
    [([], ["a"]), (["a"], ["b"]), (["a", "b"], [])],
    ids=["root", "a", "a.b"],
)
async def test_ours_lists_the_namespaces_pylance_created_at_every_level(
    pylance_catalog: PylanceCatalog,
    ours: lna.AsyncLanceNamespace,
    namespace: list[str],
    children: list[str],
) -> None:
    listed = await ours.list_namespaces({"id": namespace})

    assert sorted(listed.namespaces) == children


@pytest.mark.parametrize("namespace", [["a"], ["a", "b"]], ids=["a", "a.b"])
async def test_ours_describes_namespace_properties_exactly_as_pylance_stored_them(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace, namespace: list[str]
) -> None:
    described = await ours.describe_namespace({"id": namespace})
    by_pylance = _pylance(pylance_catalog.root).describe_namespace(
        ln.DescribeNamespaceRequest(id=namespace)
    )

    assert described.to_dict()["properties"] == PYLANCE_NAMESPACES[tuple(namespace)]
    assert described.to_dict()["properties"] == by_pylance.properties


@pytest.mark.parametrize(
    ("namespace", "tables"),
    [([], ["root_t"]), (["a"], ["t1"]), (["a", "b"], ["declared", "t2"])],
    ids=["root", "a", "a.b"],
)
async def test_ours_lists_pylance_tables_including_declared_ones(
    pylance_catalog: PylanceCatalog,
    ours: lna.AsyncLanceNamespace,
    namespace: list[str],
    tables: list[str],
) -> None:
    listed = await ours.list_tables({"id": namespace})

    assert sorted(listed.tables) == tables
    assert sorted(listed.tables) == _pylance_tables(pylance_catalog.root, namespace)


async def test_ours_lists_all_pylance_tables_recursively_as_dollar_joined_ids(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace
) -> None:
    listed = await ours.list_all_tables({})

    assert sorted(listed.tables) == ["a$b$declared", "a$b$t2", "a$t1", "root_t"]


@pytest.mark.parametrize("table", [*PYLANCE_WRITTEN, PYLANCE_DECLARED], ids=lambda t: ".".join(t))
async def test_ours_describes_pylance_tables_at_the_location_pylance_reports(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace, table: tuple[str, ...]
) -> None:
    """Same location; ours always reports local ones as ``file://`` URIs (pylance does not
    for root tables, which it finds by directory listing)."""
    described = await ours.describe_table({"id": list(table)})
    by_pylance = _pylance(pylance_catalog.root).describe_table(
        ln.DescribeTableRequest(id=list(table))
    )

    assert described.location == _file_uri(by_pylance.location)
    assert described.location.startswith("file://")
    assert described.table == table[-1]
    assert described.namespace == list(table[:-1])


@pytest.mark.parametrize("table", PYLANCE_WRITTEN, ids=lambda t: ".".join(t))
async def test_detailed_describe_of_a_pylance_table_reports_its_real_version_schema_and_stats(
    pylance_catalog: PylanceCatalog,
    ours: lna.AsyncLanceNamespace,
    table: tuple[str, ...],
) -> None:
    dataset = lance.dataset(namespace_client=_pylance(pylance_catalog.root), table_id=list(table))

    described = await ours.describe_table({"id": list(table), "load_detailed_metadata": True})

    assert described.is_only_declared is False
    assert described.version == dataset.version
    assert [f.name for f in described.schema.fields] == dataset.schema.names
    assert [f.type_.type_ for f in described.schema.fields] == ["int64", "utf8"]
    assert described.stats.num_fragments == len(dataset.get_fragments())
    assert described.stats.num_deleted_rows == 0
    written = pylance_catalog.tables[table]
    assert written is not None
    assert described.metadata.to_dict()["total_rows"] == str(len(written))


async def test_detailed_describe_of_a_table_pylance_only_declared_reports_no_data(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace
) -> None:
    described = await ours.describe_table(
        {"id": list(PYLANCE_DECLARED), "load_detailed_metadata": True}
    )

    assert described.is_only_declared is True
    assert described.to_dict().get("version") is None


@pytest.mark.parametrize("table", PYLANCE_WRITTEN, ids=lambda t: ".".join(t))
def test_pylance_reads_the_same_rows_through_our_sync_facade(
    pylance_catalog: PylanceCatalog, ours_sync: lna.SyncLanceNamespace, table: tuple[str, ...]
) -> None:
    assert _read(ours_sync, list(table)) == pylance_catalog.tables[table]
    assert _read(ours_sync, list(table)) == _read(_pylance(pylance_catalog.root), list(table))


@pytest.mark.parametrize("table", [*PYLANCE_WRITTEN, PYLANCE_DECLARED], ids=lambda t: ".".join(t))
async def test_ours_confirms_every_pylance_table_exists(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace, table: tuple[str, ...]
) -> None:
    assert (await ours.table_exists({"id": list(table)})).to_dict() == {}


@pytest.mark.parametrize(
    ("table", "error"),
    [
        (["a", "missing"], errors.TableNotFoundError),
        (["missing_root_table"], errors.TableNotFoundError),
        (["a", "nope", "t1"], errors.NamespaceNotFoundError),
    ],
    ids=["table-missing", "root-table-missing", "namespace-missing"],
)
async def test_ours_reports_what_pylance_never_wrote_as_not_found(
    pylance_catalog: PylanceCatalog,
    ours: lna.AsyncLanceNamespace,
    table: list[str],
    error: type[errors.LanceNamespaceError],
) -> None:
    with pytest.raises(error):
        await ours.table_exists({"id": table})


async def test_a_table_declared_by_ours_is_seen_by_pylance_as_declared(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace
) -> None:
    declared = await ours.declare_table({"id": ["a", "b", "by_ours"]})

    assert _pylance_tables(pylance_catalog.root, ["a", "b"]) == ["by_ours", "declared", "t2"]
    by_pylance = _pylance(pylance_catalog.root).describe_table(
        ln.DescribeTableRequest(id=["a", "b", "by_ours"])
    )
    assert by_pylance.location == declared.location


async def test_a_table_renamed_by_ours_moves_for_pylance_with_its_rows(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace
) -> None:
    await ours.rename_table({"id": ["a", "t1"], "new_table_name": "t1_renamed"})

    assert _pylance_tables(pylance_catalog.root, ["a"]) == ["t1_renamed"]
    assert not _pylance_has_table(pylance_catalog.root, ["a", "t1"])
    renamed = _read(_pylance(pylance_catalog.root), ["a", "t1_renamed"])
    assert renamed == pylance_catalog.tables[("a", "t1")]


async def test_a_table_dropped_by_ours_is_gone_for_pylance_with_its_data(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace
) -> None:
    location = (
        _pylance(pylance_catalog.root)
        .describe_table(ln.DescribeTableRequest(id=["a", "b", "t2"]))
        .location
    )
    assert _path_of(location).is_dir()

    dropped = await ours.drop_table({"id": ["a", "b", "t2"]})

    assert dropped.location == location
    assert _pylance_tables(pylance_catalog.root, ["a", "b"]) == ["declared"]
    assert not _pylance_has_table(pylance_catalog.root, ["a", "b", "t2"])
    assert not _path_of(location).exists()


async def test_a_cascading_namespace_drop_by_ours_removes_the_whole_subtree_for_pylance(
    pylance_catalog: PylanceCatalog, ours: lna.AsyncLanceNamespace
) -> None:
    pylance = _pylance(pylance_catalog.root)
    locations = [
        _path_of(pylance.describe_table(ln.DescribeTableRequest(id=list(t))).location)
        for t in [("a", "t1"), ("a", "b", "t2")]
    ]

    dropped = await ours.drop_namespace({"id": ["a"], "behavior": "Cascade"})

    assert dropped.to_dict()["properties"] == PYLANCE_NAMESPACES[("a",)]
    assert pylance.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []
    for namespace in (["a"], ["a", "b"]):
        with pytest.raises(ln.NamespaceNotFoundError):
            pylance.namespace_exists(ln.NamespaceExistsRequest(id=namespace))
    assert not any(path.exists() for path in locations)
    # what lived outside the dropped namespace is untouched
    assert _pylance_tables(pylance_catalog.root, []) == ["root_t"]
    assert _read(pylance, ["root_t"]) == pylance_catalog.tables[("root_t",)]


# -- 2. a catalog written by ours, used by pylance ------------------------------------------

OUR_NAMESPACES = {
    ("team",): {"owner": "ours", "env": "test"},
    ("team", "sub"): {"depth": "2"},
}
#: table id -> number of rows; written by pylance through our sync facade
OUR_WRITTEN = {("top",): 2, ("team", "events"): 5, ("team", "sub", "metrics"): 3}
OUR_DECLARED = ("team", "sub", "planned")
#: table id -> (folder under the root written directly, how ours registers it)
OUR_REGISTERED = {
    ("team", "relative"): ("raw/relative.lance", "relative"),
    ("team", "sub", "absolute"): ("raw/absolute.lance", "absolute"),
}


@pytest.fixture
def our_catalog(root: Path, ours_sync: lna.SyncLanceNamespace) -> dict[tuple[str, ...], int]:
    """Nested namespaces with properties, written, declared and registered tables, all by ours.

    Returns the row count of every table holding data.
    """
    for namespace, properties in OUR_NAMESPACES.items():
        ours_sync.create_namespace({"id": list(namespace), "properties": properties})
    ours_sync.declare_table({"id": list(OUR_DECLARED)})
    counts = dict(OUR_WRITTEN)
    for table, count in OUR_WRITTEN.items():
        lance.write_dataset(
            _rows("$".join(table), count),
            namespace_client=ours_sync,
            table_id=list(table),
            mode="create",
        )
    for count, (table, (folder, how)) in enumerate(OUR_REGISTERED.items(), start=4):
        lance.write_dataset(_rows("$".join(table), count), str(root / folder))
        location = folder if how == "relative" else str(root / folder)
        ours_sync.register_table({"id": list(table), "location": location})
        counts[table] = count
    return counts


@pytest.mark.parametrize(
    ("namespace", "children"),
    [([], ["team"]), (["team"], ["sub"]), (["team", "sub"], [])],
    ids=["root", "team", "team.sub"],
)
def test_pylance_lists_the_namespaces_ours_created(
    root: Path, our_catalog: dict[tuple[str, ...], int], namespace: list[str], children: list[str]
) -> None:
    listed = _pylance(root).list_namespaces(ln.ListNamespacesRequest(id=namespace))

    assert sorted(listed.namespaces) == children


@pytest.mark.parametrize("namespace", [["team"], ["team", "sub"]], ids=["team", "team.sub"])
def test_pylance_reads_the_namespace_properties_ours_stored(
    root: Path, our_catalog: dict[tuple[str, ...], int], namespace: list[str]
) -> None:
    described = _pylance(root).describe_namespace(ln.DescribeNamespaceRequest(id=namespace))

    assert described.properties == OUR_NAMESPACES[tuple(namespace)]


@pytest.mark.parametrize(
    ("namespace", "tables"),
    [
        ([], ["top"]),
        (["team"], ["events", "relative"]),
        (["team", "sub"], ["absolute", "metrics", "planned"]),
    ],
    ids=["root", "team", "team.sub"],
)
def test_pylance_lists_written_declared_and_registered_tables_of_ours(
    root: Path,
    our_catalog: dict[tuple[str, ...], int],
    ours_sync: lna.SyncLanceNamespace,
    namespace: list[str],
    tables: list[str],
) -> None:
    assert _pylance_tables(root, namespace) == tables
    assert sorted(ours_sync.list_tables({"id": namespace}).tables) == tables


@pytest.mark.parametrize("table", [*OUR_WRITTEN, *OUR_REGISTERED], ids=lambda t: ".".join(t))
def test_pylance_reads_the_rows_of_tables_ours_wrote_or_registered(
    root: Path, our_catalog: dict[tuple[str, ...], int], table: tuple[str, ...]
) -> None:
    rows = _read(_pylance(root), list(table))

    assert rows == _rows("$".join(table), our_catalog[table]).to_pylist()


@pytest.mark.parametrize("table", list(OUR_REGISTERED), ids=lambda t: ".".join(t))
def test_pylance_resolves_tables_ours_registered_inside_the_root_to_their_folder(
    root: Path,
    our_catalog: dict[tuple[str, ...], int],
    ours_sync: lna.SyncLanceNamespace,
    table: tuple[str, ...],
) -> None:
    folder = root / OUR_REGISTERED[table][0]

    by_pylance = _pylance(root).describe_table(ln.DescribeTableRequest(id=list(table)))
    by_ours = ours_sync.describe_table({"id": list(table)})

    assert _path_of(by_pylance.location) == folder.resolve()
    assert _path_of(by_ours.location) == folder.resolve()


def test_pylance_sees_a_table_ours_declared_as_declared_without_data(
    root: Path, our_catalog: dict[tuple[str, ...], int], ours_sync: lna.SyncLanceNamespace
) -> None:
    pylance = _pylance(root)

    pylance.table_exists(ln.TableExistsRequest(id=list(OUR_DECLARED)))
    by_pylance = pylance.describe_table(ln.DescribeTableRequest(id=list(OUR_DECLARED)))

    assert by_pylance.location == ours_sync.describe_table({"id": list(OUR_DECLARED)}).location
    assert not (_path_of(by_pylance.location) / "_versions").exists()


# -- 3. renames by ours, seen by pylance ----------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"),
    [
        pytest.param(["ns", "old"], ["ns", "new"], id="within-a-namespace"),
        pytest.param(["ns", "old"], ["other", "new"], id="to-another-namespace"),
        pytest.param(["old"], ["new"], id="within-the-root"),
    ],
)
def test_a_rename_by_ours_is_seen_by_pylance_old_id_gone_new_id_same_rows(
    root: Path, ours_sync: lna.SyncLanceNamespace, source: list[str], target: list[str]
) -> None:
    for namespace in (["ns"], ["other"]):
        ours_sync.create_namespace({"id": namespace})
    written = _rows("renamed", 4)
    lance.write_dataset(written, namespace_client=ours_sync, table_id=source, mode="create")

    ours_sync.rename_table(
        {"id": source, "new_table_name": target[-1], "new_namespace_id": target[:-1]}
    )

    assert not _pylance_has_table(root, source)
    assert source[-1] not in _pylance_tables(root, source[:-1])
    assert target[-1] in _pylance_tables(root, target[:-1])
    assert _read(_pylance(root), target) == written.to_pylist()
    assert _read(ours_sync, target) == written.to_pylist()


@pytest.mark.parametrize(
    ("source", "target"),
    [(["old"], ["ns", "new"]), (["ns", "old"], ["new"])],
    ids=["out-of-the-root", "into-the-root"],
)
def test_a_rename_between_the_root_and_a_namespace_is_refused_and_changes_nothing(
    root: Path, ours_sync: lna.SyncLanceNamespace, source: list[str], target: list[str]
) -> None:
    """Root tables are ``<root>/<name>.lance`` folders to pylance; they cannot move in or out."""
    ours_sync.create_namespace({"id": ["ns"]})
    written = _rows("stays", 2)
    lance.write_dataset(written, namespace_client=ours_sync, table_id=source, mode="create")

    with pytest.raises(errors.InvalidInputError):
        ours_sync.rename_table(
            {"id": source, "new_table_name": target[-1], "new_namespace_id": target[:-1]}
        )

    assert _read(_pylance(root), source) == written.to_pylist()
    assert not _pylance_has_table(root, target)
    assert _pylance_tables(root, target[:-1]) == []


# -- 4. tables registered outside the root --------------------------------------------------


@pytest.fixture(params=["path", "file-uri"])
def external(
    request: pytest.FixtureRequest, tmp_path: Path, ours_sync: lna.SyncLanceNamespace
) -> tuple[list[str], Path, pa.Table]:
    """A Lance table in a folder outside the root, registered by ours as ``ext.outside``.

    Registered once by plain absolute path and once by ``file://`` URI.
    """
    folder = tmp_path / "elsewhere" / "outside.lance"
    data = _rows("outside", 6)
    lance.write_dataset(data, str(folder))
    ours_sync.create_namespace({"id": ["ext"]})
    location = str(folder) if request.param == "path" else folder.as_uri()
    registered = ours_sync.register_table({"id": ["ext", "outside"], "location": location})
    assert _path_of(registered.location) == folder.resolve()
    return ["ext", "outside"], folder, data


def test_a_table_registered_outside_the_root_keeps_its_location_and_is_readable_through_ours(
    root: Path,
    ours_sync: lna.SyncLanceNamespace,
    external: tuple[list[str], Path, pa.Table],
) -> None:
    table, folder, data = external

    described = ours_sync.describe_table({"id": table})

    assert _path_of(described.location) == folder.resolve()
    assert not folder.resolve().is_relative_to(root.resolve())
    assert ours_sync.list_tables({"id": ["ext"]}).tables == ["outside"]
    assert _read(ours_sync, table) == data.to_pylist()


@pytest.mark.parametrize("operation", ["drop_table", "deregister_table"])
def test_drop_table_and_deregister_table_both_leave_an_external_folder(
    ours_sync: lna.SyncLanceNamespace,
    external: tuple[list[str], Path, pa.Table],
    operation: str,
) -> None:
    """Outside the root a drop only deregisters (issue 14: RegisterTable + DropTable
    deleted any directory the process could write)."""
    table, folder, data = external

    response = getattr(ours_sync, operation)({"id": table})

    assert _path_of(response.location) == folder.resolve()
    with pytest.raises(errors.TableNotFoundError):
        ours_sync.table_exists({"id": table})
    assert ours_sync.list_tables({"id": ["ext"]}).tables == []
    assert lance.dataset(str(folder)).to_table().to_pylist() == data.to_pylist()


def test_drop_table_deletes_an_external_folder_under_drop_allowed_locations(
    root: Path, external: tuple[list[str], Path, pa.Table]
) -> None:
    table, folder, _ = external
    allowed = {"root": str(root), "drop_allowed_locations": str(folder.parent)}
    with lna.connect_sync("dir", allowed) as ours:
        response = ours.drop_table({"id": table})

        assert _path_of(response.location) == folder.resolve()
        assert not folder.exists()
        assert folder.parent.exists(), "the allowed prefix itself stays"
