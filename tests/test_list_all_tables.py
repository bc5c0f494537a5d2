"""ListAllTables on the catalog backends: the walk of ``_core.walk`` (no server here).

The walk must answer exactly what the directory backend answers (its semantics are the
reference): checked by walking a real directory catalog and comparing with dir's own
ListAllTables, request by request. The bounded concurrency is observed on the in-memory
catalog of test_crawl. The kit's ListAllTables scenarios run the walk on every real
catalog server (tests/test_kit.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from test_crawl import SyntheticCatalog, wide_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.config import BackendConfig
from lance_namespace_async._core.registry import resolve_impl
from lance_namespace_async._core.walk import ListAllTablesByWalking, list_all_tables
from lance_namespace_async.models import ListAllTablesRequest


def test_every_backend_lists_list_all_tables() -> None:
    for impl in ("dir", "rest", "iceberg", "unity", "glue", "hive"):
        assert "list_all_tables" in resolve_impl(impl).list_operations(), impl


REQUESTS: list[dict[str, Any]] = [
    {},
    {"delimiter": "/"},
    {"delimiter": ""},
    {"include_declared": False},
    {"include_declared": True, "limit": 2},
    {"limit": 3, "page_token": "a$b$deep"},
    {"limit": 1, "page_token": "zzz"},
    {"delimiter": ".", "include_declared": False, "limit": 1},
]


@pytest.mark.parametrize("request_body", REQUESTS, ids=[str(r) for r in REQUESTS])
async def test_the_walk_answers_what_dir_answers(tmp_path: Path, request_body: dict[str, Any]):
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        for namespace in (["a"], ["a", "b"], ["empty"], ["z"]):
            await ns.create_namespace({"id": namespace})
        for table in (["top"], ["a", "t1"], ["a", "t2"], ["a", "b", "deep"], ["z", "w"]):
            await ns.declare_table({"id": table})
        for table in (["a", "t2"], ["z", "w"]):  # these two get data
            location = (await ns.describe_table({"id": table})).location
            lance.write_dataset(pa.table({"x": [1]}), location, mode="overwrite")
        request = ListAllTablesRequest.from_dict(request_body)
        walked = await list_all_tables(ns, request, concurrency=3)
        assert walked.to_dict() == (await ns.list_all_tables(request_body)).to_dict()


class WalkedCatalog(ListAllTablesByWalking, SyntheticCatalog):
    pass


async def test_the_walk_pages_a_sorted_list_with_bounded_concurrency() -> None:
    tree = wide_catalog(namespaces=40, tables=9).tree
    catalog = WalkedCatalog(tree)
    catalog.config = BackendConfig.from_properties({})
    pages: list[list[str]] = []
    token: str | None = None
    while True:
        answer = await catalog.list_all_tables({"limit": 100, "page_token": token})
        pages.append(list(answer.tables))
        token = answer.page_token if isinstance(answer.page_token, str) else None
        if not token:
            break
    listed = [name for page in pages for name in page]
    assert [len(page) for page in pages] == [100, 100, 100, 61]
    assert listed == sorted(listed)
    assert len(set(listed)) == 40 * 9 + 1
    assert "root_table" in listed
    assert "ns7$t3" in listed
    assert 1 < catalog.peak <= 16  # the walk's concurrency, never more


async def test_a_bad_request_is_refused_before_any_call() -> None:
    catalog = WalkedCatalog(wide_catalog(namespaces=2, tables=2).tree)
    catalog.config = BackendConfig.from_properties({})
    with pytest.raises(errors.InvalidInputError):
        await catalog.list_all_tables({"limit": 0})
    assert catalog.calls == 0


async def test_iceberg_needs_the_warehouses_it_walks() -> None:
    """The Iceberg REST protocol cannot list warehouses: without ``warehouses`` the
    operation is unsupported (code 0) and says why, before any request."""
    ns = lna.connect("iceberg", {"endpoint": "http://127.0.0.1:9", "root": "/tmp/x"})
    with pytest.raises(errors.UnsupportedOperationError) as refused:
        await ns.list_all_tables({})
    assert refused.value.code == 0
    assert "'warehouses' property" in str(refused.value)
    await ns.aclose()
