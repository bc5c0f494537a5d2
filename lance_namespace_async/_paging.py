"""Pagination over sorted names, for backends whose catalog returns everything.

The page token is the last name of the previous page (exclusive start), so a
listing stays correct when names are added or removed between pages.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import InvalidInputError

__all__ = ["check_limit", "page_of", "token_of"]


def token_of(value: Any) -> str | None:
    """A request's page token; null, missing (UNSET) and empty all mean "start"."""
    if value is None or not isinstance(value, str) or value == "":
        return None
    return value


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
