"""Nothing is deleted outside the storage root, on every backend that deletes data (issue 14).

Servers: ``dir`` on real temporary directories (and our REST adapter, ``create_app``
under uvicorn on 127.0.0.1 with a bearer token, for the attack as it was reported);
``iceberg`` against the spec-checked Iceberg REST catalog (tests/iceberg_rest_server.py);
``unity`` against the spec-checked Unity server (tests/unity_server.py); ``glue``
against moto's server (tests/glue_fixtures.py), also with an S3 storage root on moto's
S3; ``hive`` against a real Hive Metastore 2.3.10 (tests/hive_metastore.py). Data is
real pylance tables on real directories (and moto S3 buckets).

Every route to deletion is tried (DropTable, DropNamespace Cascade, CreateNamespace and
RegisterTable Overwrite, what a rename leaves behind) with canaries: a folder outside
the root (a Lance table, plain files, a folder holding a table), a folder *beside* the
root (``<root>2``: prefix confusion), and another table's data inside the root. Each
canary is hashed file by file (contents, symlink targets) before and after.

"Another tool wrote the catalog" (entries our RegisterTable now refuses to make) is
simulated with our own RegisterTable whose placement check is switched off for the
planting call only; the drop that follows runs the real code.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest
from conftest import tree_digest
from fault_proxy import AdapterServer
from glue_fixtures import REGION, moto_glue, reset_moto, s3_client, use_fake_aws_env
from hive_metastore import Metastore, hive_metastore
from iceberg_rest_server import iceberg_catalog
from unity_server import unity_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._storage.places import Place, place_of
from lance_namespace_async._storage.tables import LanceTables

BACKENDS = ["dir", "iceberg", "unity", "glue", "hive"]


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_env(monkeypatch)


# -- evidence ------------------------------------------------------------------------------


def write_table(location: Path | str, rows: int = 3) -> str:
    lance.write_dataset(pa.table({"x": pa.array(range(rows), pa.int64())}), str(location))
    return str(location)


@dataclass
class Canaries:
    """What must survive: folders outside and beside the root, another table inside."""

    outside: Path
    beside: Path
    keepme: Path
    digests: dict[Path, dict[str, str]] = field(default_factory=dict)

    def seal(self) -> None:
        self.digests = {p: tree_digest(p) for p in (self.outside, self.beside, self.keepme)}
        assert all(self.digests.values()), "a canary is empty"

    def intact(self) -> None:
        for path, digest in self.digests.items():
            assert tree_digest(path) == digest, f"{path} changed"

    def nothing_lost(self) -> None:
        """Every file is still there, unchanged; only files were added (an Iceberg
        catalog writes its metadata files into a table's location when it registers)."""
        for path, digest in self.digests.items():
            now = tree_digest(path)
            assert digest.items() <= now.items(), f"{path} lost or changed files"


# -- the backends -------------------------------------------------------------------------


@dataclass
class Catalog:
    """A backend under attack: how to connect, and where its tables live."""

    impl: str
    properties: dict[str, str]
    root: Path
    namespace: list[str]
    ns: lna.AsyncLanceNamespace

    def table(self, name: str) -> list[str]:
        return [*self.namespace, name]

    @contextlib.asynccontextmanager
    async def connect(self, **extra: str) -> AsyncIterator[lna.AsyncLanceNamespace]:
        async with lna.connect(self.impl, {**self.properties, **extra}) as namespace:
            yield namespace

    async def create_table(self, name: str, rows: int = 3) -> Path:
        declared = await self.ns.declare_table({"id": self.table(name)})
        assert declared.location
        path = local(declared.location)
        write_table(path, rows)
        return path


def local(location: str) -> Path:
    place = place_of(location)
    assert place is not None, location
    assert place.local is not None, location
    return Path(place.local)


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    with moto_glue() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Metastore]:
    with hive_metastore(tmp_path_factory.mktemp("hms")) as running:
        yield running


