"""The iceberg backend (seeds 000 and 003) against two Iceberg REST catalog servers.

* The Iceberg project's own server, ``RESTCatalogServer`` from Maven Central (a
  ``JdbcCatalog`` on sqlite; tests/iceberg_real_server.py), started once per session:
  each test works below a top-level namespace of a unique name. It serves one catalog
  without a prefix, so the backend runs with ``warehouse_prefix=false``.
* Our look-alike (tests/iceberg_rest_server.py): pyiceberg's SqlCatalog behind a REST
  front that checks every request and response against our contract
  (tests/contracts/iceberg-rest.yaml), in both of its prefix modes. It stays for what the
  real server cannot show: the raw paths we send, injected faults, OAuth2, and one
  ``/v1/config`` per warehouse.

Most tests run against all three (``catalog``); pyiceberg's RestCatalog is the
independent reader of what we wrote.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import lance
import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from iceberg_real_server import ReferenceIcebergServer, unique_name
from iceberg_rest_server import IcebergCatalogServer, iceberg_catalog
from pyiceberg.catalog.rest import RestCatalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.iceberg import IcebergNamespace, arrow_to_iceberg_schema

WH = "wh"


@dataclass
class Catalog:
    """One server under test, and this test's place in it.

    ``id(...)`` is a Lance identifier below the test's base (``[wh]`` on the look-alike,
    ``[wh, <unique>]`` on the shared reference server); ``ice(...)`` is the same place as
    an Iceberg identifier for pyiceberg.
    """

    uri: str
    properties: dict[str, str]
    base: tuple[str, ...]
    lookalike: IcebergCatalogServer | None
    reference: ReferenceIcebergServer | None

    def id(self, *names: str) -> list[str]:
        return [WH, *self.base, *names]

    def ice(self, *names: str) -> tuple[str, ...]:
        return (*self.base, *names)

    def rest_client(self) -> RestCatalog:
        if self.lookalike is not None:
            return self.lookalike.rest_client(WH)
        assert self.reference is not None
        return self.reference.rest_client()


@pytest.fixture(params=["reference", "lookalike-defaults", "lookalike-none"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    if request.param == "reference":
        server: ReferenceIcebergServer = request.getfixturevalue("iceberg_reference")
        base = unique_name("t")
        server.rest_client().create_namespace(base)
        yield Catalog(server.uri, server.properties(), (base,), None, server)
        return
    mode = request.param.removeprefix("lookalike-")
    with iceberg_catalog(tmp_path / "iceberg", prefix_mode=mode) as lookalike:
        yield Catalog(lookalike.uri, {"endpoint": lookalike.uri}, (), lookalike, None)


@pytest.fixture
def lookalike(tmp_path: Path) -> Iterator[IcebergCatalogServer]:
    with iceberg_catalog(tmp_path / "iceberg") as server:
        yield server


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "lance-root"
    path.mkdir()
    return path


@pytest.fixture
async def ns(catalog: Catalog, root: Path) -> AsyncIterator[IcebergNamespace]:
    properties = {**catalog.properties, "root": str(root), "retry_backoff_ms": "1"}
    async with lna.connect("iceberg", properties) as namespace:
        assert isinstance(namespace, IcebergNamespace)
        yield namespace


def props(response: object) -> dict[str, str]:
    value = getattr(response, "properties", None)
    return dict(value.additional_properties) if hasattr(value, "additional_properties") else {}


async def write_table(ns: IcebergNamespace, table: list[str], rows: int = 3) -> str:
    declared = await ns.declare_table({"id": table})
    lance.write_dataset(pa.table({"x": list(range(rows))}), declared.location, mode="overwrite")
    return str(declared.location)


# -- configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "key"),
    [
        ({}, "endpoint"),
        ({"endpoint": "localhost:8181"}, "endpoint"),
        ({"endpoint": "http://x", "max_retries": "x"}, "max_retries"),
    ],
)
def test_properties_are_validated(properties: dict[str, str], key: str) -> None:
    with pytest.raises(errors.InvalidInputError, match=key):
        lna.connect("iceberg", properties)


def test_root_defaults_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = lna.connect("iceberg", {"endpoint": "http://127.0.0.1:1"})
    assert isinstance(namespace, IcebergNamespace)
    assert namespace.root == str(tmp_path)


# -- namespaces ------------------------------------------------------------------------


async def test_namespaces_nest_under_a_warehouse(ns: IcebergNamespace, catalog: Catalog) -> None:
    created = await ns.create_namespace({"id": catalog.id("sales"), "properties": {"owner": "ana"}})
    assert props(created)["owner"] == "ana"
    await ns.create_namespace({"id": catalog.id("sales", "eu")})
    assert (await ns.list_namespaces({"id": catalog.id()})).namespaces == ["sales"]
    assert (await ns.list_namespaces({"id": catalog.id("sales")})).namespaces == ["eu"]
    assert props(await ns.describe_namespace({"id": catalog.id("sales")}))["owner"] == "ana"
    await ns.namespace_exists({"id": catalog.id("sales", "eu")})
    await ns.namespace_exists({"id": catalog.id()})
    await ns.namespace_exists({"id": []})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.namespace_exists({"id": catalog.id("ghost")})
    pyiceberg = catalog.rest_client()
    assert catalog.ice("sales", "eu") in pyiceberg.list_namespaces(catalog.ice("sales"))


async def test_levels_travel_joined_by_0x1f_and_encoded_once(
    lookalike: IcebergCatalogServer, root: Path
) -> None:
    properties = {"endpoint": lookalike.uri, "root": str(root)}
    async with lna.connect("iceberg", properties) as ns:
        await ns.create_namespace({"id": [WH, "sales"]})
        await ns.create_namespace({"id": [WH, "sales", "eu"]})
        await ns.list_namespaces({"id": [WH, "sales", "eu"]})
        await ns.namespace_exists({"id": [WH, "sales", "eu"]})
    raw = [path for _, path in lookalike.requests]
    assert any("/namespaces/sales%1Feu" in path for path in raw)
    assert any("parent=sales%1Feu" in path for path in raw)
    assert not any("%251F" in path for path in raw)


async def test_a_level_holding_the_separator_is_refused(
    ns: IcebergNamespace, catalog: Catalog
) -> None:
    # the reference server joins levels with "." (namespace-separator %2E): we refuse such a
    # level ourselves; the look-alike's SqlCatalog refuses it with a 400
    with pytest.raises(errors.InvalidInputError):
        await ns.create_namespace({"id": catalog.id("has.dot")})
    assert "has.dot" not in (await ns.list_namespaces({"id": catalog.id()})).namespaces


async def test_a_nested_namespace_needs_its_parent(ns: IcebergNamespace, catalog: Catalog) -> None:
    # seed 000: NamespaceNotFound (1); the reference server itself would create it
    with pytest.raises(errors.NamespaceNotFoundError, match="missing does not exist") as caught:
        await ns.create_namespace({"id": catalog.id("missing", "child")})
    assert caught.value.code == 1
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.namespace_exists({"id": catalog.id("missing", "child")})
    assert (await ns.list_namespaces({"id": catalog.id()})).namespaces == []
    await ns.create_namespace({"id": catalog.id("present")})
    await ns.create_namespace({"id": catalog.id("present", "child")})
    assert (await ns.list_namespaces({"id": catalog.id("present")})).namespaces == ["child"]


async def test_nested_creates_cost_a_parent_check_and_a_name_check(
    lookalike: IcebergCatalogServer, root: Path
) -> None:
    async with lna.connect("iceberg", {"endpoint": lookalike.uri, "root": str(root)}) as ns:
        await ns.create_namespace({"id": [WH, "top"]})
        assert [m for m, _ in lookalike.requests if m != "GET"] == ["POST"]
        lookalike.requests.clear()
        await ns.create_namespace({"id": [WH, "top", "child"]})
        # one HEAD: the parent exists; one HEAD: no table of that name (names are unique
        # among a namespace's tables and namespaces)
        assert [m for m, _ in lookalike.requests] == ["HEAD", "HEAD", "POST"]


async def test_create_modes_and_errors(ns: IcebergNamespace, catalog: Catalog) -> None:
    await ns.create_namespace({"id": catalog.id("a"), "properties": {"v": "1"}})
    with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
        await ns.create_namespace({"id": catalog.id("a")})
    assert caught.value.code == 2
    kept = await ns.create_namespace(
        {"id": catalog.id("a"), "mode": "exist_ok", "properties": {"v": "2"}}
    )
    assert props(kept)["v"] == "1"
    replaced = await ns.create_namespace(
        {"id": catalog.id("a"), "mode": "OVERWRITE", "properties": {"v": "3"}}
    )
    assert props(replaced)["v"] == "3"
    with pytest.raises(errors.UnsupportedOperationError):
        await ns.create_namespace({"id": [WH]})


async def test_drop_is_idempotent_on_missing_and_restrict_on_non_empty(
    ns: IcebergNamespace, catalog: Catalog
) -> None:
    await ns.drop_namespace({"id": catalog.id("ghost")})  # seed 000: succeeds
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.drop_namespace({"id": catalog.id("ghost"), "mode": "Fail"})
    await ns.create_namespace({"id": catalog.id("a")})
    await ns.create_namespace({"id": catalog.id("a", "b")})
    with pytest.raises(errors.NamespaceNotEmptyError) as caught:
        await ns.drop_namespace({"id": catalog.id("a")})
    assert caught.value.code == 3
    await ns.drop_namespace({"id": catalog.id("a", "b")})
    await ns.drop_namespace({"id": catalog.id("a")})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.namespace_exists({"id": catalog.id("a")})


async def test_cascade_drops_lance_tables_but_never_foreign_ones(
    ns: IcebergNamespace, catalog: Catalog
) -> None:
    await ns.create_namespace({"id": catalog.id("a")})
    await ns.create_namespace({"id": catalog.id("a", "b")})
    location = await write_table(ns, catalog.id("a", "b", "t"))
    await ns.drop_namespace({"id": catalog.id("a"), "behavior": "Cascade"})
    assert (await ns.list_namespaces({"id": catalog.id()})).namespaces == []
    assert not Path(location).exists()
    await ns.create_namespace({"id": catalog.id("mixed")})
    iceberg_only = pa.schema([pa.field("v", pa.int64())])
    catalog.rest_client().create_table(catalog.ice("mixed", "plain"), schema=iceberg_only)
    with pytest.raises(errors.NamespaceNotEmptyError, match="plain"):
        await ns.drop_namespace({"id": catalog.id("mixed"), "behavior": "cascade"})
    assert catalog.rest_client().table_exists(catalog.ice("mixed", "plain"))


async def test_listing_follows_pages(ns: IcebergNamespace, catalog: Catalog) -> None:
    names = [f"n{i:02d}" for i in range(7)]
    for name in names:
        await ns.create_namespace({"id": catalog.id(name)})
    seen: list[str] = []
    token = None
    while True:
        page = await ns.list_namespaces({"id": catalog.id(), "limit": 3, "page_token": token})
        assert len(page.namespaces) <= 3
        seen += page.namespaces
        token = page.page_token
        if not token:
            break
    assert sorted(seen) == names
    assert sorted([n async for n in lna.iter_namespaces(ns, catalog.id(), page_size=2)]) == names


async def test_a_next_page_token_naming_a_page_again_ends_the_listing(
    lookalike: IcebergCatalogServer, root: Path
) -> None:
    """Look-alike only (the reference server pages correctly): the server pages on its
    own and a page names a token the listing already followed. Every walk over the pages
    ends with InternalError instead of going round for ever; a cascade that could not list
    everything drops nothing."""
    properties = {"endpoint": lookalike.uri, "root": str(root), "retry_backoff_ms": "1"}
    async with lna.connect("iceberg", properties) as ns:
        await ns.create_namespace({"id": [WH, "db"]})
        for name in ("c1", "c2", "c3"):
            await ns.create_namespace({"id": [WH, "db", name]})
            await ns.declare_table({"id": [WH, "db", f"t_{name}"]})
        lookalike.server_page_size = 2
        lookalike.endless_pages = True
        with anyio.fail_after(30):
            with pytest.raises(errors.InternalError, match=r"ListNamespaces wh\.db: page 2 of"):
                await ns.drop_namespace({"id": [WH, "db"], "behavior": "Cascade"})
            with pytest.raises(errors.InternalError, match="already given"):
                [t async for t in lna.crawl(ns, root=[WH, "db"], page_size=2)]
            with pytest.raises(errors.InternalError, match="already given"):
                [name async for name in lna.iter_tables(ns, [WH, "db"], page_size=2)]
        lookalike.endless_pages = False
        names = [name async for name in lna.iter_namespaces(ns, [WH, "db"], page_size=2)]
        assert names == ["c1", "c2", "c3"]
        tables = [name async for name in lna.iter_tables(ns, [WH, "db"], page_size=2)]
        assert tables == ["t_c1", "t_c2", "t_c3"]


async def test_warehouses_cannot_be_listed_from_the_root(ns: IcebergNamespace) -> None:
    with pytest.raises(errors.UnsupportedOperationError, match="warehouse"):
        await ns.list_namespaces({"id": []})


# -- tables ------------------------------------------------------------------------------


async def test_declare_uses_the_dummy_schema_and_default_location(
    ns: IcebergNamespace, catalog: Catalog, root: Path
) -> None:
    await ns.create_namespace({"id": catalog.id("db")})
    declared = await ns.declare_table({"id": catalog.id("db", "t")})
    assert declared.location == "/".join((str(root), *catalog.id("db", "t")))
    table = catalog.rest_client().load_table(catalog.ice("db", "t"))
    assert [f.name for f in table.schema().fields] == ["dummy"]
    assert table.properties["table_type"] == "lance"
    assert table.properties["managed_by"] == "storage"
    with pytest.raises(errors.TableAlreadyExistsError) as caught:
        await ns.declare_table({"id": catalog.id("db", "t")})
    assert caught.value.code == 5
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.declare_table({"id": catalog.id("ghost", "t")})
    with pytest.raises(errors.InvalidInputError):
        await ns.declare_table({"id": [WH, "t"]})


async def test_list_tables_keeps_lance_tables_only(ns: IcebergNamespace, catalog: Catalog) -> None:
    await ns.create_namespace({"id": catalog.id("db")})
    for name in ("t1", "t2"):
        await ns.declare_table({"id": catalog.id("db", name)})
    pyiceberg = catalog.rest_client()
    pyiceberg.create_table(
        catalog.ice("db", "plain"), schema=pa.schema([pa.field("v", pa.int64())])
    )
    pyiceberg.create_table(
        catalog.ice("db", "shouting"),
        schema=pa.schema([pa.field("v", pa.int64())]),
        properties={"table_type": "LANCE"},
    )
    assert sorted((await ns.list_tables({"id": catalog.id("db")})).tables) == [
        "shouting",
        "t1",
        "t2",
    ]
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.list_tables({"id": catalog.id("ghost")})
    with pytest.raises(errors.InvalidInputError) as caught:
        await ns.describe_table({"id": catalog.id("db", "plain")})
    assert caught.value.code == 13


async def test_describe_returns_location_storage_options_and_details(
    ns: IcebergNamespace, catalog: Catalog
) -> None:
    await ns.create_namespace({"id": catalog.id("db")})
    declared = await ns.declare_table(
        {"id": catalog.id("db", "t"), "properties": {"aws_region": "eu-west-1"}}
    )
    plain = await ns.describe_table({"id": catalog.id("db", "t")})
    assert plain.location == declared.location
    assert plain.storage_options.additional_properties == {"aws_region": "eu-west-1"}
    assert not plain.version
    lance.write_dataset(pa.table({"x": [1, 2]}), declared.location)
    lance.write_dataset(pa.table({"x": [3]}), declared.location, mode="append")
    detailed = await ns.describe_table(
        {"id": catalog.id("db", "t"), "load_detailed_metadata": True}
    )
    assert detailed.version == 2
    assert detailed.stats.num_fragments == 2
    assert [f.name for f in detailed.schema.fields] == ["x"]
    with pytest.raises(errors.TableNotFoundError):
        await ns.describe_table({"id": catalog.id("db", "ghost")})


async def test_register_deregister_drop_and_exists(
    ns: IcebergNamespace, catalog: Catalog, tmp_path: Path, root: Path
) -> None:
    await ns.create_namespace({"id": catalog.id("db")})
    existing = str(root / "existing")  # inside the storage root: a drop deletes it
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), existing)
    await ns.register_table({"id": catalog.id("db", "r"), "location": existing})
    await ns.table_exists({"id": catalog.id("db", "r")})
    described = await ns.describe_table(
        {"id": catalog.id("db", "r"), "load_detailed_metadata": True}
    )
    assert described.location == existing
    assert described.version == 1
    with pytest.raises(errors.InvalidInputError, match="no Lance table"):
        await ns.register_table(
            {"id": catalog.id("db", "bad"), "location": str(tmp_path / "nothing")}
        )
    deregistered = await ns.deregister_table({"id": catalog.id("db", "r")})
    assert deregistered.location == existing
    assert lance.dataset(existing).count_rows() == 3, "deregister keeps the data"
    with pytest.raises(errors.TableNotFoundError):
        await ns.table_exists({"id": catalog.id("db", "r")})
    await ns.register_table({"id": catalog.id("db", "r"), "location": existing})
    await ns.drop_table({"id": catalog.id("db", "r")})
    assert not Path(existing).exists(), "drop deletes the data"


async def test_rename_within_a_warehouse(ns: IcebergNamespace, catalog: Catalog) -> None:
    await ns.create_namespace({"id": catalog.id("a")})
    await ns.create_namespace({"id": catalog.id("b")})
    location = await write_table(ns, catalog.id("a", "t"))
    await ns.rename_table(
        {"id": catalog.id("a", "t"), "new_table_name": "u", "new_namespace_id": catalog.id("b")}
    )
    assert (await ns.list_tables({"id": catalog.id("b")})).tables == ["u"]
    assert (await ns.describe_table({"id": catalog.id("b", "u")})).location == location
    with pytest.raises(errors.InvalidInputError):
        await ns.rename_table(
            {"id": catalog.id("b", "u"), "new_table_name": "v", "new_namespace_id": ["other", "b"]}
        )


async def test_crawl_a_warehouse(ns: IcebergNamespace, catalog: Catalog) -> None:
    await ns.create_namespace({"id": catalog.id("a")})
    await ns.create_namespace({"id": catalog.id("a", "b")})
    await ns.declare_table({"id": catalog.id("a", "t")})
    await ns.declare_table({"id": catalog.id("a", "b", "u")})
    found = sorted([t.id async for t in lna.crawl(ns, root=catalog.id(), describe=True)])
    assert found == [tuple(catalog.id("a", "b", "u")), tuple(catalog.id("a", "t"))]


# -- seed 003: managed_by=impl and Iceberg tooling ----------------------------------------


async def test_impl_managed_versions_go_through_update_table(
    ns: IcebergNamespace, catalog: Catalog, tmp_path: Path
) -> None:
    await ns.create_namespace({"id": catalog.id("db")})
    location = str(tmp_path / "managed")
    lance.write_dataset(pa.table({"x": [1]}), location)
    table_id = catalog.id("db", "m")
    await ns.register_table(
        {"id": table_id, "location": location, "properties": {"managed_by": "impl"}}
    )
    assert (
        catalog.rest_client().load_table(catalog.ice("db", "m")).metadata.current_snapshot_id == 1
    )
    lance.write_dataset(pa.table({"x": [2]}), location, mode="append")
    # the catalog, not the directory, decides the version of an impl-managed table
    assert (await ns.describe_table({"id": table_id})).version == 1
    assert await ns.commit_table_version(table_id, expected_version=1) == 2
    assert (await ns.describe_table({"id": table_id})).version == 2
    lance.write_dataset(pa.table({"x": [3]}), location, mode="append")
    with pytest.raises(errors.ConcurrentModificationError) as caught:
        await ns.commit_table_version(table_id, expected_version=1)  # a writer that raced
    assert caught.value.code == 14
    assert (await ns.describe_table({"id": table_id})).version == 2


async def test_loads_ask_for_the_current_snapshot_only(
    lookalike: IcebergCatalogServer, root: Path, tmp_path: Path
) -> None:
    # every Lance version of an impl-managed table is a snapshot: with snapshots=refs the
    # catalog sends the current one only, all the backend reads
    async with lna.connect("iceberg", {"endpoint": lookalike.uri, "root": str(root)}) as ns:
        await ns.create_namespace({"id": [WH, "db"]})
        location = str(tmp_path / "managed")
        lance.write_dataset(pa.table({"x": [1]}), location)
        table_id = [WH, "db", "m"]
        await ns.register_table(
            {"id": table_id, "location": location, "properties": {"managed_by": "impl"}}
        )
        for version in (2, 3):
            lance.write_dataset(pa.table({"x": [version]}), location, mode="append")
            assert await ns.commit_table_version(table_id, expected_version=version - 1) == version
        full = lookalike.rest_client(WH).load_table(("db", "m")).metadata
        assert [snapshot.snapshot_id for snapshot in full.snapshots] == [1, 2, 3]
        lookalike.load_snapshots.clear()
        assert (await ns.describe_table({"id": table_id})).version == 3
        assert (await ns.list_tables({"id": [WH, "db"]})).tables == ["m"]
        await ns.drop_table({"id": table_id})
    assert lookalike.load_snapshots == {"refs": 3}


async def test_tooling_mode_shows_the_real_columns_to_pyiceberg(
    catalog: Catalog, root: Path, tmp_path: Path
) -> None:
    properties = {**catalog.properties, "root": str(root), "iceberg_tooling": "true"}
    async with lna.connect("iceberg", properties) as ns:
        await ns.create_namespace({"id": catalog.id("db")})
        location = str(tmp_path / "tooled")
        data = pa.table(
            {
                "id": pa.array([1], pa.int64()),
                "name": ["a"],
                "score": pa.array([0.5], pa.float32()),
                "tags": pa.array([["x"]], pa.list_(pa.string())),
            }
        )
        lance.write_dataset(data, location)
        await ns.register_table({"id": catalog.id("db", "tooled"), "location": location})
    table = catalog.rest_client().load_table(catalog.ice("db", "tooled"))
    assert table.metadata.current_schema_id == 1
    assert [f.name for f in table.schema().fields] == ["id", "name", "score", "tags"]
    assert str(table.schema().find_field("score").field_type) == "float"
    assert table.metadata.current_snapshot_id == 1
    assert [entry.snapshot_id for entry in table.metadata.snapshot_log] == [1]


def test_arrow_to_iceberg_types() -> None:
    schema = pa.schema(
        [
            pa.field("i", pa.int32(), nullable=False),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("d", pa.decimal128(10, 2)),
            pa.field("v", pa.list_(pa.float32(), 4)),
            pa.field("s", pa.struct([pa.field("a", pa.string())])),
            pa.field("m", pa.map_(pa.string(), pa.int64())),
        ]
    )
    converted = arrow_to_iceberg_schema(schema)
    types = {f["name"]: f["type"] for f in converted["fields"]}
    assert converted["schema-id"] == 1
    assert types["i"] == "int"
    assert converted["fields"][0]["required"] is True
    assert types["ts"] == "timestamptz"
    assert types["d"] == "decimal(10, 2)"
    assert types["v"]["type"] == "list"
    assert types["v"]["element"] == "float"
    assert types["s"]["fields"][0]["type"] == "string"
    assert types["m"]["key"] == "string"
    assert types["m"]["value"] == "long"
    ids = [f["id"] for f in converted["fields"]]
    assert len(set(ids)) == len(ids)


# -- what the Iceberg reference server does (measured) ---------------------------------------
# Each fact is where it departs from our look-alike or from seed 000, and is why the
# backend or the fixtures do what they do; an upgrade that changes one fails here.


@pytest.fixture
def reference_http(iceberg_reference: ReferenceIcebergServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=iceberg_reference.uri, timeout=30) as client:
        yield client


def _create(http: httpx.Client, *levels: str) -> httpx.Response:
    return http.post("/v1/namespaces", json={"namespace": list(levels)})


def test_reference_serves_one_catalog_without_a_prefix(reference_http: httpx.Client) -> None:
    config = reference_http.get("/v1/config", params={"warehouse": "wh"}).json()
    assert "prefix" not in config["defaults"]
    assert "prefix" not in config["overrides"]
    # hence warehouse_prefix=false: seed 000's fallback (the warehouse as prefix) has no route
    routed = reference_http.get("/v1/wh/namespaces")
    assert routed.status_code == 400
    assert "No route" in routed.json()["error"]["message"]


def test_reference_joins_levels_with_a_dot_and_refuses_0x1f(reference_http: httpx.Client) -> None:
    config = reference_http.get("/v1/config").json()
    assert config["overrides"]["namespace-separator"] == "%2E"
    top = unique_name("sep")
    assert _create(reference_http, top, "child").status_code == 200
    assert reference_http.head(f"/v1/namespaces/{top}%2Echild").status_code == 204
    # the REST spec says servers must also accept %1F; Jetty refuses it before the catalog
    refused = reference_http.head(f"/v1/namespaces/{top}%1Fchild")
    assert refused.status_code == 400
    page = reference_http.get(f"/v1/namespaces/{top}%1Fchild")
    assert page.headers["content-type"].startswith("text/html")
    assert "Suspicious Path Character" in page.text


def test_reference_does_not_check_parents(reference_http: httpx.Client) -> None:
    top = unique_name("parent")
    assert _create(reference_http, top).status_code == 200
    # seed 000 wants NamespaceNotFound; the backend checks the parent itself
    assert reference_http.head(f"/v1/namespaces/{top}%2Emissing").status_code == 404
    assert _create(reference_http, top, "missing", "x").status_code == 200
    # ... and from then on the parent exists, through its child
    assert reference_http.head(f"/v1/namespaces/{top}%2Emissing").status_code == 204
    # and a table may be created in a namespace that does not exist (the look-alike: 404)
    body = {"name": "t", "schema": {"type": "struct", "fields": []}}
    created = reference_http.post(f"/v1/namespaces/{top}%2Eghost/tables", json=body)
    assert created.status_code == 200
    assert reference_http.head(f"/v1/namespaces/{top}%2Eghost").status_code == 204


def test_reference_reads_a_literal_dot_as_part_of_one_level(reference_http: httpx.Client) -> None:
    top = unique_name("dot")
    for levels in ((top,), (top, "a"), (top, "a", "b")):
        assert _create(reference_http, *levels).status_code == 200
    # the separator encoded: two levels, and a namespace with a child is not dropped
    assert reference_http.delete(f"/v1/namespaces/{top}%2Ea").status_code == 409
    # a literal "." (what urllib's quote leaves of "."): one level "<top>.a", which the
    # server finds, and drops although it has a child. So the backend encodes it, %2E.
    assert reference_http.get(f"/v1/namespaces/{top}.a").status_code == 200
    assert reference_http.delete(f"/v1/namespaces/{top}.a").status_code == 204


def test_reference_adds_its_own_table_properties_and_error_stacks(
    reference_http: httpx.Client,
) -> None:
    top = unique_name("props")
    assert _create(reference_http, top).status_code == 200
    body = {
        "name": "t",
        "schema": {"type": "struct", "fields": []},
        "properties": {"table_type": "lance"},
    }
    created = reference_http.post(f"/v1/namespaces/{top}/tables", json=body).json()
    # not storage options (see iceberg._ICEBERG_PROPERTY_FAMILIES)
    assert created["metadata"]["properties"]["write.parquet.compression-codec"] == "zstd"
    # every error carries the Java stack (our contract allows "stack")
    missing = reference_http.get(f"/v1/namespaces/{top}/tables/ghost").json()["error"]
    assert missing["type"] == "NoSuchTableException"
    assert missing["code"] == 404
    assert isinstance(missing["stack"], list)


# -- end to end, faults, auth -------------------------------------------------------------


def test_pylance_writes_and_reads_through_our_sync_facade(catalog: Catalog, root: Path) -> None:
    with lna.connect_sync("iceberg", {**catalog.properties, "root": str(root)}) as ns:
        ns.create_namespace({"id": catalog.id("db")})
        lance.write_dataset(
            pa.table({"x": [1, 2, 3]}), namespace_client=ns, table_id=catalog.id("db", "t")
        )
        lance.write_dataset(
            pa.table({"x": [4]}), namespace_client=ns, table_id=catalog.id("db", "t"), mode="append"
        )
        assert lance.dataset(namespace_client=ns, table_id=catalog.id("db", "t")).count_rows() == 4
    assert (
        catalog.rest_client().load_table(catalog.ice("db", "t")).properties["table_type"] == "lance"
    )


async def test_server_faults_are_retried(lookalike: IcebergCatalogServer, root: Path) -> None:
    properties = {"endpoint": lookalike.uri, "root": str(root), "retry_backoff_ms": "1"}
    async with lna.connect("iceberg", properties) as ns:
        await ns.create_namespace({"id": [WH, "db"]})
        lookalike.fail_next(503, count=2)
        assert (await ns.list_tables({"id": [WH, "db"]})).tables == []
        lookalike.fail_next(429, headers={"Retry-After": "0"})
        await ns.namespace_exists({"id": [WH, "db"]})
        lookalike.fail_next(503, count=10)
        with pytest.raises(errors.ServiceUnavailableError):
            await ns.describe_namespace({"id": [WH, "db"]})


async def test_one_config_and_one_token_call_for_a_thousand_first_calls(tmp_path: Path) -> None:
    with iceberg_catalog(tmp_path / "iceberg", require_auth=True) as catalog:
        catalog.rest_client(WH).create_namespace("db")
        catalog.config_requests.clear()
        tokens_before = catalog.token_requests
        properties = {"endpoint": catalog.uri, "credential": "cid:csecret", "root": str(tmp_path)}
        async with lna.connect("iceberg", properties) as ns, anyio.create_task_group() as group:
            for _ in range(1000):
                group.start_soon(ns.namespace_exists, {"id": [WH, "db"]})
        assert catalog.config_requests[WH] == 1
        assert catalog.token_requests - tokens_before == 1


async def test_a_wrong_credential_is_unauthenticated(tmp_path: Path) -> None:
    with iceberg_catalog(tmp_path / "iceberg", require_auth=True) as catalog:
        properties = {"endpoint": catalog.uri, "credential": "cid:WRONG", "root": str(tmp_path)}
        async with lna.connect("iceberg", properties) as ns:
            with pytest.raises(errors.UnauthenticatedError) as caught:
                await ns.namespace_exists({"id": [WH]})
        assert "WRONG" not in str(caught.value)
