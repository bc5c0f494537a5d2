"""Keep a namespace drop and a creation inside that namespace apart, in-process.

Some catalogs cannot make "drop this namespace only if it is empty" atomic with
respect to a concurrent creation inside it:

* pylance's directory manifest commits a DeclareTable's insert and a
  DropNamespace's delete as two separate, non-conflicting transactions, so a
  drop that checked "empty" can remove a namespace a declare has just entered;
* AWS Glue's DeleteDatabase cascades, so the backend checks "empty" itself, and a
  table created between that check and the delete is deleted with the database.

Either way a successful declare can end up in a dropped namespace (an orphan
table, or one silently gone). :class:`NamespaceGuard` closes the window for the
calls of one namespace instance: creations *fill* a namespace (any number at
once), drops *empty* it (alone, and only while nothing fills it or anything
below it). Other processes sharing the same catalog are not covered; no lock
here can reach them.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from .identifiers import Identifier

__all__ = ["NamespaceGuard"]


class NamespaceGuard:
    """Shared "filling" of a namespace versus exclusive "dropping" of it (or a parent)."""

    def __init__(self) -> None:
        self._changed = anyio.Condition()
        self._filling: collections.Counter[Identifier] = collections.Counter()
        self._dropping: set[Identifier] = set()

    def _fill_blocked(self, namespace: Identifier) -> bool:
        # a drop of the namespace or of any parent (Cascade) removes what we create
        return any(namespace[: len(d)] == d for d in self._dropping)

    def _drop_blocked(self, namespace: Identifier) -> bool:
        size = len(namespace)
        return any(f[:size] == namespace for f in self._filling) or any(
            d[:size] == namespace or namespace[: len(d)] == d for d in self._dropping
        )

    @asynccontextmanager
    async def filling(self, namespace: Identifier) -> AsyncIterator[None]:
        """Held while creating something directly inside ``namespace``."""
        async with self._changed:
            while self._fill_blocked(namespace):
                await self._changed.wait()
            self._filling[namespace] += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._filling[namespace] -= 1
                    if not self._filling[namespace]:
                        del self._filling[namespace]
                    self._changed.notify_all()

    @asynccontextmanager
    async def dropping(self, namespace: Identifier) -> AsyncIterator[None]:
        """Held while checking ``namespace`` is empty (or emptying it) and dropping it."""
        async with self._changed:
            while self._drop_blocked(namespace):
                await self._changed.wait()
            self._dropping.add(namespace)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._dropping.discard(namespace)
                    self._changed.notify_all()