@contextlib.contextmanager
def catalog_properties(
    impl: str, tmp_path: Path, root: Path, request: pytest.FixtureRequest | None
) -> Iterator[tuple[dict[str, str], list[str]]]:
    """Connection properties of ``impl`` on a running server, and the namespace to use."""
    if impl == "dir":
        yield {"root": str(root)}, ["n"]
    elif impl == "iceberg":
        with iceberg_catalog(tmp_path / "iceberg") as server:
            yield {"endpoint": server.uri, "root": str(root), "retry_backoff_ms": "1"}, ["wh", "n"]
    elif impl == "unity":
        with unity_catalog() as server:
            server.add_catalog("main")
            yield (
                {"endpoint": server.uri, "root": str(root), "retry_backoff_ms": "1"},
                [
                    "main",
                    "n",
                ],
            )
    elif impl == "glue":
        assert request is not None
        endpoint = request.getfixturevalue("moto_server")
        reset_moto(endpoint)
        properties = {"endpoint": endpoint, "region": REGION, "root": str(root)}
        yield {**properties, "child_catalogs": "false"}, ["n"]
    else:
        assert request is not None
        metastore: Metastore = request.getfixturevalue("metastore")
        yield {"uri": metastore.uri, "root": str(root)}, [f"d{uuid.uuid4().hex[:12]}"]


@pytest.fixture(params=BACKENDS)
async def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Catalog]:
    impl = str(request.param)
    root = tmp_path / "lance-root"
    root.mkdir()
    with catalog_properties(impl, tmp_path, root, request) as (properties, namespace):
        async with lna.connect(impl, properties) as ns:
            await ns.create_namespace({"id": namespace})
            try:
                yield Catalog(impl, properties, root, namespace, ns)
            finally:
                with contextlib.suppress(errors.LanceNamespaceError):
                    await ns.drop_namespace(
                        {"id": namespace, "behavior": "Cascade", "mode": "Skip"}
                    )


@pytest.fixture
async def canaries(catalog: Catalog, tmp_path: Path) -> Canaries:
    outside = tmp_path / "outside"
    write_table(outside / "t.lance")
    (outside / "plain").mkdir()
    (outside / "plain" / "notes.txt").write_text("not a table")
    write_table(outside / "holder" / "inner.lance")
    beside = catalog.root.parent / (catalog.root.name + "2")
    write_table(beside / "t")
    keepme = await catalog.create_table("keepme")
    found = Canaries(outside, beside, keepme)
    found.seal()
    return found


async def refused(call: Any) -> errors.InvalidInputError:
    with pytest.raises(errors.InvalidInputError) as caught:
        await call
    assert caught.value.code == 13
    return caught.value


async def gone(catalog: Catalog, table: list[str]) -> None:
    with pytest.raises(errors.TableNotFoundError):
        await catalog.ns.table_exists({"id": table})


# -- DropTable of a table registered outside the root ---------------------------------------


def spellings(path: Path) -> list[str]:
    """One place written the ways a client can write it."""
    quoted = path.as_uri().replace("t.lance", "%74.lance")
    return [
        str(path),
        path.as_uri(),
        f"file:{path}",
        str(path) + "/",
        str(path.parent / ".." / path.parent.name / path.name),
        quoted,
    ]


@pytest.mark.parametrize("spelling", range(6))
async def test_drop_of_a_table_registered_outside_the_root_keeps_its_data(
    catalog: Catalog, canaries: Canaries, spelling: int
) -> None:
    location = spellings(canaries.outside / "t.lance")[spelling]
    table = catalog.table("v")
    await catalog.ns.register_table({"id": table, "location": location})
    canaries.seal()  # an Iceberg catalog writes its metadata files into the location

    await catalog.ns.drop_table({"id": table})

    await gone(catalog, table)
    canaries.intact()


async def test_drop_of_a_table_registered_beside_the_root_keeps_its_data(
    catalog: Catalog, canaries: Canaries
) -> None:
    table = catalog.table("v")
    await catalog.ns.register_table({"id": table, "location": str(canaries.beside / "t")})
    canaries.seal()
    await catalog.ns.drop_table({"id": table})
    await gone(catalog, table)
    canaries.intact()


