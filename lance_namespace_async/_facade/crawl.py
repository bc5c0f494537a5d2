"""``crawl()``: every table below a namespace, concurrently, in bounded memory.

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
from .._core.identifiers import Identifier, validate_identifier
from .._core.paging import PageTrail, token_of

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace
    from ..models import DescribeTableResponse

__all__ = ["CrawledTable", "crawl", "iter_namespaces", "iter_tables"]


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
        send: MemoryObjectSendStream[CrawledTable],
        *,
        describe: bool,
        detailed: bool,
        page_size: int | None,
    ) -> None:
        self.ns = ns
        self.send = send
        self.describe = describe or detailed
        self.detailed = detailed
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
        """Hand a table to the consumer; wait only when its buffer is full."""
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
        try:
            request = (
                {"id": list(table), "load_detailed_metadata": True}
                if self.detailed
                else {"id": list(table)}
            )
            description = await self.ns.describe_table(request)  # type: ignore[arg-type]
        except errors.TableNotFoundError:
            return  # dropped while we walked
        await self.emit(CrawledTable(table, description))


async def crawl(
    ns: AsyncLanceNamespace,
    root: Sequence[str] = (),
    *,
    concurrency: int = 64,
    describe: bool = False,
    detailed: bool = False,
    page_size: int | None = 1000,
) -> AsyncIterator[CrawledTable]:
    """Yield every table under ``root``, following child namespaces and every page.

    ``describe`` attaches each table's DescribeTable answer; ``detailed`` asks for
    ``load_detailed_metadata`` (version, schema, stats) in the same call.

    Tables come in no particular order. Objects dropped while the walk is under
    way are skipped; a missing ``root`` raises ``NamespaceNotFoundError``.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise errors.InvalidInputError("concurrency must be an integer >= 1")
    if page_size is not None and (isinstance(page_size, bool) or page_size < 1):
        raise errors.InvalidInputError("page_size must be None or an integer >= 1")
    start = validate_identifier(list(root), delimiter="", what="crawl root")
    send, receive = anyio.create_memory_object_stream[CrawledTable](max_buffer_size=concurrency)
    walk = _Walk(ns, send, describe=describe, detailed=detailed, page_size=page_size)

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
