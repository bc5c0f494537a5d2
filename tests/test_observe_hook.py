"""The one backend-call hook (``_core/observe.py``): every backend's calls go through it.

A listener registered with ``observe.add_listener`` (what the server's metrics and spans
are) records what it is told while real backends work: the directory backend on a temp
directory (pylance), the glue backend on moto's Glue server (tests/glue_fixtures.py), and
the iceberg backend on the Iceberg REST look-alike (tests/iceberg_rest_server.py, pyiceberg
underneath), and the hive backend on the session's Hive Metastore 2.3 (conftest's
``hive_metastores``, the JVM the hive suite shares).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from glue_fixtures import REGION, moto_glue, use_fake_aws_env
from hive_metastore import Metastore
from iceberg_rest_server import iceberg_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core import observe


class Recorded:
    """A listener keeping (backend, kind, name, error type or None) per ended call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, str | None]] = []
        self.refusals: list[tuple[int, str]] = []

    def start(self, backend: str, kind: str, name: str, detail: str | None) -> Any:
        return backend, kind, name

    def end(self, token: Any, error: BaseException | None) -> None:
        self.calls.append((*token, None if error is None else type(error).__name__))

    def headers(self, token: Any, carrier: dict[str, str]) -> None:
        carrier["x-observed"] = token[2]

    def refused(self, status: int, limit: str) -> None:
        self.refusals.append((status, limit))

    def kinds(self) -> set[tuple[str, str]]:
        return {(backend, kind) for backend, kind, _, _ in self.calls}


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    listener = Recorded()
    observe.add_listener(listener)
    try:
        yield listener
    finally:
        observe.remove_listener(listener)


def test_nothing_listening_costs_one_shared_object() -> None:
    first = observe.backend_call("dir", "storage", "a")
    assert first is observe.backend_call("glue", "glue", "b")  # nothing made per call
    with first as call:
        assert call.headers() == {}


def test_the_directory_backend_s_pylance_calls(tmp_path: Path, recorded: Recorded) -> None:
    with lna.connect_sync("dir", {"root": str(tmp_path)}) as ns:
        ns.create_namespace({"id": ["n"]})
        ns.create_table({"id": ["n", "t"]}, pa.table({"x": [1, 2]}))
        recorded.calls.clear()
        ns.describe_table({"id": ["n", "t"]})
        assert recorded.kinds() == {("dir", "storage")}
        assert all(error is None for *_, error in recorded.calls)


async def test_glue_calls_are_named_by_their_action(
    tmp_path: Path, recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_env(monkeypatch)
    with moto_glue() as endpoint:
        properties = {
            "endpoint": endpoint,
            "region": REGION,
            "root": str(tmp_path),
            "child_catalogs": "false",
        }
        async with lna.connect("glue", properties) as ns:
            await ns.create_namespace({"id": ["sales"]})
            with pytest.raises(errors.NamespaceNotFoundError):
                await ns.describe_namespace({"id": ["missing"]})
    glue = [(name, error) for backend, kind, name, error in recorded.calls if kind == "glue"]
    assert ("create_database", None) in glue
    assert ("get_database", "NamespaceNotFoundError") in glue  # a failed call ends as one
    assert {backend for backend, *_ in recorded.calls} == {"glue"}


async def test_iceberg_catalog_http_calls_are_observed_once_each(
    tmp_path: Path, recorded: Recorded
) -> None:
    with iceberg_catalog(tmp_path / "iceberg") as catalog:
        catalog.rest_client("wh").create_namespace("db")
        async with lna.connect("iceberg", {"endpoint": catalog.uri, "root": str(tmp_path)}) as ns:
            await ns.namespace_exists({"id": ["wh", "db"]})
    # the calls sent the listener's header along (the traceparent's path), unrefused
    assert ("iceberg", "catalog_http") in recorded.kinds()
    assert all(error is None for *_, error in recorded.calls)


async def test_hive_metastore_calls_are_thrift_calls(
    tmp_path: Path, recorded: Recorded, hive_metastores: Callable[[str], Metastore]
) -> None:
    metastore = hive_metastores("2.3")
    name = f"obs_{uuid.uuid4().hex[:10]}"
    async with lna.connect("hive", {"uri": metastore.uri, "root": str(tmp_path)}) as ns:
        await ns.create_namespace({"id": [name]})
        recorded.calls.clear()
        await ns.describe_namespace({"id": [name]})
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.describe_namespace({"id": [f"{name}_missing"]})
        await ns.drop_namespace({"id": [name]})
    thrift = [error for backend, kind, _, error in recorded.calls if kind == "thrift"]
    assert {backend for backend, *_ in recorded.calls} == {"hive"}
    assert None in thrift
    assert "NamespaceNotFoundError" in thrift  # the metastore's NoSuchObject, typed, ends it