async def test_a_link_inside_the_root_to_a_folder_outside_is_never_followed(
    catalog: Catalog, canaries: Canaries
) -> None:
    link = catalog.root / "link"
    link.symlink_to(canaries.outside / "t.lance")
    table = catalog.table("v")
    await catalog.ns.register_table({"id": table, "location": str(link)})
    canaries.seal()
    await catalog.ns.drop_table({"id": table})
    canaries.intact()
    assert link.is_symlink()


async def test_drop_allowed_locations_lets_the_operator_delete_outside_the_root(
    catalog: Catalog, canaries: Canaries
) -> None:
    allowed = str(canaries.outside)
    async with catalog.connect(drop_allowed_locations=allowed) as ns:
        await ns.register_table(
            {"id": catalog.table("v"), "location": str(canaries.outside / "t.lance")}
        )
        await ns.register_table({"id": catalog.table("w"), "location": str(canaries.beside / "t")})
        await ns.drop_table({"id": catalog.table("v")})
        await ns.drop_table({"id": catalog.table("w")})
    assert not (canaries.outside / "t.lance").exists()
    assert (canaries.outside / "plain" / "notes.txt").read_text() == "not a table"
    assert canaries.digests[canaries.beside].items() <= tree_digest(canaries.beside).items()
    assert tree_digest(canaries.keepme) == canaries.digests[canaries.keepme]


# -- RegisterTable refuses what a drop could turn into a disaster ---------------------------


async def test_register_needs_a_lance_table_at_the_location(
    catalog: Catalog, canaries: Canaries
) -> None:
    for location in (canaries.outside / "plain", canaries.outside / "missing"):
        error = await refused(
            catalog.ns.register_table({"id": catalog.table("v"), "location": str(location)})
        )
        assert "no Lance table" in str(error)
    await gone(catalog, catalog.table("v"))
    canaries.intact()


async def test_register_refuses_the_root_and_what_holds_it(
    catalog: Catalog, canaries: Canaries
) -> None:
    write_table(catalog.root / "rootdata")  # even a root that is a Lance table itself
    for location in (
        str(catalog.root),
        catalog.root.as_uri() + "/",
        str(catalog.root.parent),
        "/",
    ):
        await refused(catalog.ns.register_table({"id": catalog.table("v"), "location": location}))
    await gone(catalog, catalog.table("v"))
    canaries.intact()


async def test_register_refuses_another_tables_place(catalog: Catalog, canaries: Canaries) -> None:
    write_table(canaries.keepme / "nested")
    canaries.seal()
    for location in (
        str(canaries.keepme),  # another table's data
        canaries.keepme.as_uri() + "/",
        str(canaries.keepme / "nested"),  # inside another table
        str(canaries.outside / "holder"),  # holds a table: not one itself
    ):
        await refused(catalog.ns.register_table({"id": catalog.table("v"), "location": location}))
    write_table(canaries.outside / "holder")  # a table holding a table
    canaries.seal()
    await refused(
        catalog.ns.register_table(
            {"id": catalog.table("v"), "location": str(canaries.outside / "holder")}
        )
    )
    await gone(catalog, catalog.table("v"))
    canaries.intact()


async def test_declare_refuses_the_root_and_another_tables_place(
    catalog: Catalog, canaries: Canaries
) -> None:
    # (the directory namespace declares only at its own layout's location: 13 as well)
    for location in (str(catalog.root), str(canaries.keepme), str(canaries.outside / "t.lance")):
        await refused(catalog.ns.declare_table({"id": catalog.table("v"), "location": location}))
    await gone(catalog, catalog.table("v"))
    canaries.intact()


# -- every other route to deletion --------------------------------------------------------------


