"""The walk of a catalog's hierarchy: ``crawl()`` and the catalogs' ListAllTables.

``crawl()`` yields every table below a namespace, concurrently, in bounded memory
(users import it from the package, through :mod:`.._facade.crawl`).
:class:`ListAllTablesByWalking` gives a backend whose catalog has no call for every
table (iceberg, unity, glue, hive) a ListAllTables made of the same walk: one
implementation, with the same bounded concurrency and the same guards against
endless pages.

Listing a catalog is a tree walk whose cost is round trips, so the walk runs
``concurrency`` calls at once. Memory stays flat however many tables there are:
listings go page by page, describing the tables of a page is preferred over
listing the next page, and results leave through a bounded channel, so a slow
consumer pauses the workers instead of letting results pile up. What does grow is
the queue of namespaces found but not yet listed: the walk is breadth first, so
that reaches about the width of the tree's widest levels (a small job per namespace).

Use ``contextlib.aclosing`` when you may stop early, so the workers are
cancelled in your task::

    async with aclosing(crawl(ns, describe=True)) as tables:
        async for table in tables:
            ...
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from anyio.streams.memory import MemoryObjectSendStream

from .. import errors
from .base import AsyncLanceNamespace
from .identifiers import Identifier, join_identifier, validate_identifier
from .paging import PageTrail, check_limit, page_of, token_of

if TYPE_CHECKING:
    from ..models import DescribeTableResponse, ListAllTablesRequest, ListTablesResponse

__all__ = [
    "CrawledTable",
    "ListAllTablesByWalking",
    "crawl",
    "iter_namespaces",
    "iter_tables",
    "list_all_tables",
]


@attrs.frozen
class CrawledTable:
    """One table found by the crawler; ``description`` is set with ``describe=True``."""

    id: Identifier
    description: DescribeTableResponse | None = None

    @property
    def namespace(self) -> Identifier:
        return self.id[:-1]

    @property
    def name(self) -> str:
        return self.id[-1]


_Job = Callable[[], Awaitable[None]]


class _Walk:
    """The jobs of one crawl and the ``concurrency`` workers that run them.

    Every worker runs on one event loop, so the queues need no lock: a lock's acquire
    is a checkpoint, and taking one around every job cost the crawl several trips
    through the event loop per table. Idle workers wait on an event that a push (or
    the end of the walk) sets; the first to wake replaces it for the next wait.
    """

    def __init__(
        self,
        ns: AsyncLanceNamespace,
        send: MemoryObjectSendStream[CrawledTable] | list[CrawledTable],
        *,
        describe: bool,
        detailed: bool,
        page_size: int | None,
        skip_declared: bool = False,
    ) -> None:
        self.ns = ns
        self.send = send
        self.describe = describe or detailed or skip_declared
        self.detailed = detailed
        self.skip_declared = skip_declared
        self.page_size = page_size
        self.tables: deque[_Job] = deque()
        self.listings: deque[_Job] = deque()
        self.active = 0  # jobs running (each may push more)
        self.waiting = 0  # workers waiting for a job
        self.more = anyio.Event()

    def push(self, job: _Job, *, urgent: bool) -> None:
        (self.tables if urgent else self.listings).append(job)
        if self.waiting:
            self.more.set()

    async def worker(self) -> None:
        while True:
            while not (self.tables or self.listings):
                if self.active == 0:  # nothing queued, nothing running to queue more
                    self.more.set()  # release the other waiting workers
                    return
                more = self.more
                self.waiting += 1
                try:
                    await more.wait()
                finally:
                    self.waiting -= 1
                if self.more is more:
                    self.more = anyio.Event()
            job = self.tables.popleft() if self.tables else self.listings.popleft()
            self.active += 1
            try:
                await job()
            finally:
                self.active -= 1  # the loop above then sees the end of the walk, if it is

    async def emit(self, table: CrawledTable) -> None:
        """Hand a table to the consumer; wait only when its buffer is full. A list
        (:func:`collect`) takes every table at once: no trip through the event loop."""
        if isinstance(self.send, list):
            self.send.append(table)
            return
        try:
            self.send.send_nowait(table)
        except anyio.WouldBlock:
            await self.send.send(table)

    def start(self, root: Identifier) -> None:
        self.push(functools.partial(self.list_namespaces, root, None, True), urgent=False)
        self.push(functools.partial(self.list_tables, root, None, True), urgent=False)

    def next_page(
        self,
        listing: Callable[..., Awaitable[None]],
        what: str,
        where: Identifier,
        response: Any,
        is_root: bool,
        trail: PageTrail | None,
    ) -> None:
        """Queue the listing's next page, if the answer names one it has not given yet."""
        next_token = token_of(response.page_token)
        if next_token:
            trail = trail or PageTrail(f"{what} {list(where)}")
            trail.follow(next_token)
            self.push(functools.partial(listing, where, next_token, is_root, trail), urgent=False)

    async def list_namespaces(
        self, parent: Identifier, token: str | None, is_root: bool, trail: PageTrail | None = None
    ) -> None:
        request: dict[str, object] = {"id": list(parent)}
        if token:
            request["page_token"] = token
        if self.page_size:
            request["limit"] = self.page_size
        try:
            response = await self.ns.list_namespaces(request)  # type: ignore[arg-type]
        except errors.UnsupportedOperationError:
            return
        except errors.NamespaceNotFoundError:
            if is_root:
                raise
            return  # dropped while we walked
        for name in response.namespaces:
            child: Identifier = (*parent, name)
            self.push(functools.partial(self.list_namespaces, child, None, False), urgent=False)
            self.push(functools.partial(self.list_tables, child, None, False), urgent=False)
        self.next_page(self.list_namespaces, "ListNamespaces", parent, response, is_root, trail)

    async def list_tables(
        self,
        namespace: Identifier,
        token: str | None,
        is_root: bool,
        trail: PageTrail | None = None,
    ) -> None:
        request: dict[str, object] = {"id": list(namespace)}
        if token:
            request["page_token"] = token
        if self.page_size:
            request["limit"] = self.page_size
        try:
            response = await self.ns.list_tables(request)  # type: ignore[arg-type]
        except errors.UnsupportedOperationError:
            return
        except errors.NamespaceNotFoundError:
            if is_root:
                raise
            return
        self.next_page(self.list_tables, "ListTables", namespace, response, is_root, trail)
        for name in response.tables:
            table: Identifier = (*namespace, name)
            if self.describe:
                self.push(functools.partial(self.describe_one, table), urgent=True)
            else:
                await self.emit(CrawledTable(table))

    async def describe_one(self, table: Identifier) -> None:
        request: dict[str, object] = {"id": list(table)}
        if self.detailed:
            request["load_detailed_metadata"] = True
        if self.skip_declared:
            request["check_declared"] = True
        try:
            description = await self.ns.describe_table(request)  # type: ignore[arg-type]
        except errors.TableNotFoundError:
            return  # dropped while we walked
        if self.skip_declared and description.is_only_declared is True:
            return
        await self.emit(CrawledTable(table, description))


