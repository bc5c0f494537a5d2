"""The rest backend against pylance's own Rust server (RestAdapter) as independent peer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestAdapter

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.models import DescribeTableRequest
from lance_namespace_async.rest import RestNamespace


@pytest.fixture
def pylance_server(tmp_path: Path) -> Iterator[str]:
    """pylance's RestAdapter serving its DirectoryNamespace on a free loopback port."""
    adapter = RestAdapter("dir", {"root": str(tmp_path / "served")}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        yield f"http://127.0.0.1:{adapter.port}"
    finally:
        adapter.stop()


@pytest.fixture
async def ns(pylance_server: str) -> AsyncIterator[RestNamespace]:
    async with lna.connect("rest", {"uri": pylance_server}) as namespace:
        assert isinstance(namespace, RestNamespace)
        yield namespace


def props(response: object) -> dict[str, str]:
    value = getattr(response, "properties", None)
    return dict(value.additional_properties) if hasattr(value, "additional_properties") else {}


async def test_namespace_lifecycle(ns: RestNamespace) -> None:
    created = await ns.create_namespace({"id": ["a"], "properties": {"owner": "ana"}})
    assert props(created) == {"owner": "ana"}
    await ns.create_namespace({"id": ["a", "b"]})
    assert (await ns.list_namespaces()).namespaces == ["a"]
    assert (await ns.list_namespaces({"id": ["a"]})).namespaces == ["b"]
    assert props(await ns.describe_namespace({"id": ["a"]})) == {"owner": "ana"}
    await ns.namespace_exists({"id": ["a", "b"]})
    await ns.namespace_exists()  # the root, addressed as "$"
    with pytest.raises(errors.NamespaceAlreadyExistsError) as exists:
        await ns.create_namespace({"id": ["a"]})
    assert exists.value.code == 2
    with pytest.raises(errors.NamespaceNotEmptyError):
        await ns.drop_namespace({"id": ["a"]})
    await ns.drop_namespace({"id": ["a", "b"]})
    await ns.drop_namespace({"id": ["a"]})
    with pytest.raises(errors.NamespaceNotFoundError) as missing:
        await ns.namespace_exists({"id": ["a"]})
    assert missing.value.code == 1


async def test_table_lifecycle(ns: RestNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    declared = await ns.declare_table({"id": ["a", "t"]})
    assert declared.location
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), declared.location, mode="overwrite")
    assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
    await ns.table_exists({"id": ["a", "t"]})
    described = await ns.describe_table(
        DescribeTableRequest(id=["a", "t"], load_detailed_metadata=True)
    )
    assert described.location == declared.location
    assert described.version == 1
    assert [f.name for f in described.schema.fields] == ["x"]
    versions = await ns.list_table_versions({"id": ["a", "t"]})
    assert [v.version for v in versions.versions] == [1]
    lance.write_dataset(pa.table({"x": [4]}), declared.location, mode="append")
    await ns.restore_table({"id": ["a", "t"], "version": 1})
    assert lance.dataset(declared.location).count_rows() == 3
    dropped = await ns.drop_table({"id": ["a", "t"]})
    assert dropped.location == declared.location
    with pytest.raises(errors.TableNotFoundError) as missing:
        await ns.describe_table({"id": ["a", "t"]})
    assert missing.value.code == 4


async def test_register_and_deregister(ns: RestNamespace, tmp_path: Path) -> None:
    await ns.create_namespace({"id": ["a"]})
    lance.write_dataset(pa.table({"x": [1]}), str(tmp_path / "served" / "loose"))
    await ns.register_table({"id": ["a", "r"], "location": "loose"})
    await ns.table_exists({"id": ["a", "r"]})
    with pytest.raises(errors.TableAlreadyExistsError):
        await ns.register_table({"id": ["a", "r"], "location": "loose"})
    deregistered = await ns.deregister_table({"id": ["a", "r"]})
    assert deregistered.location
    with pytest.raises(errors.TableNotFoundError):
        await ns.table_exists({"id": ["a", "r"]})
    assert lance.dataset(str(tmp_path / "served" / "loose")).count_rows() == 1


async def test_pagination_is_followed_by_the_crawler(ns: RestNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    for i in range(12):
        await ns.declare_table({"id": ["a", f"t{i:02d}"]})
    first = await ns.list_tables({"id": ["a"], "limit": 5})
    assert len(first.tables) == 5
    assert first.page_token
    found = sorted([t.id async for t in lna.crawl(ns, page_size=5)])
    assert found == [("a", f"t{i:02d}") for i in range(12)]
    names = [name async for name in lna.iter_tables(ns, ["a"], page_size=5)]
    assert names == [f"t{i:02d}" for i in range(12)]
    assert [name async for name in lna.iter_namespaces(ns, page_size=1)] == ["a"]


async def test_peer_errors_map_to_our_types(ns: RestNamespace) -> None:
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.describe_namespace({"id": ["ghost"]})
    with pytest.raises(errors.TableNotFoundError):
        await ns.table_exists({"id": ["ghost"]})
    await ns.declare_table({"id": ["t"]})
    with pytest.raises(errors.TableAlreadyExistsError):
        await ns.declare_table({"id": ["t"]})


async def test_bad_names_never_reach_the_server(ns: RestNamespace) -> None:
    for bad in (["a$b"], [""], ["x\n"]):
        with pytest.raises(errors.InvalidInputError):
            await ns.create_namespace({"id": bad})
    assert (await ns.list_namespaces()).namespaces == []


def test_pylance_writes_and_reads_through_our_sync_facade(pylance_server: str) -> None:
    with lna.connect_sync("rest", {"uri": pylance_server}) as ns:
        ns.create_namespace({"id": ["w"]})
        lance.write_dataset(pa.table({"x": [1, 2, 3]}), namespace_client=ns, table_id=["w", "t"])
        lance.write_dataset(
            pa.table({"x": [4]}), namespace_client=ns, table_id=["w", "t"], mode="append"
        )
        dataset = lance.dataset(namespace_client=ns, table_id=["w", "t"])
        assert dataset.count_rows() == 4
        assert sorted(dataset.to_table()["x"].to_pylist()) == [1, 2, 3, 4]


def test_custom_delimiter(pylance_server: str) -> None:
    with lna.connect_sync("rest", {"uri": pylance_server, "delimiter": "."}) as ns:
        ns.create_namespace({"id": ["a"]})
        ns.create_namespace({"id": ["a", "b"]})
        assert ns.list_namespaces({"id": ["a"]}).namespaces == ["b"]
        with pytest.raises(errors.InvalidInputError):
            ns.create_namespace({"id": ["a.b"]})