async def test_cascade_drops_tables_inside_the_root_and_keeps_data_outside(
    catalog: Catalog, canaries: Canaries
) -> None:
    doomed = await catalog.create_table("doomed")
    await catalog.ns.register_table(
        {"id": catalog.table("v"), "location": str(canaries.outside / "t.lance")}
    )
    canaries.seal()
    await catalog.ns.drop_namespace({"id": catalog.namespace, "behavior": "Cascade"})
    assert not doomed.exists()
    assert not canaries.keepme.exists(), "the namespace's own tables go with it"
    assert tree_digest(canaries.outside) == canaries.digests[canaries.outside]
    assert tree_digest(canaries.beside) == canaries.digests[canaries.beside]


async def test_create_namespace_overwrite_keeps_data_registered_outside(
    catalog: Catalog, canaries: Canaries
) -> None:
    await catalog.ns.register_table(
        {"id": catalog.table("v"), "location": str(canaries.outside / "t.lance")}
    )
    await catalog.ns.register_table(
        {"id": catalog.table("w"), "location": str(canaries.beside / "t")}
    )
    canaries.seal()
    await catalog.ns.create_namespace({"id": catalog.namespace, "mode": "Overwrite"})
    await gone(catalog, catalog.table("v"))
    assert not canaries.keepme.exists(), "the namespace's own table was dropped with it"
    assert tree_digest(canaries.outside) == canaries.digests[canaries.outside]
    assert tree_digest(canaries.beside) == canaries.digests[canaries.beside]


async def test_register_overwrite_deletes_nothing(catalog: Catalog, canaries: Canaries) -> None:
    table = catalog.table("v")
    await catalog.ns.register_table({"id": table, "location": str(canaries.outside / "t.lance")})
    await catalog.ns.register_table(
        {"id": table, "location": str(canaries.beside / "t"), "mode": "Overwrite"}
    )
    canaries.seal()
    await catalog.ns.register_table(
        {"id": table, "location": str(canaries.outside / "t.lance"), "mode": "Overwrite"}
    )
    await catalog.ns.drop_table({"id": table})
    canaries.nothing_lost()


@pytest.mark.parametrize("catalog", ["dir", "iceberg", "glue", "hive"], indirect=True)
async def test_a_renamed_table_takes_only_its_own_data_with_it(
    catalog: Catalog, canaries: Canaries
) -> None:
    """(Unity has no RenameTable.)"""
    moved = await catalog.create_table("old")
    await catalog.ns.rename_table({"id": catalog.table("old"), "new_table_name": "new"})
    # the old name's default location still holds the renamed table's data: a new table
    # of the old name must not be declared on top of it (dir picks a fresh directory)
    if catalog.impl != "dir":
        with pytest.raises(errors.InvalidInputError, match="already stored there"):
            await catalog.ns.declare_table({"id": catalog.table("old")})
    else:
        await catalog.ns.declare_table({"id": catalog.table("old")})
        await catalog.ns.drop_table({"id": catalog.table("old")})
        assert (moved / "_versions").is_dir(), "dropping the old name took the new table's data"
    await catalog.ns.drop_table({"id": catalog.table("new")})
    assert not moved.exists()
    canaries.intact()


# -- entries another tool wrote: the drop itself refuses --------------------------------------


@contextlib.contextmanager
def placement_unchecked(monkeypatch: pytest.MonkeyPatch, schema_from: Path) -> Iterator[None]:
    """RegisterTable as a tool without our checks would do it (for planting only); a
    place without a table takes its schema from ``schema_from``."""

    async def anything_goes(self: LanceTables, location: str, **_: Any) -> Any:
        with contextlib.suppress(ValueError):
            return lance.dataset(location)
        return lance.dataset(str(schema_from))

    with monkeypatch.context() as patched:
        patched.setattr(LanceTables, "check_placement", anything_goes)
        yield


