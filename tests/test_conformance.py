"""The shared conformance suite: protocol semantics every full backend must show.

Parametrized over every backend that implements the whole protocol here:
``dir`` directly, and ``rest`` talking to our adapter server that serves a
``dir`` backend (our client <-> our server). Backend-specific behaviour lives in
each backend's own test module.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_namespace_async as lna
from lance_namespace_async import AsyncLanceNamespace, errors


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def adapter_uri(tmp_path: Path) -> Iterator[str]:
    """Our adapter server over a dir backend, on a free loopback port."""
    import uvicorn

    from lance_namespace_async.server import create_app

    backend = lna.connect("dir", {"root": str(tmp_path / "served")})
    port = _free_port()
    config = uvicorn.Config(
        create_app(backend), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("adapter server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture(params=["dir", "rest-over-our-adapter"])
async def ns(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncLanceNamespace]:
    if request.param == "dir":
        namespace = lna.connect("dir", {"root": str(tmp_path / "catalog")})
    else:
        uri = request.getfixturevalue("adapter_uri")
        namespace = lna.connect("rest", {"uri": uri, "max_retries": "0"})
    async with namespace:
        yield namespace


def props(response: Any) -> dict[str, str]:
    value = getattr(response, "properties", None)
    return dict(value.additional_properties) if hasattr(value, "additional_properties") else {}


async def write(ns: AsyncLanceNamespace, table: list[str], rows: int = 3) -> str:
    declared = await ns.declare_table({"id": table})
    lance.write_dataset(pa.table({"x": list(range(rows))}), declared.location, mode="overwrite")
    return str(declared.location)


async def all_pages(call: Any, request: dict[str, Any], field: str) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = await call({**request, "page_token": token})
        names.extend(getattr(page, field))
        token = page.page_token
        if not token:
            return names


# -- namespaces ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["Create", "CREATE", "create"])
async def test_create_mode_refuses_an_existing_namespace(
    ns: AsyncLanceNamespace, mode: str
) -> None:
    await ns.create_namespace({"id": ["a"]})
    with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
        await ns.create_namespace({"id": ["a"], "mode": mode})
    assert caught.value.code == 2


@pytest.mark.parametrize("mode", ["ExistOk", "EXIST_OK", "exist_ok"])
async def test_exist_ok_keeps_the_namespace(ns: AsyncLanceNamespace, mode: str) -> None:
    await ns.create_namespace({"id": ["a"], "properties": {"v": "1"}})
    kept = await ns.create_namespace({"id": ["a"], "mode": mode, "properties": {"v": "2"}})
    assert props(kept) == {"v": "1"}


@pytest.mark.parametrize("mode", ["Overwrite", "OVERWRITE", "overwrite"])
async def test_overwrite_empties_the_namespace(ns: AsyncLanceNamespace, mode: str) -> None:
    await ns.create_namespace({"id": ["a"], "properties": {"v": "1"}})
    await write(ns, ["a", "t"])
    await ns.create_namespace({"id": ["a"], "mode": mode, "properties": {"v": "2"}})
    assert props(await ns.describe_namespace({"id": ["a"]})) == {"v": "2"}
    assert (await ns.list_tables({"id": ["a"]})).tables == []


async def test_namespaces_nest_and_need_their_parent(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    await ns.create_namespace({"id": ["a", "b"]})
    assert (await ns.list_namespaces({"id": ["a"]})).namespaces == ["b"]
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.create_namespace({"id": ["missing", "b"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.list_namespaces({"id": ["missing"]})


async def test_listing_paginates_with_small_pages(ns: AsyncLanceNamespace) -> None:
    names = [f"ns{i:03d}" for i in range(37)]
    for name in names:
        await ns.create_namespace({"id": [name]})
    assert await all_pages(ns.list_namespaces, {"limit": 4}, "namespaces") == names
    await ns.create_namespace({"id": ["ns000", "inner"]})
    tables = [f"t{i:03d}" for i in range(23)]
    for table in tables:
        await ns.declare_table({"id": ["ns000", table]})
    found = await all_pages(ns.list_tables, {"id": ["ns000"], "limit": 5}, "tables")
    assert found == tables


async def test_root_namespace_always_exists(ns: AsyncLanceNamespace) -> None:
    await ns.namespace_exists({"id": []})
    await ns.describe_namespace({"id": []})
    with pytest.raises(errors.InvalidInputError):
        await ns.drop_namespace({"id": []})


async def test_drop_modes_and_behaviors(ns: AsyncLanceNamespace) -> None:
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.drop_namespace({"id": ["ghost"]})
    await ns.drop_namespace({"id": ["ghost"], "mode": "SKIP"})
    await ns.create_namespace({"id": ["a"]})
    await ns.create_namespace({"id": ["a", "b"]})
    location = await write(ns, ["a", "b", "t"])
    with pytest.raises(errors.NamespaceNotEmptyError) as caught:
        await ns.drop_namespace({"id": ["a"], "behavior": "Restrict"})
    assert caught.value.code == 3
    await ns.drop_namespace({"id": ["a"], "behavior": "cascade"})
    assert (await ns.list_namespaces()).namespaces == []
    assert not Path(location.removeprefix("file://")).exists()


# -- tables -----------------------------------------------------------------------------


async def test_declare_describe_exists(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    declared = await ns.declare_table({"id": ["a", "t"]})
    await ns.table_exists({"id": ["a", "t"]})
    described = await ns.describe_table({"id": ["a", "t"], "check_declared": True})
    assert described.location == declared.location
    assert described.is_only_declared is True
    with pytest.raises(errors.TableAlreadyExistsError) as caught:
        await ns.declare_table({"id": ["a", "t"]})
    assert caught.value.code == 5
    with pytest.raises(errors.NamespaceNotFoundError):
        await ns.declare_table({"id": ["ghost", "t"]})


async def test_detailed_describe_reads_the_table(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    location = await write(ns, ["a", "t"], rows=4)
    lance.write_dataset(pa.table({"x": [9]}), location, mode="append")
    described = await ns.describe_table({"id": ["a", "t"], "load_detailed_metadata": True})
    assert described.version == 2
    assert described.stats.num_fragments == 2
    assert [f.name for f in described.schema.fields] == ["x"]
    old = await ns.describe_table({"id": ["a", "t"], "version": 1, "load_detailed_metadata": True})
    assert old.version == 1
    with pytest.raises(errors.TableVersionNotFoundError) as caught:
        await ns.describe_table({"id": ["a", "t"], "version": 77})
    assert caught.value.code == 11


async def test_missing_tables_are_not_found(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    for call in (ns.describe_table, ns.table_exists, ns.drop_table, ns.deregister_table):
        with pytest.raises(errors.TableNotFoundError) as caught:
            await call({"id": ["a", "ghost"]})
        assert caught.value.code == 4


async def test_deregister_then_register_keeps_the_data(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    location = await write(ns, ["a", "t"], rows=5)
    deregistered = await ns.deregister_table({"id": ["a", "t"]})
    assert deregistered.location == location
    with pytest.raises(errors.TableNotFoundError):
        await ns.table_exists({"id": ["a", "t"]})
    await ns.register_table({"id": ["a", "again"], "location": location})
    again = await ns.describe_table({"id": ["a", "again"], "load_detailed_metadata": True})
    assert again.location == location
    assert lance.dataset(location).count_rows() == 5
    with pytest.raises(errors.TableAlreadyExistsError):
        await ns.register_table({"id": ["a", "again"], "location": location})


async def test_drop_table_deletes_its_data(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    location = await write(ns, ["a", "t"])
    await ns.drop_table({"id": ["a", "t"]})
    assert not Path(location.removeprefix("file://")).exists()


async def test_rename_moves_a_table_with_its_data(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    await ns.create_namespace({"id": ["b"]})
    location = await write(ns, ["a", "t"], rows=2)
    await ns.rename_table({"id": ["a", "t"], "new_table_name": "u", "new_namespace_id": ["b"]})
    assert (await ns.list_tables({"id": ["b"]})).tables == ["u"]
    assert (await ns.describe_table({"id": ["b", "u"]})).location == location
    await write(ns, ["a", "x"])
    with pytest.raises(errors.TableAlreadyExistsError):
        await ns.rename_table({"id": ["a", "x"], "new_table_name": "u", "new_namespace_id": ["b"]})


async def test_versions_and_restore(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    location = await write(ns, ["a", "t"], rows=3)
    lance.write_dataset(pa.table({"x": [1]}), location, mode="overwrite")
    listed = await ns.list_table_versions({"id": ["a", "t"], "descending": True})
    assert [v.version for v in listed.versions] == [2, 1]
    await ns.restore_table({"id": ["a", "t"], "version": 1})
    assert lance.dataset(location).count_rows() == 3


async def test_list_all_tables_spans_the_tree(ns: AsyncLanceNamespace) -> None:
    await ns.create_namespace({"id": ["a"]})
    await ns.create_namespace({"id": ["a", "b"]})
    await ns.declare_table({"id": ["a", "t"]})
    await ns.declare_table({"id": ["a", "b", "u"]})
    assert (await ns.list_all_tables()).tables == ["a$b$u", "a$t"]
    found = sorted([t.id async for t in lna.crawl(ns, concurrency=4, page_size=1)])
    assert found == [("a", "b", "u"), ("a", "t")]


@pytest.mark.parametrize("name", ["données 2026", "表", "with space", "émoji 🚀"])
async def test_unicode_and_spaces_in_names(ns: AsyncLanceNamespace, name: str) -> None:
    await ns.create_namespace({"id": [name]})
    await ns.declare_table({"id": [name, name]})
    assert (await ns.list_namespaces()).namespaces == [name]
    assert (await ns.list_tables({"id": [name]})).tables == [name]
    await ns.table_exists({"id": [name, name]})


@pytest.mark.parametrize("bad", ["", "a$b", "bell\x07"])
async def test_bad_names_are_invalid_input(ns: AsyncLanceNamespace, bad: str) -> None:
    with pytest.raises(errors.InvalidInputError) as caught:
        await ns.create_namespace({"id": [bad]})
    assert caught.value.code == 13
    assert (await ns.list_namespaces()).namespaces == []


async def test_bad_modes_are_invalid_input(ns: AsyncLanceNamespace) -> None:
    with pytest.raises(errors.InvalidInputError):
        await ns.create_namespace({"id": ["a"], "mode": "Sometimes"})
    await ns.create_namespace({"id": ["a"]})
    with pytest.raises(errors.InvalidInputError):
        await ns.drop_namespace({"id": ["a"], "behavior": "Explode"})
    await ns.namespace_exists({"id": ["a"]})