async def crawl(
    ns: AsyncLanceNamespace,
    root: Sequence[str] = (),
    *,
    concurrency: int = 64,
    describe: bool = False,
    detailed: bool = False,
    page_size: int | None = 1000,
    skip_declared: bool = False,
) -> AsyncIterator[CrawledTable]:
    """Yield every table under ``root``, following child namespaces and every page.

    ``describe`` attaches each table's DescribeTable answer; ``detailed`` asks for
    ``load_detailed_metadata`` (version, schema, stats) in the same call;
    ``skip_declared`` leaves out tables that are only declared (no data yet), which
    costs a DescribeTable (``check_declared``) per table.

    Tables come in no particular order. Objects dropped while the walk is under
    way are skipped; a missing ``root`` raises ``NamespaceNotFoundError``.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise errors.InvalidInputError("concurrency must be an integer >= 1")
    if page_size is not None and (isinstance(page_size, bool) or page_size < 1):
        raise errors.InvalidInputError("page_size must be None or an integer >= 1")
    start = validate_identifier(list(root), delimiter="", what="crawl root")
    send, receive = anyio.create_memory_object_stream[CrawledTable](max_buffer_size=concurrency)
    walk = _Walk(
        ns,
        send,
        describe=describe,
        detailed=detailed,
        page_size=page_size,
        skip_declared=skip_declared,
    )

    async def run() -> None:
        async with send:
            walk.start(start)
            async with anyio.create_task_group() as workers:
                for _ in range(concurrency):
                    workers.start_soon(walk.worker)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            try:
                async with receive:
                    async for table in receive:
                        yield table
            finally:
                group.cancel_scope.cancel()
    except BaseExceptionGroup as group_error:
        raise _single(group_error) from None


async def collect(
    ns: AsyncLanceNamespace,
    root: Identifier,
    *,
    concurrency: int,
    page_size: int | None,
    skip_declared: bool,
) -> list[CrawledTable]:
    """Every table under ``root``, as :func:`crawl` finds them, in one list: for a
    caller that needs them all anyway (ListAllTables sorts them), without the
    channel that keeps :func:`crawl`'s memory flat (a trip through the event loop per
    table, most of the walk's own cost)."""
    found: list[CrawledTable] = []
    walk = _Walk(
        ns,
        found,
        describe=False,
        detailed=False,
        page_size=page_size,
        skip_declared=skip_declared,
    )
    walk.start(root)
    try:
        async with anyio.create_task_group() as workers:
            for _ in range(concurrency):
                workers.start_soon(walk.worker)
    except BaseExceptionGroup as group_error:
        raise _single(group_error) from None
    return found


