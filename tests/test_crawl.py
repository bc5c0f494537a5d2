"""crawl(): every table under a root, every page, bounded concurrency and memory."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import lance
import pyarrow as pa
import pytest

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.base import AsyncLanceNamespace
from lance_namespace_async._core.paging import page_of
from lance_namespace_async.directory import DirectoryNamespace
from lance_namespace_async.models import (
    DescribeTableResponse,
    ListNamespacesResponse,
    ListTablesResponse,
)


class SyntheticCatalog(AsyncLanceNamespace):
    """An in-memory catalog that counts calls in flight, to observe the crawler."""

    impl_name = "synthetic"

    def __init__(self, tree: dict[tuple[str, ...], tuple[list[str], list[str]]]) -> None:
        self.tree = tree
        self.in_flight = 0
        self.peak = 0
        self.calls = 0

    async def _enter(self) -> None:
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await anyio.sleep(0.001)
        self.in_flight -= 1

    def _node(self, request: Any) -> tuple[list[str], list[str]]:
        key = tuple(request.id or ())
        if key not in self.tree:
            raise errors.NamespaceNotFoundError(f"namespace {key} not found")
        return self.tree[key]

    async def _list_namespaces(self, request: Any) -> ListNamespacesResponse:
        await self._enter()
        page, token = page_of(self._node(request)[0], request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    async def _list_tables(self, request: Any) -> ListTablesResponse:
        await self._enter()
        page, token = page_of(self._node(request)[1], request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)


def wide_catalog(namespaces: int, tables: int) -> SyntheticCatalog:
    tree: dict[tuple[str, ...], tuple[list[str], list[str]]] = {
        (): ([f"ns{i}" for i in range(namespaces)], ["root_table"])
    }
    for i in range(namespaces):
        tree[(f"ns{i}",)] = ([], [f"t{j}" for j in range(tables)])
    return SyntheticCatalog(tree)


async def test_crawl_finds_every_table_on_a_real_directory_catalog(root: Path) -> None:
    async with lna.connect("dir", {"root": str(root)}) as ns:
        assert isinstance(ns, DirectoryNamespace)
        await ns.create_namespace({"id": ["a"]})
        await ns.create_namespace({"id": ["a", "b"]})
        await ns.create_namespace({"id": ["empty"]})
        expected = {("top",), ("a", "t1"), ("a", "t2"), ("a", "b", "deep")}
        for table in expected:
            await ns.declare_table({"id": list(table)})
        found = {t.id async for t in lna.crawl(ns, page_size=1)}
        assert found == expected
        described = [t async for t in lna.crawl(ns, root=["a"], describe=True)]
        assert {t.id for t in described} == {("a", "t1"), ("a", "t2"), ("a", "b", "deep")}
        assert all(t.description is not None and t.description.location for t in described)
        await ns.create_namespace({"id": ["real"]})
        declared = await ns.declare_table({"id": ["real", "data"]})
        lance.write_dataset(pa.table({"x": [1, 2]}), declared.location, mode="overwrite")
        [detailed] = [t async for t in lna.crawl(ns, root=["real"], detailed=True)]
        assert detailed.description is not None
        assert detailed.description.version == 1
        assert detailed.description.stats.num_fragments == 1


async def test_crawl_follows_every_page() -> None:
    catalog = wide_catalog(namespaces=7, tables=23)
    found = [t.id async for t in lna.crawl(catalog, page_size=5)]
    assert len(found) == 7 * 23 + 1
    assert len(set(found)) == len(found)


class CyclingPages(SyntheticCatalog):
    """Pages that come round again: after ``cycle`` pages a listing's next token is its
    first one (``cycle=1``: a page names its own token), as a broken or hostile catalog
    could answer."""

    def __init__(self, tree: dict[tuple[str, ...], tuple[list[str], list[str]]], cycle: int):
        super().__init__(tree)
        self.cycle = cycle

    def _next(self, request: Any) -> str:
        at = int(request.page_token or 0)
        return str((at + 1) % self.cycle if self.cycle > 1 else at or 1)

    async def _list_namespaces(self, request: Any) -> ListNamespacesResponse:
        await self._enter()
        names = self._node(request)[0]
        return ListNamespacesResponse(namespaces=names, page_token=self._next(request))

    async def _list_tables(self, request: Any) -> ListTablesResponse:
        await self._enter()
        names = self._node(request)[1]
        return ListTablesResponse(tables=names, page_token=self._next(request))


@pytest.mark.parametrize("cycle", [1, 3])
async def test_a_catalog_whose_pages_come_round_again_ends_the_crawl(cycle: int) -> None:
    """Each call has a deadline, a listing of endless pages would not: the page that names
    a token the listing already followed ends the crawl (and the page walkers) with
    InternalError, before its listing is asked again."""
    catalog = CyclingPages({(): (["ns"], ["t"]), ("ns",): ([], ["u"])}, cycle)
    with anyio.fail_after(10):
        with pytest.raises(errors.InternalError, match="already given") as caught:
            [t async for t in lna.crawl(catalog, concurrency=4)]
        assert "page " in str(caught.value)
        for walk in (lna.iter_tables(catalog, ["ns"]), lna.iter_namespaces(catalog)):
            with pytest.raises(errors.InternalError, match=f"page {cycle + 1} of the listing"):
                [name async for name in walk]
    assert catalog.calls < 40


async def test_concurrency_is_used_and_bounded() -> None:
    catalog = wide_catalog(namespaces=200, tables=2)
    found = [t async for t in lna.crawl(catalog, concurrency=16)]
    assert len(found) == 401
    assert 8 <= catalog.peak <= 16


async def test_concurrency_one_is_sequential() -> None:
    catalog = wide_catalog(namespaces=20, tables=2)
    assert len([t async for t in lna.crawl(catalog, concurrency=1)]) == 41
    assert catalog.peak == 1


async def test_a_slow_consumer_pauses_the_walk() -> None:
    catalog = wide_catalog(namespaces=100, tables=100)
    async with aclosing(lna.crawl(catalog, concurrency=4, page_size=10)) as tables:
        seen = 0
        async for _ in tables:
            seen += 1
            if seen == 50:
                break
    calls_when_stopped = catalog.calls
    await anyio.sleep(0.05)
    assert catalog.calls == calls_when_stopped, "workers stop when the consumer stops"
    assert calls_when_stopped < 100, "the walk did not run ahead of the consumer"


async def test_missing_root_is_not_found_and_bad_arguments_invalid() -> None:
    catalog = wide_catalog(namespaces=1, tables=1)
    with pytest.raises(errors.NamespaceNotFoundError):
        [t async for t in lna.crawl(catalog, root=["ghost"])]
    for kwargs in ({"concurrency": 0}, {"page_size": 0}, {"root": ["a/b", ""]}):
        with pytest.raises(errors.InvalidInputError):
            [t async for t in lna.crawl(catalog, **kwargs)]  # type: ignore[arg-type]


class BreaksOnOneTable(SyntheticCatalog):
    """Describes every table but ``t1``, whose DescribeTable fails."""

    async def _describe_table(self, request: Any) -> DescribeTableResponse:
        await self._enter()
        if request.id[-1] == "t1":
            raise errors.InternalError("the catalog broke")
        return DescribeTableResponse(location="mem://" + "/".join(request.id))


async def test_a_failure_mid_walk_ends_the_crawl_with_that_error_while_workers_wait() -> None:
    """Most of the 8 workers wait for jobs that never come; the failing describe must
    still end the crawl, with its own error, not leave them (and the caller) waiting."""
    catalog = BreaksOnOneTable({(): (["ns0"], []), ("ns0",): ([], ["t0", "t1", "t2"])})
    with anyio.fail_after(10), pytest.raises(errors.InternalError, match="the catalog broke"):
        [t async for t in lna.crawl(catalog, concurrency=8, describe=True)]
    healthy = BreaksOnOneTable({(): (["ns0"], []), ("ns0",): ([], ["t0", "t2"])})
    with anyio.fail_after(10):
        described = [t async for t in lna.crawl(healthy, concurrency=8, describe=True)]
    assert sorted(t.id for t in described) == [("ns0", "t0"), ("ns0", "t2")]
    assert all(t.description is not None for t in described)


async def test_namespaces_dropped_during_the_walk_are_skipped() -> None:
    catalog = wide_catalog(namespaces=3, tables=2)
    catalog.tree.pop(("ns1",))
    found = {t.id async for t in lna.crawl(catalog)}
    assert ("ns1", "t0") not in found
    assert ("ns0", "t0") in found
    assert ("ns2", "t1") in found


class LazyWideCatalog(AsyncLanceNamespace):
    """Namespaces of generated table names, produced page by page, never all in memory."""

    impl_name = "lazy"

    def __init__(self, namespaces: int, tables: int) -> None:
        self.namespaces = namespaces
        self.tables = tables

    @staticmethod
    def _page(count: int, prefix: str, request: Any) -> tuple[list[str], str | None]:
        start = int(request.page_token) if request.page_token else 0
        size = request.limit or count
        stop = min(count, start + size)
        names = [f"{prefix}{i:07d}" for i in range(start, stop)]
        return names, (str(stop) if stop < count else None)

    async def _list_namespaces(self, request: Any) -> ListNamespacesResponse:
        if request.id:
            return ListNamespacesResponse(namespaces=[])
        names, token = self._page(self.namespaces, "ns", request)
        return ListNamespacesResponse(namespaces=names, page_token=token)

    async def _list_tables(self, request: Any) -> ListTablesResponse:
        if not request.id:
            return ListTablesResponse(tables=[])
        names, token = self._page(self.tables, "t", request)
        return ListTablesResponse(tables=names, page_token=token)


async def crawl_peak_bytes(namespaces: int, tables: int) -> int:
    import tracemalloc

    catalog = LazyWideCatalog(namespaces, tables)
    tracemalloc.start()
    try:
        count = 0
        async for _ in lna.crawl(catalog, concurrency=16, page_size=500):
            count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == namespaces * tables
    return peak


async def test_memory_does_not_grow_with_the_catalog() -> None:
    small = await crawl_peak_bytes(namespaces=4, tables=2_000)
    large = await crawl_peak_bytes(namespaces=20, tables=2_000)
    assert large < small * 1.5 + 256 * 1024, (small, large)