async def test_entries_pointing_at_the_root_or_another_table_are_dropped_without_data(
    catalog: Catalog, canaries: Canaries, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_table(catalog.root / "rootdata")
    write_table(canaries.outside / "holder")  # a table holding a table
    planted = {
        "atroot": str(catalog.root),
        "atkeep": str(canaries.keepme),
        "holder": str(canaries.outside / "holder"),
        "outside": str(canaries.outside / "t.lance"),
    }
    with placement_unchecked(monkeypatch, canaries.keepme):
        for name, location in planted.items():
            await catalog.ns.register_table({"id": catalog.table(name), "location": location})
    rootdata = tree_digest(catalog.root / "rootdata")
    canaries.seal()
    for name in planted:
        await catalog.ns.drop_table({"id": catalog.table(name)})
        await gone(catalog, catalog.table(name))
    canaries.intact()
    assert tree_digest(catalog.root / "rootdata") == rootdata
    await catalog.ns.declare_table({"id": catalog.table("still_works")})


# -- names are unique among a namespace's tables and namespaces (seed 002) ---------------------


@pytest.mark.parametrize("impl", ["dir", "iceberg"])
async def test_a_table_and_a_namespace_never_share_a_name(impl: str, tmp_path: Path) -> None:
    root = tmp_path / "lance-root"
    root.mkdir()
    with catalog_properties(impl, tmp_path, root, None) as (properties, parent):
        async with lna.connect(impl, properties) as ns:
            await ns.create_namespace({"id": parent})
            await ns.create_namespace({"id": [*parent, "collide"]})
            with pytest.raises(errors.TableAlreadyExistsError, match=r"namespace .*collide"):
                await ns.declare_table({"id": [*parent, "collide"]})
            with pytest.raises(errors.TableNotFoundError):
                await ns.table_exists({"id": [*parent, "collide"]})
            await ns.declare_table({"id": [*parent, "t"]})
            for mode in ("Create", "ExistOk", "Overwrite"):
                with pytest.raises(errors.NamespaceAlreadyExistsError, match=r"table .*t'"):
                    await ns.create_namespace({"id": [*parent, "t"], "mode": mode})
            await ns.table_exists({"id": [*parent, "t"]})
            with pytest.raises(errors.NamespaceNotFoundError):
                await ns.namespace_exists({"id": [*parent, "t"]})


# -- the attack as reported: against the REST adapter, with the bearer token ------------------


TOKEN = "deletion-safety-token"


@pytest.fixture
def adapter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "served"
    root.mkdir()
    server = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}), auth_token=TOKEN)
    server.start()
    try:
        yield server.uri, root
    finally:
        server.stop()


def test_the_reported_attack_against_the_adapter_deletes_nothing(
    adapter: tuple[str, Path], tmp_path: Path
) -> None:
    uri, root = adapter
    outside = tmp_path / "some" / "dir"
    outside.mkdir(parents=True)
    (outside / "precious.txt").write_text("keep me")
    write_table(tmp_path / "some" / "table")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=uri, headers=headers, timeout=30) as client:

        def post(path: str, body: dict[str, Any]) -> httpx.Response:
            return client.post(path, json=body)

        assert post("/v1/namespace/n/create", {}).status_code == 200
        assert post("/v1/table/keepme/declare", {}).status_code == 200
        write_table(root / "keepme.lance")
        before = {p: tree_digest(p) for p in (tmp_path / "some", root / "keepme.lance")}

        for location in (str(outside), str(root), str(root / "keepme.lance"), str(tmp_path)):
            answer = post("/v1/table/n$v/register", {"location": location})
            assert answer.status_code == 400, answer.text
            assert answer.json()["code"] == 13
            assert post("/v1/table/n$v/drop", {}).status_code == 404

        answer = post("/v1/table/n$v/register", {"location": str(tmp_path / "some" / "table")})
        assert answer.status_code == 200, answer.text
        assert post("/v1/table/n$v/drop", {}).status_code == 200

        assert {p: tree_digest(p) for p in before} == before
        assert client.get("/v1/namespace/n/table/list").status_code == 200


# -- locations: one place, however it is written ----------------------------------------------


def test_a_place_is_the_same_however_it_is_written(tmp_path: Path) -> None:
    target = tmp_path / "root" / "t"
    target.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "root")
    expected = place_of(str(target))
    for spelled in (
        target.as_uri(),
        f"file:{target}",
        f"file://localhost{target}",
        str(target) + "//",
        str(tmp_path / "root" / "x" / ".." / "t"),
        str(tmp_path / "link" / "t"),
        (tmp_path / "root").as_uri() + "/%74",
    ):
        assert place_of(spelled) == expected, spelled