#: calls in flight while a backend walks its catalog for ListAllTables: enough to hide
#: round trips, few enough that one request cannot take a catalog's whole connection pool
WALK_CONCURRENCY = 16


async def list_all_tables(
    ns: AsyncLanceNamespace,
    request: ListAllTablesRequest,
    *,
    roots: Sequence[Identifier] = ((),),
    concurrency: int = WALK_CONCURRENCY,
) -> ListTablesResponse:
    """ListAllTables as the directory backend answers it, by walking ``ns`` from ``roots``.

    Every table of every namespace below the roots (the catalog's root by default), as
    its string identifier joined by the request's ``delimiter`` (the backend's when
    missing or empty), sorted, paged by ``limit`` and ``page_token`` (the last name of
    the previous page) over the whole list. ``include_declared=false`` leaves out
    tables without data. Every page walks the catalog again: the catalogs have no
    cursor over all their tables, and a fresh walk never lists a table dropped before
    it started.
    """
    from ..models import ListTablesResponse

    body = request.to_dict()
    check_limit(body.get("limit"))  # a bad limit is refused before any call
    delimiter = body.get("delimiter") or ns.delimiter
    if not isinstance(delimiter, str):
        raise errors.InvalidInputError("delimiter must be a string")
    skip_declared = body.get("include_declared", True) is False
    found: list[str] = []
    for root in roots:
        tables = await collect(
            ns, root, concurrency=concurrency, page_size=None, skip_declared=skip_declared
        )
        found.extend(join_identifier(table.id, delimiter) for table in tables)
    page, token = page_of(found, body.get("page_token"), body.get("limit"))
    return ListTablesResponse.from_dict({"tables": page, "page_token": token})


class ListAllTablesByWalking(AsyncLanceNamespace):
    """ListAllTables for a backend whose catalog lists one namespace at a time."""

    def _all_tables_roots(self) -> Sequence[Identifier]:
        """Where the walk starts: the root, unless the root cannot be listed (Iceberg's
        warehouses); an override may raise ``UnsupportedOperationError`` with the reason."""
        return ((),)

    async def _list_all_tables(self, request: ListAllTablesRequest) -> ListTablesResponse:
        concurrency = getattr(self.config, "list_concurrency", WALK_CONCURRENCY)
        return await list_all_tables(
            self, request, roots=self._all_tables_roots(), concurrency=concurrency
        )


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _single(group_error: BaseExceptionGroup[BaseException]) -> BaseException:
    """Callers see the error that stopped the walk, not the task group's wrapper."""
    leaves = _leaves(group_error)
    for leaf in leaves:
        if isinstance(leaf, GeneratorExit):
            return leaf  # the consumer closed the iterator
    cancelled = anyio.get_cancelled_exc_class()
    real = [leaf for leaf in leaves if not isinstance(leaf, cancelled)]
    # concurrent calls often fail for one cause (a missing root): report the first
    return real[0] if real else group_error


async def _iter_pages(
    call: Any, what: str, parent: Sequence[str], field: str, page_size: int | None
) -> AsyncIterator[str]:
    trail = PageTrail(f"{what} {list(parent)}")
    token: str | None = None
    while True:
        request: dict[str, object] = {"id": list(parent), "page_token": token}
        if page_size:
            request["limit"] = page_size
        response = await call(request)
        for name in getattr(response, field):
            yield name
        token = trail.follow(token_of(response.page_token))
        if token is None:
            return


def iter_namespaces(
    ns: AsyncLanceNamespace, parent: Sequence[str] = (), *, page_size: int | None = 1000
) -> AsyncIterator[str]:
    """Every child namespace name of ``parent``, following every page."""
    return _iter_pages(ns.list_namespaces, "ListNamespaces", parent, "namespaces", page_size)


def iter_tables(
    ns: AsyncLanceNamespace, namespace: Sequence[str] = (), *, page_size: int | None = 1000
) -> AsyncIterator[str]:
    """Every table name of ``namespace``, following every page."""
    return _iter_pages(ns.list_tables, "ListTables", namespace, "tables", page_size)
