"""Pagination: pages over sorted names, and following a catalog's pages safely.

For backends whose catalog returns everything, the page token is the last name of
the previous page (exclusive start), so a listing stays correct when names are
added or removed between pages.

Following another catalog's pages (a backend reading every page, the crawler, the
CLI), :class:`PageTrail` ends the listing with ``InternalError`` when the catalog
hands out a token it already gave in that listing: answered in good faith or not,
such a token sends the walk round the same pages for ever.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import InternalError, InvalidInputError

__all__ = ["PageTrail", "check_limit", "page_of", "token_of"]


def token_of(value: Any) -> str | None:
    """A request's page token; null, missing (UNSET) and empty all mean "start"."""
    if value is None or not isinstance(value, str) or value == "":
        return None
    return value


class PageTrail:
    """The page tokens one listing has followed, so a catalog cannot make it endless.

    Each call of a listing has its own deadline, but a listing is as many calls as the
    catalog says it has pages: a token given twice (the same page again, or a cycle of
    pages) would repeat them until the caller gives up, and a backend collecting every
    page would hold ever more of them. Tokens are opaque and may encode server state,
    so the error names the listing and the page, never the token.
    """

    __slots__ = ("_pages", "_seen", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._seen: set[str] = set()
        self._pages = 0

    def follow(self, token: Any) -> str | None:
        """``token`` (a next-page token as the catalog's JSON has it; None or "" on the
        last page) if the listing may go on to it, else ``InternalError``."""
        self._pages += 1
        if token is None or token == "":
            return None
        if not isinstance(token, str):
            raise InternalError(f"{self._what}: the catalog answered a malformed page token")
        if token in self._seen:
            raise InternalError(
                f"{self._what}: page {self._pages} of the listing named a page token the "
                "catalog had already given in it (its pages would never end)"
            )
        self._seen.add(token)
        return token


def check_limit(value: Any) -> int | None:
    """A request's page size: ``None`` for no limit, else an integer >= 1."""
    if value is None or type(value).__name__ == "Unset":
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"limit must be an integer, got {value!r}")
    if value < 1:
        raise InvalidInputError(f"limit must be >= 1, got {value}")
    return value


def page_of(names: Iterable[str], page_token: Any, limit: Any) -> tuple[list[str], str | None]:
    """One page of ``names`` (sorted here) and the token of the next page."""
    start = token_of(page_token)
    size = check_limit(limit)
    ordered = sorted(set(names))
    if start is not None:
        ordered = [n for n in ordered if n > start]
    if size is None or len(ordered) <= size:
        return ordered, None
    page = ordered[:size]
    return page, page[-1]