def test_prefixes_compare_whole_segments_and_stores_compare_buckets() -> None:
    def at(location: str) -> Place:
        found = place_of(location)
        assert found is not None
        return found

    assert not at("/data/root2/t").within(at("/data/root"))
    assert at("/data/root/t").below(at("/data/root"))
    assert not at("/data/root").below(at("/data/root"))
    assert at("s3://bucket/root/t").below(at("s3a://BUCKET/root/"))
    assert not at("s3://other/root/t").within(at("s3://bucket/root"))
    assert not at("s3://bucket/root/t").within(at("/bucket/root"))
    for ambiguous in ("s3://bucket/root/../x", "s3://bucket/a/%2E%2E/b", "file://host/p", ""):
        assert place_of(ambiguous) is None, ambiguous


def test_drop_allowed_locations_must_be_absolute_places() -> None:
    for bad in ("relative/dir", "s3://bucket/../x"):
        with pytest.raises(errors.InvalidInputError, match="drop_allowed_locations"):
            lna.connect("dir", {"root": "/tmp/x", "drop_allowed_locations": bad})


async def test_a_root_table_that_links_outside_the_root_is_unlinked_not_emptied(
    tmp_path: Path,
) -> None:
    """The directory namespace's root tables *are* ``<root>/<name>.lance``: one that is a
    symlink to a folder outside the root is dropped by removing the link."""
    root = tmp_path / "lance-root"
    root.mkdir()
    outside = Path(write_table(tmp_path / "outside" / "t.lance"))
    before = tree_digest(outside)
    (root / "linked.lance").symlink_to(outside)
    async with lna.connect("dir", {"root": str(root)}) as ns:
        await ns.table_exists({"id": ["linked"]})
        await ns.drop_table({"id": ["linked"]})
        with pytest.raises(errors.TableNotFoundError):
            await ns.table_exists({"id": ["linked"]})
    assert not os.path.lexists(root / "linked.lance")
    assert tree_digest(outside) == before


def test_on_s3_bucket_and_key_prefix_decide_and_only_the_roots_tables_go(
    moto_server: str,
) -> None:
    """Glue on moto with an S3 storage root: tables registered beside the root's key prefix
    (``root2/``) or under the same prefix of another bucket keep every object; a table
    inside the root is deleted."""
    reset_moto(moto_server)
    s3 = s3_client(moto_server)
    for bucket in ("warehouse", "other"):
        s3.create_bucket(Bucket=bucket)
    storage = {
        "aws_endpoint": moto_server,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": REGION,
        "allow_http": "true",
    }
    data = pa.table({"x": pa.array(range(3), pa.int64())})
    for location in ("s3://warehouse/root2/t", "s3://other/root/db/t"):
        lance.write_dataset(data, location, storage_options=storage)

    def objects() -> dict[str, str]:
        found: dict[str, str] = {}
        for bucket in ("warehouse", "other"):
            for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
                found[f"{bucket}/{item['Key']}"] = item["ETag"]
        return found

    properties = {
        "endpoint": moto_server,
        "region": REGION,
        "root": "s3://warehouse/root",
        "child_catalogs": "false",
        **{f"storage.{k}": v for k, v in storage.items()},
    }
    with lna.connect_sync("glue", properties) as ns:
        ns.create_namespace({"id": ["db"]})
        lance.write_dataset(data, namespace_client=ns, table_id=["db", "inside"])
        before = objects()
        for name, location in (
            ("beside", "s3://warehouse/root2/t"),
            ("other", "s3://other/root/db/t"),
        ):
            ns.register_table({"id": ["db", name], "location": location})
            ns.drop_table({"id": ["db", name]})
        assert objects() == before
        ns.drop_table({"id": ["db", "inside"]})
    after = objects()
    assert not any(key.startswith("warehouse/root/") for key in after)
    assert after == {k: v for k, v in before.items() if not k.startswith("warehouse/root/")}
