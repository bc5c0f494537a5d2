"""The unity backend (seed 001) against the Unity Catalog look-alike, both release lines.

Server: the look-alike (tests/unity_server.py) as Unity 0.5+ (``release="0.6"``) and as
Unity 0.1-0.3 (``"0.3"``), the two ends of what Unity has answered; every test runs against
both. It validates every request and
response against our contract (tests/contracts/unity-catalog.yaml); the official
``unitycatalog-client`` SDK, run from its own virtualenv, reads back what our backend created.
With ``LANCE_NS_UNITY_URI`` set, the same tests run against that real Unity Catalog server
instead (tests/unity_real.py); bearer tokens and injected faults stay with the look-alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import lance
import pyarrow as pa
import pytest
from unity_real import unity_under_test
from unity_sdk import sdk_python, sdk_read
from unity_server import UnityServer, unity_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.unity import UnityNamespace, arrow_to_unity_columns

CAT = "main"


@pytest.fixture(params=["0.6", "0.3"])
def server(request: pytest.FixtureRequest) -> Iterator[UnityServer]:
    with unity_under_test(release=request.param) as running:
        running.add_catalog(CAT)
        yield running


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "lance-root"
    path.mkdir()
    return path


@pytest.fixture
async def ns(server: UnityServer, root: Path) -> AsyncIterator[UnityNamespace]:
    properties = {"endpoint": server.uri, "root": str(root), "retry_backoff_ms": "1"}
    async with lna.connect("unity", properties) as namespace:
        assert isinstance(namespace, UnityNamespace)
        yield namespace


def props(response: object) -> dict[str, str]:
    value = getattr(response, "properties", None)
    return dict(value.additional_properties) if hasattr(value, "additional_properties") else {}


def local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


# -- configuration and mapping --------------------------------------------------------


def test_properties_and_defaults() -> None:
    namespace = lna.connect("unity", {"endpoint": "http://127.0.0.1:1"})
    assert isinstance(namespace, UnityNamespace)
    assert namespace.root == "/tmp/lance"
    assert namespace.config.read_timeout == 300000
    assert namespace.config.connect_timeout == 10000
    for bad in ({}, {"endpoint": "localhost:8080"}):
        with pytest.raises(errors.InvalidInputError, match="endpoint"):
            lna.connect("unity", bad)


async def test_identifier_depth_is_enforced(ns: UnityNamespace) -> None:
    with pytest.raises(errors.InvalidInputError):
        await ns.create_namespace({"id": [CAT, "a", "b"]})
    with pytest.raises(errors.InvalidInputError):
        await ns.declare_table({"id": [CAT, "t"]})
    with pytest.raises(errors.InvalidInputError):
        await ns.describe_table({"id": [CAT, "s", "t", "extra"]})


# -- namespaces ------------------------------------------------------------------------


async def test_catalogs_and_schemas(ns: UnityNamespace, server: UnityServer) -> None:
    server.add_catalog("zeta")
    server.add_catalog("alpha")
    assert (await ns.list_namespaces()).namespaces == ["alpha", CAT, "zeta"]
    created = await ns.create_namespace({"id": [CAT, "sales"], "properties": {"owner": "ana"}})
    assert props(created)["owner"] == "ana"
    await ns.create_namespace({"id": [CAT, "hr"]})
    assert (await ns.list_namespaces({"id": [CAT]})).namespaces == ["hr", "sales"]
    assert (await ns.list_namespaces({"id": [CAT, "sales"]})).namespaces == []
    assert props(await ns.describe_namespace({"id": [CAT, "sales"]}))["owner"] == "ana"
    await ns.namespace_exists({"id": [CAT, "sales"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.namespace_exists({"id": [CAT, "ghost"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.list_namespaces({"id": ["ghost"]})
    with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
        await ns.create_namespace({"id": [CAT, "sales"]})
    assert caught.value.code == 2
    kept = await ns.create_namespace({"id": [CAT, "sales"], "mode": "EXIST_OK"})
    assert props(kept)["owner"] == "ana"
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.create_namespace({"id": ["ghost", "s"]})


async def test_catalog_level_create_where_the_server_allows_it(
    ns: UnityNamespace, server: UnityServer
) -> None:
    await ns.create_namespace({"id": ["newcat"], "properties": {"k": "v"}})
    assert "newcat" in server.catalogs
    server.allow_catalog_create = False
    with pytest.raises(errors.PermissionDeniedError):
        await ns.create_namespace({"id": ["refused"]})


async def test_drop_is_restrict_by_default(ns: UnityNamespace, root: Path) -> None:
    await ns.create_namespace({"id": [CAT, "s"]})
    await ns.declare_table({"id": [CAT, "s", "t"]})
    with pytest.raises(errors.NamespaceNotEmptyError) as caught:
        await ns.drop_namespace({"id": [CAT, "s"]})
    assert caught.value.code == 3
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.drop_namespace({"id": [CAT, "ghost"]})
    await ns.drop_namespace({"id": [CAT, "ghost"], "mode": "skip"})
    await ns.drop_namespace({"id": [CAT, "s"], "behavior": "Cascade"})
    assert (await ns.list_namespaces({"id": [CAT]})).namespaces == []


async def test_cascade_never_drops_foreign_tables(ns: UnityNamespace, server: UnityServer) -> None:
    await ns.create_namespace({"id": [CAT, "mixed"]})
    server.add_table(
        CAT,
        "mixed",
        "delta_table",
        table_type="EXTERNAL",
        data_source_format="DELTA",
        storage_location="file:///tmp/elsewhere",
    )
    with pytest.raises(errors.NamespaceNotEmptyError, match="delta_table"):
        await ns.drop_namespace({"id": [CAT, "mixed"], "behavior": "cascade"})
    assert f"{CAT}.mixed.delta_table" in server.tables


# -- tables -------------------------------------------------------------------------------


async def test_declare_list_describe(ns: UnityNamespace, server: UnityServer, root: Path) -> None:
    await ns.create_namespace({"id": [CAT, "s"]})
    declared = await ns.declare_table({"id": [CAT, "s", "t"], "properties": {"region": "eu"}})
    stored = server.tables[f"{CAT}.s.t"]
    assert stored["table_type"] == "EXTERNAL"
    assert stored["data_source_format"] == "TEXT"
    assert stored["properties"]["table_type"] == "lance"
    assert str(root / CAT / "s" / "t") in stored["storage_location"]
    assert declared.location == stored["storage_location"]
    with pytest.raises(errors.TableAlreadyExistsError) as caught:
        await ns.declare_table({"id": [CAT, "s", "t"]})
    assert caught.value.code == 5
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.declare_table({"id": [CAT, "ghost", "t"]})
    described = await ns.describe_table({"id": [CAT, "s", "t"]})
    assert described.location == declared.location
    assert described.storage_options.additional_properties == {"region": "eu"}
    assert props(described)["table_type"] == "lance"


async def test_list_tables_is_lance_only_sorted_and_paginated(
    ns: UnityNamespace, server: UnityServer
) -> None:
    await ns.create_namespace({"id": [CAT, "s"]})
    names = [f"t{i:02d}" for i in range(57)]  # more than one server page of 50
    for name in reversed(names):
        await ns.declare_table({"id": [CAT, "s", name]})
    server.add_table(
        CAT,
        "s",
        "aaa_delta",
        table_type="EXTERNAL",
        data_source_format="DELTA",
        storage_location="file:///tmp/x",
    )
    server.add_table(
        CAT,
        "s",
        "bbb_shouting",
        table_type="EXTERNAL",
        data_source_format="TEXT",
        storage_location="file:///tmp/y",
        properties={"table_type": "LANCE"},
    )
    listed = (await ns.list_tables({"id": [CAT, "s"]})).tables
    assert listed == sorted(["bbb_shouting", *names])
    seen: list[str] = []
    token = None
    while True:
        page = await ns.list_tables({"id": [CAT, "s"], "limit": 20, "page_token": token})
        seen += page.tables
        token = page.page_token
        if not token:
            break
    assert seen == listed
    with pytest.raises(errors.InvalidInputError) as caught:
        await ns.describe_table({"id": [CAT, "s", "aaa_delta"]})
    assert caught.value.code == 13
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.list_tables({"id": [CAT, "ghost"]})


async def test_register_converts_columns_and_detailed_describe_opens_the_table(
    ns: UnityNamespace, server: UnityServer, tmp_path: Path
) -> None:
    await ns.create_namespace({"id": [CAT, "s"]})
    location = str(tmp_path / "existing")
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "name": ["a", "b"],
            "price": pa.array([1, 2], pa.decimal128(10, 2)),
            "tags": pa.array([["x"], []], pa.list_(pa.string())),
        }
    )
    lance.write_dataset(data, location)
    await ns.register_table({"id": [CAT, "s", "r"], "location": location})
    columns = server.tables[f"{CAT}.s.r"]["columns"]
    assert [c["name"] for c in columns] == ["id", "name", "price", "tags"]
    assert [c["type_name"] for c in columns] == ["LONG", "STRING", "DECIMAL", "ARRAY"]
    assert columns[3]["type_text"] == "array<string>"
    assert columns[2]["type_precision"] == 10
    assert [c["position"] for c in columns] == [0, 1, 2, 3]
    detailed = await ns.describe_table({"id": [CAT, "s", "r"], "load_detailed_metadata": True})
    assert detailed.version == 1
    assert detailed.stats.num_fragments == 1
    with pytest.raises(errors.InvalidInputError, match="no Lance table"):
        await ns.register_table({"id": [CAT, "s", "bad"], "location": str(tmp_path / "nothing")})


async def test_exists_deregister_and_drop(ns: UnityNamespace, tmp_path: Path, root: Path) -> None:
    await ns.create_namespace({"id": [CAT, "s"]})
    location = str(root / "data")  # inside the storage root: a drop deletes it
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), location)
    await ns.register_table({"id": [CAT, "s", "t"], "location": location})
    await ns.table_exists({"id": [CAT, "s", "t"]})
    deregistered = await ns.deregister_table({"id": [CAT, "s", "t"]})
    assert location in deregistered.location
    assert lance.dataset(location).count_rows() == 3, "deregister keeps the data"
    with pytest.raises(errors.TableNotFoundError) as caught:
        await ns.table_exists({"id": [CAT, "s", "t"]})
    assert caught.value.code == 4
    await ns.register_table({"id": [CAT, "s", "t"], "location": location})
    await ns.drop_table({"id": [CAT, "s", "t"]})
    assert not Path(location).exists(), "drop deletes the data"


async def test_deregister_verifies_it_is_a_lance_table(
    ns: UnityNamespace, server: UnityServer
) -> None:
    await ns.create_namespace({"id": [CAT, "s"]})
    server.add_table(
        CAT,
        "s",
        "delta",
        table_type="EXTERNAL",
        data_source_format="DELTA",
        storage_location="file:///tmp/d",
    )
    with pytest.raises(errors.InvalidInputError):
        await ns.deregister_table({"id": [CAT, "s", "delta"]})
    assert f"{CAT}.s.delta" in server.tables


def test_arrow_to_unity_columns() -> None:
    schema = pa.schema(
        [
            pa.field("flag", pa.bool_(), nullable=False),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("ntz", pa.timestamp("us")),
            pa.field("m", pa.map_(pa.string(), pa.float64())),
            pa.field("s", pa.struct([pa.field("a", pa.int32())])),
        ]
    )
    columns = arrow_to_unity_columns(schema)
    assert [c["type_name"] for c in columns] == [
        "BOOLEAN",
        "TIMESTAMP",
        "TIMESTAMP_NTZ",
        "MAP",
        "STRUCT",
    ]
    assert columns[0]["nullable"] is False
    assert columns[3]["type_text"] == "map<string,double>"
    assert columns[4]["type_text"] == "struct<a:int>"
    assert '"type": "boolean"' in columns[0]["type_json"]


# -- independent checks, end to end, faults ---------------------------------------------------


def test_the_official_sdk_reads_what_we_created(server: UnityServer, tmp_path: Path) -> None:
    sdk_python()
    location = str(tmp_path / "sdk-table")
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}), location)
    with lna.connect_sync("unity", {"endpoint": server.uri, "root": str(tmp_path)}) as ns:
        ns.create_namespace({"id": [CAT, "s"], "properties": {"owner": "ana"}})
        ns.register_table(
            {"id": [CAT, "s", "t"], "location": location, "properties": {"region": "eu"}}
        )
        ns.declare_table({"id": [CAT, "s", "declared"]})
        described = ns.describe_table({"id": [CAT, "s", "t"]})
        declared = ns.describe_table({"id": [CAT, "s", "declared"]})
    seen = sdk_read(server.uri)
    assert CAT in [c["name"] for c in seen["catalogs"]]
    assert seen["schemas"][f"{CAT}.s"]["properties"] == {"owner": "ana"}
    table = seen["tables"][f"{CAT}.s.t"]
    assert table["table_type"] == "EXTERNAL"
    assert table["data_source_format"] == "TEXT"
    assert table["properties"] == {"table_type": "lance", "region": "eu"}
    assert table["storage_location"] == described.location
    assert local(table["storage_location"]).resolve() == Path(location).resolve()
    assert [
        (c["name"], c["type_name"], c["type_text"], c["position"], c["nullable"])
        for c in table["columns"]
    ] == [("id", "LONG", "bigint", 0, True), ("name", "STRING", "string", 1, True)]
    assert seen["tables"][f"{CAT}.s.declared"]["storage_location"] == declared.location


def test_pylance_writes_and_reads_through_our_sync_facade(
    server: UnityServer, tmp_path: Path
) -> None:
    with lna.connect_sync("unity", {"endpoint": server.uri, "root": str(tmp_path)}) as ns:
        ns.create_namespace({"id": [CAT, "s"]})
        lance.write_dataset(
            pa.table({"x": [1, 2, 3]}), namespace_client=ns, table_id=[CAT, "s", "t"]
        )
        lance.write_dataset(
            pa.table({"x": [4]}), namespace_client=ns, table_id=[CAT, "s", "t"], mode="append"
        )
        assert lance.dataset(namespace_client=ns, table_id=[CAT, "s", "t"]).count_rows() == 4


async def test_faults_are_retried_and_typed(ns: UnityNamespace, server: UnityServer) -> None:
    await ns.create_namespace({"id": [CAT, "s"]})
    server.fail_next(503, count=2)
    assert (await ns.list_tables({"id": [CAT, "s"]})).tables == []
    server.fail_next(429, headers={"Retry-After": "0"})
    await ns.namespace_exists({"id": [CAT, "s"]})
    server.fail_next(503, count=10)
    with pytest.raises(errors.ServiceUnavailableError):
        await ns.describe_namespace({"id": [CAT, "s"]})


async def test_a_next_page_token_naming_a_page_again_ends_the_listing(tmp_path: Path) -> None:
    """Look-alike only (a real Unity pages correctly): a page naming a token the listing
    already followed ends the call with InternalError instead of listing for ever, and a
    cascade that could not list everything deletes nothing."""
    with unity_catalog() as server:
        server.add_catalog(CAT)
        server.add_schema(CAT, "s")
        properties = {"endpoint": server.uri, "root": str(tmp_path), "retry_backoff_ms": "1"}
        async with lna.connect("unity", properties) as ns:
            for name in ("t1", "t2", "t3"):
                await ns.declare_table({"id": [CAT, "s", name]})
            server.page_size_limit = 1
            server.endless_pages = True
            with anyio.fail_after(30):
                with pytest.raises(errors.InternalError, match="page 2 of the listing"):
                    await ns.list_tables({"id": [CAT, "s"]})
                with pytest.raises(errors.InternalError, match="already given"):
                    await ns.drop_namespace({"id": [CAT, "s"], "behavior": "Cascade"})
            server.endless_pages = False
            assert (await ns.list_tables({"id": [CAT, "s"]})).tables == ["t1", "t2", "t3"]


async def test_bearer_token(tmp_path: Path) -> None:
    with unity_catalog(require_token="sesame") as server:
        server.add_catalog(CAT)
        good = {"endpoint": server.uri, "auth_token": "sesame", "root": str(tmp_path)}
        async with lna.connect("unity", good) as ns:
            assert CAT in (await ns.list_namespaces()).namespaces
        bad = {"endpoint": server.uri, "auth_token": "nope", "root": str(tmp_path)}
        async with lna.connect("unity", bad) as ns:
            with pytest.raises(errors.UnauthenticatedError) as caught:
                await ns.list_namespaces()
            assert "nope" not in str(caught.value)


async def test_rename_table_is_unsupported_and_says_why(ns: UnityNamespace, root: Path) -> None:
    """Unity OSS has no rename call; we do not emulate one (a re-created entry gets a new
    table_id, without the grants kept by the old one): code 0, the reason in the message,
    the table untouched and not listed as an operation."""
    await ns.create_namespace({"id": [CAT, "sales"]})
    await ns.declare_table({"id": [CAT, "sales", "t"]})
    with pytest.raises(errors.UnsupportedOperationError) as refused:
        await ns.rename_table({"id": [CAT, "sales", "t"], "new_table_name": "u"})
    assert refused.value.code == 0
    assert "no rename call" in str(refused.value)
    assert (await ns.list_tables({"id": [CAT, "sales"]})).tables == ["t"]
    assert "rename_table" not in UnityNamespace.list_operations()
